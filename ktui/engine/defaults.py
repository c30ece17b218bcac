# ---- ktui repro harness: the one set of defaults -------------------------------------------
# Every number the harness, the judge, the runner, the CLI and the app use lives here.
# Stdlib only. MIT license, part of ktui.

# 15: a static finding of severity info (Triton's default TF32) is shown, never a suspicion; the static
# findings read more C++ (pointer tables, who runs the process, stream.query()) and namespace writes;
# 14: the checked wall-clock pass's fingerprints judged with the harness's own tolerance (as the
# comparison is); the compute floor counts the reference's essential FLOPs (operands' and output's
# zeros taken out); values up to 16 GiB pass between the sandboxes (was 2 GiB);
# 13: shape_jitter tells a miss by the kernel's own accuracy (error growing with the size) from a hard-coded size;
# 12: a kernel's own class Model is the candidate where it defines no ModelNew (was a no_model failure);
# 11: reduced_precision screens each float32 input alone (one call each, up to 3): one rounded operand;
# 10: reduced_precision needs evidence of fewer bits (outputs short of mantissa bits, or an input's
# low bits ignored where the reference's are not): an error far above float32's alone is a suspect;
# 9: probes that look only for unearned speed are not run for a kernel clearly slower than the
# reference; repeat-vs-fresh times 5 calls of each kind (was 10) on inputs the reference makes only;
# 8: the checked wall-clock pass keeps every call's output (copies or fingerprints) and the judge
# names the calls it checks only after the pass (the kernel could read them from the request);
# 7: own root per worker, judge-assigned failure kinds, checked samples, random wall outputs;
# 6: the kernel stopped while the reference is timed; 5: stream order; 4: secret input seeds
HARNESS_VERSION = 15

STAGES = ("startup", "build", "reference", "correctness", "timing", "memory", "launches", "checks")
COMPILE_STAGES = ("startup", "build")

# timeouts (seconds)
STAGE_TIMEOUT_S = 600.0  # per run stage (reference, correctness, timing, ...)
COMPILE_TIMEOUT_S = 600.0  # startup + build
WORKER_START_TIMEOUT_S = 120.0  # a worker must say hello within this (importing torch), times machine_scale()


def machine_scale():
    """How much slower than a quiet 8-core machine this one will likely run ktui's own work
    (importing torch, building): 1.0 to 4.0, from the core count and the load. ktui's own budgets
    are multiplied by it (a build on a loaded 2-core machine takes 90 s), and running out of them
    is never a verdict on the kernel."""
    import os

    try:
        n = os.cpu_count() or 1
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return 1.0
    busy = max(1.0, load / n)
    small = max(1.0, (8.0 / n) ** 0.5)
    return min(4.0, busy * small)

# correctness
SEED = 42
CORRECTNESS_TRIALS = 5
FP32_TOL = 1e-4
HALF_TOL = 1e-2
# fp8 outputs: one unit in the last place at relative scale (e4m3: 3 mantissa bits, 2**-3; e5m2: 2**-2);
# KernelBench has no fp8 rule. The tolerance rule as a whole: compare.tolerance_for / effective_tolerance.
FP8_E4M3_TOL = 0.125
FP8_E5M2_TOL = 0.25

# timing
METHODS = ("cuda_event", "do_bench", "cuda_graph", "host")
METHOD = "cuda_event"
TRIALS = 100  # timed trials of the first batch (more batches follow until the median is stable)
WARMUP = 3
L2_FLUSH_MIB = 256
TARGET_RSE = 0.005  # stop repeating when the relative standard error of the median is below 0.5 %
TIME_CAP_S = 5.0  # ...or when one side has been timed this long
MAX_SAMPLES = 20000
WALL_WINDOW_S = 0.05  # the judge's own wall-clock measurement: forwards for about this long
WALL_REPEATS = 5  # ...this many times; the fastest counts (scheduling noise only adds time)
WALL_MAX_FORWARDS = 100000  # ...at most this many forwards in one pass
WALL_CHECKED = 3  # outputs of this many calls, picked at random, checked after one more pass
# ...whose every output is kept as a copy while (reference output bytes x forwards) is at most this;
# above, every output's fingerprint (sum, absolute sum, element count) is kept and checked
WALL_RETAIN_BYTES = 128 << 20
WALL_RETAIN_SLACK = 4  # the worker stops copying past this many times WALL_RETAIN_BYTES (a larger output)
WALL_BUSY_FRACTION = 0.5  # more of the judge's clock than this spent waiting for a CPU: the result says so
WALL_TOLERANCE = 2.0  # the kernel's own timing may sit this far below the judge's clock (3x: shared hosts are noisy)
# on the CPU the kernel's threads share cores with everything else on the host: 5x there
WALL_TOLERANCE_CPU = 4.0
# ...and below ktui's clock by more than this (but within the above) on the CPU, ktui's clock is reported
WALL_REPORT_TOLERANCE_CPU = 0.5
# identical calls this much faster (kernel) or slower (reference) than interleaved ones: a finding
INTERLEAVED_RATIO = 4.0
WALL_CONFIRM = 2  # a disagreement is re-measured this many times before it counts
WALL_SLACK_US = 50.0  # ...plus this many microseconds per forward (pipe and Python overhead)
CHECKED_PASS_SLOWDOWN = 20.0  # the checked pass (outputs kept) may take this many times the timed passes' time...
CHECKED_PASS_SLACK_S = 10.0  # ...plus this (times machine_scale()) before the kernel is ended for it
HOST_BOUND_FRACTION = 0.5  # device busy less than this share of the event time: host-bound

# sandbox limits
# RSS of the whole worker tree, memfds included (capped at half the host's memory): a KernelBench
# problem's one input can be 8 GiB (L1 P4, P38, P47...), held once as the tensor and once as the
# sealed memfd it is passed in, plus torch itself
MEMORY_LIMIT_BYTES = 32 << 30
# RLIMIT_FSIZE: no single file beyond this, memfds included: every value passed between the sandboxes
# is one (it was 2 GiB, and 40 of KernelBench's 134 Triton kernels of one real sweep could not be
# judged on an H200: "[Errno 27] File too large"); the disk is bounded by DISK_LIMIT_BYTES below
FILE_SIZE_LIMIT_BYTES = 16 << 30
NPROC_LIMIT = 4096  # RLIMIT_NPROC (not enforced for root) and the watchdog's process count
CPU_LIMIT_S = 7200  # RLIMIT_CPU
OPEN_FILES_LIMIT = 4096
# signals queued and POSIX queue bytes: the kernel counts both per user up the namespace tree, so a
# worker holding its inherited RLIMIT_SIGPENDING (96,362 here) of queued real-time signals made
# every sigqueue() of the user's other programs fail (EAGAIN) while it ran; ktui, torch and CUDA
# queue none and use no POSIX queue
SIGPENDING_LIMIT = 1024
MSGQUEUE_LIMIT_BYTES = 64 << 10
# a worker's private /dev/shm (a tmpfs): at most this many bytes (and no more than its memory limit)
# in at most this many files and folders (each an inode and a dentry of kernel memory, in no count)
SHM_LIMIT_BYTES = 1 << 30
SHM_INODES_LIMIT = 16384
OUTPUT_CAP_BYTES = 16 << 20  # stdout + stderr of one worker; more ends it
OUTPUT_TAIL_BYTES = 16 << 10  # what is kept of it
WATCHDOG_PERIOD_S = 0.2
# what a worker may leave in the folders it can write (its temp dir, its build dir): the host's disk,
# or its memory where /tmp is a tmpfs, and in no process's RSS; checked every DISK_CHECK_PERIOD_S
DISK_LIMIT_BYTES = 8 << 30
DISK_ENTRIES_LIMIT = 200000  # files and folders (inodes)
DISK_CHECK_PERIOD_S = 1.0
# sockets and pipes open in a worker's tree: each may hold megabytes of kernel buffers (2 x
# net.core.wmem_max for a unix socket) that are in no process's RSS (1,500 socket pairs held
# 343 MiB against a 256 MiB limit); ktui's worker needs a handful, a parallel build a few dozen
CHANNELS_LIMIT = 512
# descriptors open in a worker tree (every process's table summed): RLIMIT_NOFILE is per process and
# the task count 4,096, so a tree could hold 16.7 M against the host's fs.file-max (2.5 M on a 24 GiB
# machine), the table every program shares (ENFILE for all of them); 64,000 held 73 MiB of slab
FDS_LIMIT = 65536
# memory no process holds (socket buffers, descriptors in flight between sockets, a memfd sent and
# closed): no watchdog can count it per tree without a cgroup, so when the host's available memory
# falls below this share of its total (and at least HOST_MEMORY_LOST_MIN less than when the worker
# started) the worker is ended and the run is not judged here (another program may be the cause)
HOST_MEMORY_FLOOR_FRACTION = 0.05
HOST_MEMORY_FLOOR_MAX = 4 << 30  # ...but never above this (5 % of a 2 TiB machine is 100 GiB)
HOST_MEMORY_LOST_MIN = 1 << 30

# protocol
MAX_MESSAGE_BYTES = 256 << 10  # one protocol message (tensors travel as sealed memfds, not here)
MAX_DEPTH = 24
MAX_FDS = 64  # file descriptors attached to one message
MAX_STRING = 1 << 20
MAX_LIST = 200000
MAX_TENSOR_BYTES = 64 << 30

# a line the judged reference carries when the task judges outputs against Model run on float32
# copies of the inputs (an "fp32 ground truth"; ktui.trace.results.reference writes it)
FP32_DIRECTIVE = "# ktui: ground truth fp32 (the reference runs on float32 copies of floating inputs)"
# a line the judged reference carries when the task judges by cosine similarity, with the harness's
# thresholds (Harbor's kb_verifier.py: cosine >= 0.99 and relative L1 <= 0.05, for quantized or
# top-k-selected outputs): "# ktui: metric cosine 0.99 0.05"
COSINE_DIRECTIVE = "# ktui: metric cosine"
TOLERANCE_DIRECTIVE = "# ktui: tolerance"  # "atol rtol": the harness's rule, a floor under the dtype's
MAX_TASK_TOL = 0.05  # a tolerance the trace claims is capped here
