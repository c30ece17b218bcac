# ---- ktui repro harness: the sandbox around trace code --------------------------------------
# Two halves:
#
# - the launcher (judge side, ktui code): `detect()` finds what this machine allows; `Spec` says
#   what one worker may touch; `launch(spec, argv)` starts the worker under
#   `unshare --user --map-root-user --pid --fork --mount-proc --net --kill-child` (when user
#   namespaces work) with an allow-listed environment, rlimits, PR_SET_PDEATHSIG, its own session,
#   stdin from /dev/null and stdout/stderr into pipes the judge reads with a byte cap; a watchdog
#   ends the worker tree on too much memory, too many processes or too much output; `kill` ends
#   every descendant (PID namespace, plus a /proc sweep of the tree).
# - the prologue (`enter`, inside the worker, before torch or any trace code): in
#   :mod:`ktui.engine.confine` (a root of its own, read-only mounts, a minimal /dev, a fresh
#   session keyring, capabilities dropped); what that root holds: :mod:`ktui.engine.toolchain`;
#   the process tree seen from /proc (memory, threads, kill): :mod:`ktui.engine.proctree`;
#   prctl / mount: :mod:`ktui.engine.oslib`. Their names are re-exported here.
#
# `describe()` turns what was really in force into words; nothing more is ever claimed.
# Stdlib only. MIT license, part of ktui.
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import weakref

from . import inflight

# the rest of the sandbox, named here too (callers use ``sandbox.X``): the Linux primitives, the
# toolchain a worker's root holds, the process tree seen from outside, the worker's prologue
from .confine import (  # noqa: F401
    HOST_DEV_ENV,
    SPEC_ENV,
    _namespace,
    _pid_namespace,
    drop_capabilities,
    enter,
    in_own_pid_namespace,
    minimal_dev,
    new_session_keyring,
    own_root,
)
from .defaults import (
    CHANNELS_LIMIT,
    CPU_LIMIT_S,
    DISK_CHECK_PERIOD_S,
    DISK_ENTRIES_LIMIT,
    DISK_LIMIT_BYTES,
    FDS_LIMIT,
    FILE_SIZE_LIMIT_BYTES,
    HOST_MEMORY_FLOOR_FRACTION,
    HOST_MEMORY_FLOOR_MAX,
    HOST_MEMORY_LOST_MIN,
    MSGQUEUE_LIMIT_BYTES,
    NPROC_LIMIT,
    OPEN_FILES_LIMIT,
    OUTPUT_CAP_BYTES,
    OUTPUT_TAIL_BYTES,
    SIGPENDING_LIMIT,
    WATCHDOG_PERIOD_S,
)
from .meminfo import default_memory_limit, host_memory, host_shmem  # noqa: F401 - read through sandbox
from .oslib import _under, fs_type, libc, prctl, set_pdeathsig  # noqa: F401
from .proctree import (  # noqa: F401
    _threads,
    continue_tree,
    cpu_seconds,
    descendants,
    disk_used,
    kill_tree,
    runnable,
    stop_tree,
    through_own_namespace,
    tree_memory,
    wait_stopped,
)
from .toolchain import (  # noqa: F401
    PREFIX_PARTS,
    SYSTEM_PATHS,
    _clean_path_list,
    _home,
    _python_prefixes,
    tempfile_root,
    toolchain_paths,
)
from .words import count

UNSHARE_ARGS = ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net", "--ipc", "--uts",
                "--kill-child=SIGKILL"]
#: ...and, where the kernel has it (Linux >= 4.6), a cgroup namespace (/proc/self/cgroup then names no
#: path of the host's, such as a user-1000.slice)
CGROUP_ARG = "--cgroup"

#: environment variables a worker may see, by exact name (everything else is dropped; never by
#: prefix: a name like LC_MYCOMPANY_PROD_PW or TRITON_REMOTE_CACHE_URL must not pass)
ENV_ALLOW = {"PATH", "LANG", "LANGUAGE", "TZ", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE",
             "LC_MONETARY", "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
             "LC_IDENTIFICATION", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME",
             "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST", "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "VIRTUAL_ENV", "CONDA_PREFIX", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
             "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG",
             "TRITON_PTXAS_PATH", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_DEBUG",
             "TORCH_USE_CUDA_DSA", "TORCH_SHOW_CPP_STACKTRACES", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "KTUI_TEST_SANDBOX_LEVEL", "KTUI_WORKER_NICE"}
#: folders of credentials hidden (an empty tmpfs over them) when they exist (the fallback when the
#: worker cannot be given a root of its own: see :func:`enter`)
SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure", ".config/gcloud", ".config/gh",
               ".password-store", ".git-credentials", ".netrc", ".pgpass", ".npmrc", ".pypirc")
#: where a worker's build directory appears inside its own root (one path for every run, so that
#: ninja finds a cached build up to date instead of rebuilding it because its paths changed)
BUILD_MOUNT = "/ktui-build"


# ---- what this machine allows ------------------------------------------------------------------

_detected = None


def detect():
    """{"unshare": path or None, "namespaces": bool, "why": str} (cached per process)."""
    global _detected
    if _detected is not None:
        return _detected
    level = os.environ.get("KTUI_TEST_SANDBOX_LEVEL", "")
    path = shutil.which("unshare")
    info = {"unshare": path, "namespaces": False, "why": ""}
    if level == "none":
        info["why"] = "namespaces turned off (KTUI_TEST_SANDBOX_LEVEL=none)"
    elif path is None:
        info["why"] = "no unshare(1) on this machine"
    elif sys.platform != "linux":
        info["why"] = "not Linux"
    else:
        try:
            for args in ([*UNSHARE_ARGS, CGROUP_ARG], UNSHARE_ARGS):
                out = subprocess.run([path, *args, "true"], capture_output=True, timeout=20)
                info["namespaces"] = out.returncode == 0
                if out.returncode == 0:
                    info["args"], info["why"] = list(args), ""
                    break
                info["why"] = "user namespaces are not allowed here: " + out.stderr.decode(errors="replace")[:200].strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["why"] = f"unshare failed: {exc}"
    _detected = info
    return info


class Spec:
    """What one worker may touch. ``binds``: (host path, path inside the worker) pairs of
    writable folders shown at another path (the build directory at BUILD_MOUNT); ``root``: give
    the worker a root of its own holding only the toolchain, its temp dir and those folders
    (False: the host's tree, read-only, with ``mask`` hidden: the profiler's fallback)."""

    def __init__(self, work_dir, *, rw=(), mask=(), device="cpu", memory_limit=None, output_cap=OUTPUT_CAP_BYTES,
                 nproc=NPROC_LIMIT, file_size=FILE_SIZE_LIMIT_BYTES, cpu_s=CPU_LIMIT_S, env=None, python_path=(),
                 binds=(), root=True, argv=(), disk_limit=DISK_LIMIT_BYTES, disk_entries=DISK_ENTRIES_LIMIT,
                 host_memory_floor=None, channels=CHANNELS_LIMIT, sysfs=None, fds=FDS_LIMIT):
        self.work_dir = os.path.realpath(work_dir)
        self.rw = [os.path.realpath(p) for p in rw]
        self.mask = [os.path.realpath(p) for p in mask]
        self.binds = [(os.path.realpath(a), b) for a, b in binds]
        self.device = device or "cpu"
        self.memory_limit = worker_memory_limit(memory_limit)
        self.output_cap = int(output_cap)
        self.nproc = int(nproc)
        self.file_size = int(file_size)
        self.cpu_s = int(cpu_s)
        self.env = dict(env or {})
        self.python_path = list(python_path)
        self.root = bool(root)
        self.argv = list(argv)
        self.disk_limit = int(disk_limit)
        self.disk_entries = int(disk_entries)
        self.host_memory_floor = host_memory_floor  # bytes; None: HOST_MEMORY_FLOOR_FRACTION of the total
        self.channels = int(channels)
        self.fds = int(fds)  # descriptors open in the whole tree (the host's file table is shared)
        # the worker's /sys (sysview.SYSFS_MODES); None: chosen at launch (gpusysfs.resolve)
        self.sysfs, self.sysfs_note = sysfs, ""

    def writable(self):
        """The host folders this worker can write (its temp dir, ``rw``, the host side of ``binds``)."""
        return [self.work_dir] + self.rw + [a for a, _b in self.binds]

    def inner(self):
        """What the prologue inside the worker needs (JSON in the environment)."""
        # (with a root of its own only what lies inside a folder that root shows is masked: ktui's
        # cache, the reference cache, a credential folder under the Python prefix or a PYTHONPATH
        # folder; the rest of the list, which names folders of the home, is not even passed, since
        # /proc/self/environ keeps what the worker was started with)
        tool = toolchain_paths(self.python_path, self.argv) if self.root else []
        mask = [p for p in self.mask if _under(p, tool)] if self.root else self.mask
        return {"work_dir": self.work_dir, "rw": [self.work_dir] + self.rw, "mask": mask,
                "binds": [list(b) for b in self.binds], "device": self.device, "host_pidns": _pid_namespace(),
                "host_ipcns": _namespace("ipc"), "host_userns": _namespace("user"),
                "host_utsns": _namespace("uts"),
                "nproc": self.nproc, "memory_limit": self.memory_limit, "root": self.root, "sysfs": self.sysfs,
                "sysfs_note": self.sysfs_note, "toolchain": tool}


def worker_memory_limit(requested=None):
    """A worker tree's host-memory limit: ``requested`` bytes (the user's ``KTUI_WORKER_MEMORY_GB``,
    carried in the job's ``memory_limit``) capped at three quarters of the host's memory, or the
    default (:func:`default_memory_limit`) when none is asked for or it is not a positive number."""
    try:
        req = int(requested) if requested is not None and not isinstance(requested, bool) else 0
    except (TypeError, ValueError, OverflowError):
        req = 0
    if req <= 0:
        return default_memory_limit()
    total = host_memory()[1]
    return min(req, total * 3 // 4) if total else req


def default_masks(extra=()):
    """ktui's cache and the credential folders of the home directory (those that exist)."""
    home = os.path.expanduser("~")
    out = []
    for d in SECRET_DIRS:
        p = os.path.join(home, d)
        if os.path.exists(p):
            out.append(p)
    for p in extra:
        if p and os.path.exists(p):
            out.append(p)
    return out


def allowed_env(name, value=""):
    """Whether a variable reaches a worker: its exact name is in ENV_ALLOW, and its value holds no
    credential (a URL with a user:password@ part)."""
    return name in ENV_ALLOW and not _URL_CREDENTIALS.search(value or "")


_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")
_SECRETISH = re.compile(r"KEY|TOKEN|SECRET|PASS|CRED|AUTH", re.I)


def is_secret_name(name):
    """Whether an environment variable's name looks like it holds a credential (KEY, TOKEN,
    SECRET, PASS, CRED, AUTH, any case): such a variable never reaches a worker."""
    return bool(_SECRETISH.search(name))


def worker_env(spec):
    env = {k: v for k, v in os.environ.items() if allowed_env(k, v)}
    hidden = _home()
    for k in ("PATH", "LD_LIBRARY_PATH"):
        if k in env:
            env[k] = _clean_path_list(env[k], hidden)
    env["HOME"] = spec.work_dir
    env["TMPDIR"] = os.path.join(spec.work_dir, "tmp")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env["XDG_CACHE_HOME"] = os.path.join(spec.work_dir, "cache")
    if spec.python_path:
        env["PYTHONPATH"] = os.pathsep.join(spec.python_path)
    env.update(spec.env)
    env[SPEC_ENV] = json.dumps(spec.inner())
    return env


def command(spec, argv, prefix=()):
    """The command line that runs `argv` (a worker) inside the sandbox; `prefix` (e.g. an
    `ncu ...` command) runs inside it too, in front of the worker."""
    d = detect()
    inner = list(prefix) + list(argv)
    if d["namespaces"]:
        return [d["unshare"], *d.get("args", UNSHARE_ARGS), "--", *inner]
    return inner


def preexec(spec):
    """The ``preexec_fn`` of a sandboxed worker (run in the child before its exec): a session of
    its own, SIGKILL when ktui dies, and the rlimits of ``spec`` (file size, CPU time, open files,
    no core dumps, few queued signals and POSIX queue bytes; processes unless root; address space on
    the CPU). :func:`popen` uses it."""
    import resource

    libc()  # loaded before the fork: nothing in the child may take a lock

    def fn():
        os.setsid()
        set_pdeathsig(signal.SIGKILL)
        lim = [(resource.RLIMIT_FSIZE, spec.file_size), (resource.RLIMIT_CPU, spec.cpu_s),
               (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT), (resource.RLIMIT_CORE, 0),
               # counted per user up the namespace tree: the user's other programs keep theirs
               (resource.RLIMIT_SIGPENDING, SIGPENDING_LIMIT), (resource.RLIMIT_MSGQUEUE, MSGQUEUE_LIMIT_BYTES)]
        if spec.device == "cpu":
            # address space: CUDA reserves terabytes of it, so only on the CPU
            lim.append((resource.RLIMIT_AS, spec.memory_limit + (4 << 30)))
        else:
            # the judge's own bound (a soft RLIMIT_AS, ktui.engine.judge) is not the GPU worker's
            try:
                resource.setrlimit(resource.RLIMIT_AS, (resource.getrlimit(resource.RLIMIT_AS)[1],) * 2)
            except (ValueError, OSError):
                pass
        for what, value in lim:
            try:
                soft, hard = resource.getrlimit(what)
                v = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(what, (v, v))
            except (ValueError, OSError):
                pass
    return fn


def popen(spec, cmd, stdout, stderr, pass_fds=()):
    """Start ``cmd`` (a :func:`command` line) as a sandboxed worker: in ``spec.work_dir`` (its
    ``tmp/`` made first), with :func:`worker_env` and :func:`preexec`, stdin closed and no file
    descriptors but ``pass_fds``. Returns the ``subprocess.Popen``."""
    os.makedirs(os.path.join(spec.work_dir, "tmp"), exist_ok=True)
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=spec.work_dir,
                            env=worker_env(spec), pass_fds=tuple(pass_fds), preexec_fn=preexec(spec),
                            close_fds=True)


class Launched:
    """A running sandboxed worker: its process, output tails and the watchdog's verdict."""

    #: the workers of this process (the judge) still watched: their shared memory, as last counted
    _live: "weakref.WeakSet[Launched]" = weakref.WeakSet()
    _live_lock = threading.Lock()

    def __init__(self, spec, argv, pass_fds=(), prefix=(), channel=None):
        self.spec = spec
        # the judge's end of the worker's channel (a socket): what waits in its queue, and the memfds the
        # judge received by it and still holds, are the worker's (ktui.engine.inflight)
        self.channel = channel
        self._skip_sockets = inflight.socket_names(pass_fds)  # the worker's end: its queue holds the judge's requests
        self._held = inflight.HeldFrom(channel)
        self._shared_now = 0  # shared memory of its tree at the last count (for the other workers' sums)
        from .gpusysfs import resolve

        resolve(spec, prefix, Launched)  # the worker's /sys (a GPU's: behind a self-test, opt-in)
        self.cmd = command(spec, argv, prefix)
        self.namespaces = detect()["namespaces"]
        self.proc = popen(spec, self.cmd, subprocess.PIPE, subprocess.PIPE, pass_fds)
        self.output_bytes = 0
        self.limit_hit = None  # "memory" | "output" | "processes" with words
        self._tails = {"stdout": bytearray(), "stderr": bytearray()}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.peak_rss = 0
        self._unlinked, self._scan = {}, {}  # files open with no name (the last count); tree_memory's scan
        # its writable folders on a tmpfs (memory, not disk) and what they held at the last walk
        self._tmpfs_dirs, self._tmpfs_used = [d for d in spec.writable() if fs_type(d) == "tmpfs"], 0
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, "stdout"), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, "stderr"), daemon=True)]
        for t in self._readers:
            t.start()
        self._watch = threading.Thread(target=self._watchdog, daemon=True)
        self._watch.start()

    def _read(self, stream, name):
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                with self._lock:
                    self.output_bytes += len(chunk)
                    tail = self._tails[name]
                    tail += chunk
                    if len(tail) > OUTPUT_TAIL_BYTES:
                        del tail[: len(tail) - OUTPUT_TAIL_BYTES]
                    over = self.output_bytes > self.spec.output_cap and self.limit_hit is None
                    if over:
                        self.limit_hit = ("output_limit", f"printed more than {self.spec.output_cap >> 20} MiB "
                                                          "on stdout/stderr")
                if over:
                    self.kill()
        except (OSError, ValueError):
            return

    def tail(self, name="stderr"):
        with self._lock:
            return bytes(self._tails[name]).decode("utf-8", "replace")

    def tree(self):
        return descendants(self.proc.pid)

    def _host_low(self, avail0, total):
        """Words when the host is short of memory the tree's count does not explain (None: fine)."""
        avail, _t = host_memory()
        if avail is None or avail0 is None or not total:
            return None
        floor = self.spec.host_memory_floor
        floor = int(floor) if floor is not None else min(int(total * HOST_MEMORY_FLOOR_FRACTION),
                                                         HOST_MEMORY_FLOOR_MAX)
        if avail >= floor or avail0 - avail < HOST_MEMORY_LOST_MIN:
            return None
        return ("environment", f"was running when this machine ran short of memory ({avail / 2**30:.1f} GiB "
                               f"available, {avail0 / 2**30:.1f} GiB when it started; floor {floor / 2**30:.1f} GiB) "
                               "while its processes held far less: memory none of them holds (socket buffers, "
                               "descriptors in flight) may be its, or another program's; not judged here")

    def _disk(self):
        used, entries = disk_used(self.spec.writable(), self.spec.disk_entries)
        # and the regular files its processes hold open with no name (O_TMPFILE, unlinked): in no
        # folder the walk reads (320 MiB held against a 128 MiB limit went unseen)
        gone = self._unlinked
        used, entries = used + sum(gone.values()), entries + len(gone)
        # a folder on a tmpfs (a host whose /tmp is one) holds memory: counted there too
        self._tmpfs_used = disk_used(self._tmpfs_dirs, self.spec.disk_entries)[0] if self._tmpfs_dirs else 0
        self.peak_disk = max(getattr(self, "peak_disk", 0), used)
        if entries > self.spec.disk_entries:
            return ("disk_limit", f"left more than {self.spec.disk_entries} files and folders in its temp and "
                                  "build dirs")
        if used > self.spec.disk_limit:
            return ("disk_limit", f"wrote {used / 2**30:.1f} GiB into its temp and build dirs (limit "
                                  f"{self.spec.disk_limit / 2**30:.1f} GiB)")
        return None

    def _known_shmem(self):
        """Shared memory ktui can account for: every watched worker tree's last count and the judge's
        own (its memfds: the inputs it made, the outputs it received)."""
        mine = tree_memory([os.getpid()])["shared"]
        with Launched._live_lock:
            return mine + sum(w._shared_now for w in list(Launched._live))

    def _unseen_shmem(self):
        """Growth of the host's shared memory since this worker started that no count of ktui's
        explains (0 when unknown): where a tree maps memfds or shared anonymous files whose size
        ktui cannot read (not root: /proc/PID/map_files is closed to it), what they hold past their
        mappings is there and nowhere else ktui can see."""
        now = host_shmem()
        if now is None or getattr(self, "_shmem_base", None) is None:
            return 0
        try:
            return max(0, now - self._shmem_base - self._known_shmem())
        except Exception:  # noqa: BLE001 - the other counts still hold
            return 0

    def _own_unix_sockets(self, pids):
        """Unix sockets in the tree's own network namespace (/proc/PID/net/unix of a process of the
        tree whose namespace is not the judge's): each one the tree made itself (0 when it shares the
        judge's namespace: no count of its own then)."""

        def sockets(p):
            with open(f"/proc/{p}/net/unix", "rb") as fh:
                return max(0, sum(1 for _ in fh) - 1)  # a header line, then one line a socket

        return through_own_namespace(pids, "net", sockets)

    def _watchdog(self):
        with Launched._live_lock:
            Launched._live.add(self)
        try:
            try:
                h = host_shmem()
                self._shmem_base = None if h is None else h - self._known_shmem()
            except Exception:  # noqa: BLE001 - never a watchdog that does not watch
                self._shmem_base = None
            return self._watch_loop()
        finally:
            with Launched._live_lock:
                Launched._live.discard(self)

    def _watch_loop(self):
        avail0, total = host_memory()
        next_disk = time.monotonic() + DISK_CHECK_PERIOD_S
        while not self._stop.wait(WATCHDOG_PERIOD_S):
            if self.proc.poll() is not None:
                return
            why = self._host_low(avail0, total)
            if why is None and time.monotonic() >= next_disk:
                why = self._disk()
                next_disk = time.monotonic() + DISK_CHECK_PERIOD_S
            if why:
                return self._end(why)
            why = self._tree_over()
            if why:
                return self._end(why)

    def _end(self, why):  # over a limit: the first reason is kept, the tree killed
        with self._lock:
            if self.limit_hit is None:
                self.limit_hit = why
        self.kill()

    def _tree_over(self):
        """(kind, words) when the worker tree is over its memory, channel or task count; else None."""
        pids = self.tree()
        mem = tree_memory(pids, self._scan)
        self._unlinked = mem["unlinked"]
        self._shared_now = mem["shared"] + self._tmpfs_used
        # memfds or shared anonymous files of a size nobody could read (a normal user's ktui): what
        # the host's shared memory grew by beyond every count ktui keeps is counted as theirs (512 MiB
        # written into memfds, one page of each mapped, descriptors closed, was seen as 97 MiB)
        # and where the tree made unix sockets of its own (in its network namespace: the judge's channel is
        # not one of them): descriptors sent over them and closed are in flight, in no table (1.5 GiB of
        # memfds in flight ended the run at the host's floor, "not judged here", not over its limit)
        # only while messages wait in a queue: a socket of the tree's that holds some (or listens), or the
        # judge's end of its channel (unsolicited messages, read by nobody yet): another program's growth of
        # the host's shared memory is not charged to an honest tree that merely holds a socket
        own_sockets = 0 if mem.get("unknown") else self._own_unix_sockets(pids)
        flight = None if mem.get("unknown") else inflight.waiting(self.channel, pids, own_sockets, self._skip_sockets)
        unseen = self._unseen_shmem() if (mem.get("unknown") or flight) else 0
        # and what the judge received from it and holds (its outputs; the reference's inputs), where the
        # tree itself no longer holds it
        received = self._held.bytes(mem.get("keys") or ())
        known = mem["total"] + self._tmpfs_used + received
        rss = known + unseen
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_memory = max(getattr(self, "peak_memory", 0), rss)
        tasks = sum(_threads(p) for p in pids)
        why = None
        if known > self.spec.memory_limit:
            why = ("memory_limit", f"used {known / 2**30:.1f} GiB of host memory (limit "
                                   f"{self.spec.memory_limit / 2**30:.1f} GiB; memfds and shared memory "
                                   f"{mem['shared'] / 2**30:.1f} GiB of it" + (
                                       f", files in its folders on a tmpfs {self._tmpfs_used / 2**30:.1f} GiB"
                                       if self._tmpfs_used else "") + (
                                       f", memfds it sent that the judge holds {received / 2**30:.1f} GiB"
                                       if received else "") + ")")
        elif rss > self.spec.memory_limit:
            # past the limit only with what the host's shared memory grew by beyond ktui's counts: that
            # growth may be the tree's (memfds in flight, of a size nobody can read) or another program's
            # (an honest CUDA worker was charged 3.4 GiB while a program outside grew /dev/shm by 6 GiB, on
            # the H100 in session 36): the run is stopped, and not judged here, never charged to the kernel
            why = ("environment", f"its count ({known / 2**30:.1f} GiB) and what the host's shared memory grew by "
                                  f"beyond ktui's counts ({unseen / 2**30:.1f} GiB) passed its memory limit "
                                  f"({self.spec.memory_limit / 2**30:.1f} GiB) while " + (
                                      f"it maps {count(mem['unknown'], 'memfd or shared mapping', 'memfds or shared mappings')} "
                                      "whose size ktui (not root) cannot read" if mem.get("unknown") else
                                      f"{flight} (descriptors in flight are in no process's table)")
                                  + ": that growth may be its own or another program's; not judged here")
        elif mem.get("fds", 0) > self.spec.fds:
            why = ("process_limit", f"held {mem['fds']} file descriptors open (limit {self.spec.fds}: the host's "
                                    "file table, fs.file-max, is shared by every program)")
        elif mem.get("channels", 0) > self.spec.channels:
            why = ("process_limit", f"held {mem['channels']} sockets and pipes open (limit {self.spec.channels}: "
                                    "their buffers are kernel memory no process's RSS shows)")
        elif tasks > self.spec.nproc:
            why = ("process_limit", f"started more than {self.spec.nproc} processes/threads ({len(pids)} "
                                    f"processes, {tasks} threads)")
        return why

    def alive(self):
        return self.proc.poll() is None

    def drain(self, timeout):
        """Wait (at most ``timeout`` seconds) until stdout and stderr are read to their end."""
        end = time.monotonic() + timeout
        for t in self._readers:
            t.join(timeout=max(0.0, end - time.monotonic()))

    def kill(self):
        kill_tree(self.proc)

    def close(self):
        self._stop.set()
        self.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for t in self._readers:
            t.join(timeout=2)
        for s in (self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except OSError:
                pass


# ---- in words ---------------------------------------------------------------------------------


def planned(device="cpu", memory_limit=None):
    """What a worker gets, in words, before a run (the confirmation dialog): sandboxwords.planned with
    this machine's detect() and the worker's memory limit. ``memory_limit``: the job's
    (KTUI_WORKER_MEMORY_GB), capped as the worker's will be."""
    return _planned_words(device, memory_limit, found=detect(), limit=worker_memory_limit(memory_limit))


# the words of the confirmation dialog and of a result (sandboxwords.py; describe kept importable from here)
from .sandboxwords import describe  # noqa: E402,F401
from .sandboxwords import planned as _planned_words  # noqa: E402
