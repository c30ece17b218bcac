# ---- ktui repro harness: the judge --------------------------------------------------------------
# The judge is ktui's own code only: it never imports or executes trace code. It starts a
# reference worker and a candidate worker (fresh sandboxed processes, sandbox.py), asks the
# reference for inputs (seeded) and outputs, hands the same sealed input tensors to the
# candidate, compares the candidate's outputs itself (compare.py, float64 on the CPU), times
# both sides (timing.py inside the workers, with primitives bound before trace code loaded) and
# cross-checks those times with its own clock: N forwards on distinct inputs ending in a
# device-wide synchronize, all of whose outputs it verifies. Probes (ktui/engine/probes) run last.
#
#   build(job)            -> BuildResult    compile only (a candidate worker, its build dir writable)
#   judge(job, build=None) -> result dict   everything (builds too when `build` is None)
#
# Both never raise for anything trace code does. MIT license, part of ktui.
import contextlib
import math
import os
import re
import secrets
import select
import shutil
import sys
import tempfile
import time

from . import buildcache, protocol, sandbox, shm
from .compare import compare_outputs, cosine_rule, held_out_seed, input_precision
from .defaults import (
    COMPILE_STAGES,
    COMPILE_TIMEOUT_S,
    CORRECTNESS_TRIALS,
    FP32_DIRECTIVE,
    HARNESS_VERSION,
    HOST_BOUND_FRACTION,
    INTERLEAVED_RATIO,
    MAX_SAMPLES,
    METHOD,
    SEED,
    STAGE_TIMEOUT_S,
    TARGET_RSE,
    TIME_CAP_S,
    TRIALS,
    WALL_BUSY_FRACTION,
    WALL_CHECKED,
    WALL_CONFIRM,
    WALL_MAX_FORWARDS,
    WALL_REPEATS,
    WALL_REPORT_TOLERANCE_CPU,
    WALL_SLACK_US,
    WALL_TOLERANCE,
    WALL_TOLERANCE_CPU,
    WALL_WINDOW_S,
    WARMUP,
    WORKER_START_TIMEOUT_S,
    machine_scale,
)
from .errors import (
    StageFailure,
    default_cache_root,
    describe_position,
    exception_text,
    now,
    one_line,
    round_,
    sha1_text,
    stats_us,
)

SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault", "SIGBUS": "bus error", "SIGFPE": "arithmetic error",
    "SIGILL": "illegal instruction", "SIGABRT": "aborted", "SIGKILL": "killed",
    "SIGTERM": "terminated", "SIGTRAP": "trap",
}
KILLED_FROM_OUTSIDE = "killed"  # failure kind: SIGKILL by someone else / host OOM (never cached)
#: the requests that load trace code into a worker (the kernel, the reference)
TRACE_CODE_OPS = {"build", "load_reference"}
#: failure kinds the judge takes from the candidate's process (all of them the kernel's own)
CANDIDATE_KINDS = {"runtime_error", "import_error", "compile_error", "cuda_error", "oom", "exit", "no_model"}


def needs_cuda(code):
    """The judge's own reading of whether a kernel needs CUDA (never the worker's word)."""
    code = code or ""
    return ("cuda_sources" in code and "cuda_sources=None" not in code.replace(" ", "")) \
        or "__global__" in code or "@triton.jit" in code or "import triton" in code

_IMPORTS_REFERENCE = re.compile(r"^\s*(?:from\s+reference\s+import\b|import\s+reference\b)", re.M)
_REFERENCE_ON_CUDA = re.compile(r"""\.cuda\(|device\s*=\s*['"]cuda|torch\.device\(\s*['"]cuda""")
_TRITON = re.compile(r"@\s*triton\.(?:jit|autotune)|^\s*(?:import|from)\s+triton\b", re.M)



def agreeing_cross_check(own_us: float, wall_us: float, forwards: int, tol: float) -> dict:
    """The timer cross-check when the kernel's own timing is not below ktui's clock. It says
    "agrees" only when the two are within ``tol`` of each other; ktui's clock reading nothing
    (every microsecond of its window was a wait for a CPU, taken out) is "not checked", never an
    agreement with 0.00 μs; an own timing well above the clock hid nothing from it."""
    clock = f"ktui's clock ({wall_us:.2f} μs per forward over {forwards} forwards)"
    if not wall_us > 0:
        return {"name": "timer_cross_check", "ok": None,
                "detail": f"own timing {own_us:.2f} μs (mean) not cross-checked: ktui's clock had no time left "
                          f"once the waits for a CPU were taken out ({forwards} forwards; a busy host)"}
    if own_us > wall_us * (1 + tol) + WALL_SLACK_US:
        return {"name": "timer_cross_check", "ok": True,
                "detail": f"own timing {own_us:.2f} μs (mean) is above {clock}: slower than the clock, "
                          "it hides nothing from it"}
    return {"name": "timer_cross_check", "ok": True,
            "detail": f"own timing {own_us:.2f} μs (mean) agrees with {clock}"}

def valid_samples(desc, fds, cap_n):
    """A worker's timing samples, checked before they are read: one float64 vector of at most
    ``cap_n`` values, every one finite and positive. Returns the list, or a string saying what
    is wrong (the samples are a claim of the process that ran the code)."""
    if not isinstance(desc, dict) or desc.get("dtype") != "float64":
        return f"dtype {str((desc or {}).get('dtype'))[:20]} (float64 expected)"
    shape = desc.get("shape") or []
    if len(shape) != 1:
        return f"shape {shape} (one vector expected)"
    if not 1 <= shape[0] <= cap_n:
        return f"{shape[0]} samples (1..{cap_n} expected)"
    try:
        vals = shm.import_tensor(desc, fds).tolist()
    except protocol.ProtocolError as exc:
        return f"not a sealed tensor ({exc})"
    bad = [x for x in vals if not (isinstance(x, float) and math.isfinite(x) and x > 0)]
    if bad:
        return f"{len(bad)} of {len(vals)} samples not finite and positive (e.g. {str(bad[0])[:30]})"
    return [float(x) for x in vals]


def value_nbytes(v):
    """Bytes of the tensors a received value tree names (its descriptors, not decoded)."""
    if isinstance(v, list):
        return sum(value_nbytes(x) for x in v)
    if isinstance(v, dict):
        if "__tensor__" in v:
            return int(v.get("nbytes") or 0)
        return sum(value_nbytes(x) for x in v.values())
    return 0


def nonfinite_fraction(value):
    """Share of the floating-point elements of a decoded output that are NaN or infinite (None
    when it has none)."""
    import torch

    from .compare import flatten

    total = bad = 0
    for t in flatten(value):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) and t.numel():
            total += t.numel()
            bad += int((~torch.isfinite(t)).sum())
    return None if total == 0 else bad / total


class Job:
    """One kernel to judge (everything the judge needs; plain data, picklable)."""

    FIELDS = {
        "kernel_code": "", "kernel_sha1": None, "kernel_label": None, "reference_source": None,
        "reference_origin": None, "device": None, "method": METHOD, "trials": TRIALS, "warmup": WARMUP,
        "correctness_trials": CORRECTNESS_TRIALS, "seed": SEED, "input_seed": None, "held_out_seed": None,
        "build_root": None, "build_key": None, "checks": True, "measure_memory": True,
        "measure_launches": True, "compile_timeout": COMPILE_TIMEOUT_S, "run_timeout": STAGE_TIMEOUT_S,
        "target_rse": TARGET_RSE, "time_cap_s": TIME_CAP_S, "adaptive": True,
        "worker_argv": None, "python_path": None, "prefix": None, "masks": None, "lock_dir": None,
        "tmp_root": None, "memory_limit": None, "output_cap": None,
    }

    def __init__(self, **kw):
        for k, v in self.FIELDS.items():
            setattr(self, k, kw.get(k, v) if kw.get(k) is not None else v)
        unknown = set(kw) - set(self.FIELDS) - {"keep_alive", "work_dir", "request_id"}
        if unknown:
            raise ValueError(f"unknown job field(s): {', '.join(sorted(unknown))}")
        if not self.kernel_sha1:
            self.kernel_sha1 = sha1_text(self.kernel_code)
        if not self.build_root:
            self.build_root = os.path.join(default_cache_root(), "build")
        if not self.worker_argv:
            self.worker_argv = [sys.executable, "-m", "ktui.engine.worker"]
        if self.python_path is None:
            self.python_path = default_python_path()
        if not self.build_key:
            self.build_key = default_build_key(self.kernel_sha1, self.device)
        # both sides' repeated batches must fit in the timing stage's deadline
        self.time_cap_s = max(0.2, min(float(self.time_cap_s), float(self.run_timeout) / 8))

    @classmethod
    def from_request(cls, req):
        return cls(**{k: v for k, v in dict(req).items() if k in cls.FIELDS})

    def to_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    @property
    def build_dir(self):
        return os.path.join(self.build_root, self.build_key)


def default_python_path():
    """sys.path entries a worker needs to import ktui's harness and torch (nothing else)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds ktui/
    pp = [here]
    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and p not in pp:
            pp.append(p)
    return pp


def default_build_key(code_sha1, device):
    """sha1(code) + torch + Python ABI + device + GPU (found without a CUDA context): one
    build directory per key; the candidate's build step is the only writer of its own."""
    import hashlib
    import platform

    try:
        from importlib.metadata import version

        tv = version("torch")
    except Exception:  # noqa: BLE001 - no torch metadata: the key still separates kernels
        tv = "?"
    from .gpu import state

    gpu = state(device) if (device or "cuda") != "cpu" else None
    parts = [code_sha1, f"torch={tv}", f"py={platform.python_version()}{getattr(sys, 'abiflags', '')}",
             f"device={device or 'auto'}", f"gpu={(gpu or {}).get('name')}",
             f"archlist={os.environ.get('TORCH_CUDA_ARCH_LIST', '')}", f"machine={platform.machine()}"]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]


class Cancelled(Exception):
    pass


class Timeout(Exception):
    pass


class Worker:
    """The judge's handle on one sandboxed worker process."""

    def __init__(self, judge, role, rw=(), binds=()):
        self.judge = judge
        self.role = role
        self.dir = tempfile.mkdtemp(prefix=f"ktui-{role}-", dir=judge.tmp_root)
        self.sock, child = protocol.socketpair()
        job = judge.job
        prefix = job.prefix if (role == "candidate" and job.prefix) else ()
        argv = list(job.worker_argv) + ["--role", role, "--fd", str(child.fileno())]
        spec = sandbox.Spec(self.dir, rw=rw, binds=binds, mask=judge.masks, device=judge.device_kind,
                            python_path=job.python_path, memory_limit=job.memory_limit, argv=list(prefix) + argv,
                            **({"output_cap": int(job.output_cap)} if job.output_cap else {}))
        try:
            self.proc = sandbox.Launched(spec, argv, pass_fds=[child.fileno()], prefix=prefix)
        finally:
            child.close()
        self.seq = 0
        self.report = {}
        self.closed = False
        self.trace_code_loaded = False  # from here on, what this process says is a claim

    @property
    def pid(self):
        return self.proc.proc.pid

    def main_pid(self):
        """The host pid of the worker's Python process (below unshare when namespaced)."""
        if getattr(self, "_main_pid", None) is None:
            pids = self.proc.tree()
            self._main_pid = pids[1] if self.proc.namespaces and len(pids) > 1 else pids[0]
        return self._main_pid

    def runqueue_wait_ns(self):
        """Nanoseconds the worker's main thread spent runnable but waiting for a CPU
        (/proc/PID/schedstat, kept by the kernel: trace code cannot change it); None if unknown."""
        try:
            with open(f"/proc/{self.main_pid()}/schedstat") as fh:
                return int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def call(self, op, args=None, fds=(), timeout=None, poll=0.1):
        """Send one request; wait for its reply (progress on the way). Returns (data, fds).
        ``poll``: how often the wait wakes up to check the cancel flag, the deadline and the
        worker's health (the wall-clock runs wake up less: see :meth:`Pipeline._wall`)."""
        j = self.judge
        self.seq += 1
        if op in TRACE_CODE_OPS:
            self.trace_code_loaded = True
        try:
            protocol.send(self.sock, {"id": self.seq, "op": op, "args": args or {}}, fds)
        except (BrokenPipeError, ConnectionResetError, OSError):
            raise self._death() from None
        deadline = j.deadline if timeout is None else min(j.deadline, time.monotonic() + timeout)
        while True:
            if j.cancel is not None and j.cancel.is_set():
                self.kill()
                raise Cancelled()
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise Timeout()
            if self.proc.limit_hit is not None or not self.proc.alive():
                # drain what it sent before it went (a last reply may be waiting)
                r, _, _ = select.select([self.sock], [], [], 0)
                if not r:
                    raise self._death()
            else:
                r, _, _ = select.select([self.sock], [], [], min(poll, left))
                if not r:
                    continue
            try:
                msg, rfds = protocol.recv(self.sock)
            except protocol.ChannelClosed:
                raise self._death() from None
            except protocol.ProtocolError as exc:
                raise self._protocol_error(exc) from None
            except OSError:
                raise self._death() from None
            try:
                kind, payload = protocol.check_reply(op, msg, len(rfds))
                if msg["id"] != self.seq:
                    raise protocol.ProtocolError(f"reply to request {msg['id']}, expected {self.seq}")
            except protocol.ProtocolError as exc:
                shm.close_fds(rfds)
                raise self._protocol_error(exc) from None
            if kind == "progress":
                shm.close_fds(rfds)
                j.trial(payload.get("trial"), payload.get("of"), payload.get("what"))
                continue
            if kind == "error":
                shm.close_fds(rfds)
                trial = payload.get("trial") or j.cur_trial
                kind_, message = self.judged_kind(op, payload["kind"], payload["message"])
                raise StageFailure(j.stage_name or "startup", kind_, message, trial=trial,
                                   fatal=payload["fatal"], detail=payload.get("detail"))
            return payload, rfds

    def judged_kind(self, op, kind, message):
        """The failure kind the judge gives an error a worker reported: the worker's word is a
        claim once trace code has run in it. The reference's failures are the reference's
        (reference_error, whatever it said); the candidate's are the kernel's: a kind that would
        say "not the kernel's fault" (reference_error, harness_error, worker_error, environment,
        no_reference, protocol...) is not taken from the process that ran the kernel, and
        "unsupported" only where the judge sees CUDA code itself on a CPU-only run."""
        j = self.judge
        if not self.trace_code_loaded:
            return kind, message
        if self.role == "reference":
            if kind == "unsupported" and j.device_kind == "cpu" and _REFERENCE_ON_CUDA.search(
                    getattr(j.job, "reference_source", None) or ""):
                # the reference makes its tensors on a GPU (the judge reads that in its source):
                # not judged on this CPU-only machine, never the reference's or the kernel's failure
                return kind, message
            if kind != "reference_error":
                message = f"the reference failed ({kind}): {message}"
            return "reference_error", message
        if kind in CANDIDATE_KINDS:
            return kind, message
        if kind == "unsupported" and op == "build" and j.device_kind == "cpu" and needs_cuda(j.job.kernel_code):
            return kind, message
        if kind == "method_unsupported" and op == "time":  # a timing method this kernel cannot run under: a note
            return kind, message
        return "runtime_error", (f"the kernel's process reported a failure of kind {kind!r}, which only the judge "
                                 f"assigns: counted as the kernel's own failure: {message}")

    def _protocol_error(self, exc):
        self.kill()
        j = self.judge
        return StageFailure(j.stage_name or "startup", "protocol_error",
                            f"worker protocol error: {exc} (the {self.role} worker was ended)",
                            trial=j.cur_trial, fatal=True)

    def _death(self):
        j = self.judge
        lim = self.proc.limit_hit
        try:
            rc = self.proc.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - still running: end it
            self.kill()
            rc = self.proc.proc.poll()
        self.kill()
        self.proc.drain(2.0)  # what it printed last is read before its words are (a loaded host)
        where = j.describe_position()
        if lim is not None:
            # a breach is about the process that breached: the reference's is a reference error
            kind = lim[0] if self.role == "candidate" else "reference_error"
            return StageFailure(j.stage_name or "startup", kind, f"the {self.role} {lim[1]} {where} (worker ended)",
                                trial=j.cur_trial, fatal=True)
        who = "reference" if self.role == "reference" else (
            "kernel" if j.stage_name not in (None, "startup") else "worker")
        tail = self.proc.tail()
        if self.proc.namespaces and rc == 1 and "sigprocmask unblock failed" in tail[-400:]:
            rc = -9  # unshare(1) cannot re-raise a SIGKILL that ended its child: it says so, exits 1
        if "No module named 'ktui" in tail or "No module named ktui" in tail:
            return StageFailure(j.stage_name or "startup", "worker_error",
                                "the worker could not import ktui (PYTHONPATH?)", fatal=True)
        if rc is not None and rc < 0:
            import signal

            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            if name == "SIGKILL":
                return StageFailure(j.stage_name or "startup", KILLED_FROM_OUTSIDE,
                                    f"worker killed by SIGKILL {where} (by another process, or the host ran "
                                    "out of memory): not the kernel's result, not cached", trial=j.cur_trial,
                                    fatal=True)
            kind = "crash" if self.role == "candidate" else "reference_error"
            return StageFailure(j.stage_name or "startup", kind,
                                f"{who} crashed: {name} ({SIGNAL_WORDS.get(name, name)}) {where}",
                                trial=j.cur_trial, fatal=True)
        if rc is None:
            msg = f"the {self.role} worker closed the protocol channel {where}"
        else:
            msg = (f"worker exited with status {rc} {where} without a result (os._exit() or a fatal error "
                   f"in the {who} code)")
        return StageFailure(j.stage_name or "startup", "exit" if self.role == "candidate" else "reference_error",
                            msg, trial=j.cur_trial, fatal=True)

    def kill(self):
        self.proc.kill()

    def close(self, polite=True):
        if self.closed:
            return
        self.closed = True
        if polite and self.proc.alive():
            try:
                protocol.send(self.sock, {"id": self.seq + 1, "op": "bye", "args": {}})
                self.proc.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001 - it is killed below either way
                pass
        self.proc.close()
        try:
            self.sock.close()
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def _renumber(value, fds, out):
    """A received value tree re-indexed onto `out` (to send the same sealed memfds on)."""
    if isinstance(value, list):
        return [_renumber(x, fds, out) for x in value]
    if isinstance(value, dict):
        if "__tensor__" in value:
            d = dict(value)
            out.append(fds[value["__tensor__"]])
            d["__tensor__"] = len(out) - 1
            return d
        return {k: _renumber(x, fds, out) for k, x in value.items()}
    return value


class Held:
    """A value tree the judge holds, with its memfds (closed by `close`)."""

    def __init__(self, value, fds, owns=True):
        self.value, self.fds = value, list(fds)
        self.owns = owns  # False: the descriptors belong to another Held (one reply, two values)
        self._decoded = None

    def decoded(self):
        if self._decoded is None:
            self._decoded = shm.decode_value(self.value, self.fds)
        return self._decoded

    def send_args(self):
        out = []
        return _renumber(self.value, self.fds, out), out

    def close(self):
        if self.owns:
            shm.close_fds(self.fds)
        self.fds = []


class Judge:
    """One reproduction of one kernel snapshot. `emit(dict)` receives progress events."""

    def __init__(self, job, emit=None, cancel=None):
        self.job = job if isinstance(job, Job) else Job.from_request(job)
        self.emit_fn = emit or (lambda ev: None)
        self.cancel = cancel
        self.stage_name = None
        self.cur_trial = None
        self.cur_what = None
        self._t_stage = None
        self.deadline = time.monotonic() + self.job.compile_timeout
        self.device_kind = "cpu" if (self.job.device or "") == "cpu" else "cuda"
        self.tmp_root = tempfile.mkdtemp(prefix="ktui-repro-", dir=self.job.tmp_root)
        cache_root = os.path.dirname(os.path.abspath(self.job.build_root))
        os.makedirs(self.job.build_root, exist_ok=True)
        self.masks = sandbox.default_masks([cache_root, default_cache_root()] + list(self.job.masks or []))
        self.workers = []
        self.held = []
        # every input the kernel is judged on (correctness trials, the held-out trial, timing, the
        # probes) is drawn from this seed, which only the judge and the reference worker know: the
        # candidate gets `seed` (its weights must match the reference's), and inputs derived from
        # that would be predictable (a kernel could compute their answers while it is built, untimed)
        self.input_seed = int(self.job.input_seed) if self.job.input_seed else 1 + secrets.randbelow(2**31 - 2)
        self._rq_waited = 0.0  # μs of ktui's wall-clock passes spent waiting for a CPU (not counted)
        self._wall_total = 0.0  # μs those passes took in all
        self.result = {
            "harness_version": HARNESS_VERSION, "status": "running", "failure": None,
            "kernel_sha1": self.job.kernel_sha1,
            "reference_sha1": sha1_text(self.job.reference_source) if self.job.reference_source else None,
            "stages": {}, "environment": None, "build": None, "correctness": None, "timing": None,
            "memory": None, "launches": None, "checks": [], "findings": [], "notes": [],
            "sandbox": {"planned": sandbox.planned(self.device_kind)},
            "seeds": {"init": int(self.job.seed), "inputs": self.input_seed},
        }

    # ---- events ------------------------------------------------------------------------------
    def emit(self, ev):
        try:
            self.emit_fn(ev)
        except Exception:  # noqa: BLE001 - a broken progress callback must not end the run
            pass

    def stage(self, name):
        self.end_stage()
        self.stage_name = name
        self.cur_trial = self.cur_what = None
        self._t_stage = now()
        limit = self.job.compile_timeout if name in COMPILE_STAGES else self.job.run_timeout
        if name == "startup":  # starting the workers (importing torch) is ktui's, not the kernel's
            limit = max(float(limit), WORKER_START_TIMEOUT_S * machine_scale())
        self.deadline = time.monotonic() + float(limit)
        self.emit({"event": "stage", "stage": name, "state": "start"})

    def end_stage(self, state="done"):
        if self.stage_name is None or self._t_stage is None:
            return
        secs = round_(now() - self._t_stage, 3)
        self.result["stages"][self.stage_name] = {"state": state, "seconds": secs}
        self.emit({"event": "stage", "stage": self.stage_name, "state": state, "seconds": secs})
        self._t_stage = None

    def trial(self, i, n=None, what=None):
        self.cur_trial = i
        self.cur_what = what
        ev = {"event": "trial", "stage": self.stage_name, "trial": i, "of": n}
        if what:
            ev["what"] = what
        self.emit(ev)

    def describe_position(self):
        return describe_position(self.stage_name, self.cur_trial, self.cur_what)

    def hold(self, value, fds):
        h = Held(value, fds)
        self.held.append(h)
        return h

    def release(self, *hs):
        """Close held values as soon as they are no longer needed (the judge does not keep every
        exchanged tensor to the end of the run)."""
        for h in hs:
            if h is None:
                continue
            h.close()
            h._decoded = None
            if h in self.held:
                self.held.remove(h)

    # ---- run ---------------------------------------------------------------------------------
    def run(self, build=None):
        t0 = now()
        try:
            self._run(build)
            self.result["status"] = "completed"
            self.end_stage()
        except StageFailure as f:
            self._fail(f.stage, f.kind, f.message, f.trial, f.fatal, f.detail)
        except Cancelled:
            self._fail(self.stage_name, "cancelled", f"cancelled {self.describe_position()}", self.cur_trial, True)
            self.result["status"] = "cancelled"
        except Timeout:
            limit = self.job.compile_timeout if self.stage_name in COMPILE_STAGES else self.job.run_timeout
            if self.stage_name == "startup":
                limit = max(float(limit), WORKER_START_TIMEOUT_S * machine_scale())
            self._fail(self.stage_name, "timeout", f"timed out after {float(limit):g} s {self.describe_position()} "
                                                   "(worker killed)", self.cur_trial, True)
        except BaseException as exc:  # noqa: B036 - a judge bug must still produce a result
            import traceback

            self._fail(self.stage_name or "harness", "harness_error", f"harness error: {exception_text(exc)}",
                       self.cur_trial, True, traceback.format_exc()[-6000:])
        finally:
            self.close()
        self.result["seconds"] = round_(now() - t0, 3)
        return self.result

    def _fail(self, stage, kind, message, trial, fatal, detail=None):
        self.end_stage("failed")
        self.result["status"] = "failed"
        self.result["failure"] = {"stage": stage or "startup", "kind": kind, "message": message, "trial": trial,
                                  "fatal": bool(fatal), "detail": detail}
        for w in self.workers:
            if w.role == "candidate":
                self.result["stderr_tail"] = w.proc.tail()

    def close(self):
        for w in self.workers:
            w.close(polite=self.result.get("status") == "completed")
        for h in self.held:
            h.close()
        self.held = []
        shutil.rmtree(self.tmp_root, ignore_errors=True)

    def spawn(self, role, rw=(), binds=()):
        w = Worker(self, role, rw=rw, binds=binds)
        self.workers.append(w)
        return w

    def spawn_candidate(self):
        """The candidate worker, its build folder a throwaway copy (of the cached build, when
        there is one) in the judge's temp dir: shown at sandbox.BUILD_MOUNT inside its own root,
        at its own path without namespaces."""
        self.build_tmp = os.path.join(self.tmp_root, "build")
        self.build_from_cache = buildcache.fetch(self.job.build_dir, self.build_tmp)
        if sandbox.detect()["namespaces"]:
            return self.spawn("candidate", binds=[(self.build_tmp, sandbox.BUILD_MOUNT)])
        return self.spawn("candidate", rw=[self.build_tmp])

    def build_dir_inside(self, w):
        return sandbox.BUILD_MOUNT if w.report.get("own_root") else self.build_tmp

    def call_build(self, cand):
        """The build request, then (the candidate stopped: nothing it left running writes while
        the judge copies) the throwaway build folder copied into the cache by the judge."""
        job = self.job
        bargs = {"source": job.kernel_code, "key": job.build_key, "build_dir": self.build_dir_inside(cand)}
        if job.reference_source and _IMPORTS_REFERENCE.search(job.kernel_code):
            bargs["reference_source"] = job.reference_source  # `import reference` works, as in the harness
        binfo, _ = cand.call("build", bargs)
        binfo = dict(binfo)
        binfo["dir"] = job.build_dir
        binfo["from_cache"] = bool(self.build_from_cache)  # the judge's word: it copied a cached build in
        if binfo.get("has_model") and not binfo.get("failed_builds"):
            pids = sandbox.stop_tree(cand.proc.proc)
            sandbox.wait_stopped(pids)
            try:
                stored = buildcache.publish(self.build_tmp, job.build_dir)
            finally:
                sandbox.continue_tree(cand.proc.proc, pids)
            binfo["cache"] = {k: v for k, v in stored.items() if k != "skipped"}
            if stored.get("skipped"):
                binfo["cache"]["left_out"] = [str(x)[:120] for x in stored["skipped"][:8]]
        return binfo

    def start(self, role, rw=(), w=None):
        w = w or self.spawn(role, rw)
        data, _ = w.call("hello", timeout=WORKER_START_TIMEOUT_S * machine_scale())
        w.report = data["sandbox"]
        if w.proc.namespaces and w.proc.spec.root and not w.report.get("own_root"):
            errs = "; ".join(str(e) for e in (w.report.get("errors") or [])[:3])
            raise StageFailure("startup", "environment",
                               f"the {role} worker's sandbox could not be set up here (its own root: {errs[:300]}); "
                               "nothing was run", fatal=True)
        self.result["sandbox"][role] = sandbox.describe(w.report, w.proc.namespaces)
        self.result["sandbox"][role + "_report"] = w.report
        # the round trip of an empty request, before any trace code is loaded
        rtt = []
        for _ in range(5):
            t = now()
            w.call("ping")
            rtt.append((now() - t) * 1e6)
        w.rtt_us = sorted(rtt)[len(rtt) // 2]
        return w

    def _setup(self, w):
        data, _ = w.call("setup", {"device": self.job.device})
        if self.result["environment"] is None:
            self.result["environment"] = data["environment"]
            self.result["device"] = data["device"]
            self.result["startup"] = {"import_torch_s": data["import_torch_s"], "device_init_s": data["device_init_s"]}
        self.device_str = data["device"]
        return data

    def _run(self, build):
        job = self.job
        self.stage("startup")
        if not (job.kernel_code or "").strip():
            self.stage("build")
            raise StageFailure("build", "no_code", "the snapshot has no kernel code (attachment stub?)")
        # both workers start together (each imports torch before it answers)
        cw = self.spawn_candidate()
        rw_ = self.spawn("reference") if job.reference_source else None
        cand = self.start("candidate", w=cw)
        self._setup(cand)
        ref = None
        if rw_ is not None:
            ref = self.start("reference", w=rw_)
            self._setup(ref)

        # build ------------------------------------------------------------------------------
        self.stage("build")
        binfo = self.call_build(cand)
        if build is not None and build.get("build"):
            binfo["cached"] = bool(build["build"].get("cached")) or binfo["cached"]
            binfo["seconds"] = build["build"].get("seconds", binfo["seconds"])
        has_model = binfo.pop("has_model")
        self.result["build"] = binfo
        if not binfo["extensions"]:
            self.result["notes"].append("the kernel builds no extension (no load_inline / load call)")
        if not has_model:
            raise StageFailure("build", "no_model", "the kernel code defines no ModelNew")

        # reference -----------------------------------------------------------------------------
        self.stage("reference")
        if ref is None:
            raise StageFailure("reference", "no_reference", "the trace has no reference source; pass --reference FILE")
        if self.device_kind == "cuda" and self.device_str.startswith("cuda"):
            fl, _ = ref.call("floor")  # the timer's floor, measured before any trace code loads here
            self._floor = dict(fl)
        else:
            self._floor = None
        ref.call("load_reference", {"source": job.reference_source})
        self.result["reference"] = {"origin": job.reference_origin, "sha1": self.result["reference_sha1"]}
        self.cosine = cosine_rule(job.reference_source)
        if self.cosine is not None:
            self.result["reference"]["metric"] = (f"cosine similarity >= {self.cosine[0]:g} and relative L1 <= "
                                                  f"{self.cosine[1]:g} (the harness's metric for this task)")
        if FP32_DIRECTIVE in (job.reference_source or ""):
            self.result["reference"]["ground_truth"] = "fp32: the reference runs on float32 copies of the inputs"
        self.ref, self.cand = ref, cand

        # correctness -------------------------------------------------------------------------
        self.stage("correctness")
        seed = int(job.seed)
        init_v, init_f = ref.call("init", {"seed": seed})
        self.init_inputs = self.hold(init_v["init_inputs"], init_f)
        v, f = self.init_inputs.send_args()
        cand.call("init", {"seed": seed, "init_inputs": v}, f)
        if _TRITON.search(job.kernel_code):
            self._jit_warmup(seed)
        corr = self._correctness(self.input_seed)
        self.result["correctness"] = corr
        if not corr["passed"]:
            self.result["notes"].append("correctness failed: timing, memory and launches not measured")
            if job.checks:  # the probes that can say why (a thread still filling the output...)
                self.stage("checks")
                from .probes import run_judge_probes

                run_judge_probes(ProbeContext(self), correctness_failed=True)
            return

        # timing ------------------------------------------------------------------------------
        self.stage("timing")
        self.result["timing"] = self._timing(self.input_seed)
        # memory, launches (CUDA) ------------------------------------------------------------
        def both(op):  # one measurement of the timed inputs, in each worker
            self.trial(1, 1, "kernel")
            k, _ = cand.call(op, {"slot": "t"})
            self.trial(1, 1, "reference")
            r, _ = ref.call(op, {"slot": "t"})
            return k, r

        if self.device_str.startswith("cuda") and job.measure_memory:
            self.stage("memory")
            km, rm = both("memory")
            self.result["memory"] = {
                "kernel_peak_mb": km["peak_mb"], "ref_peak_mb": rm["peak_mb"],
                "kernel_delta_mb": km["delta_mb"], "ref_delta_mb": rm["delta_mb"],
                "kernel_reserved_mb": km["reserved_mb"], "ref_reserved_mb": rm["reserved_mb"],
                "ratio": round_(km["peak_mb"] / rm["peak_mb"], 4) if rm["peak_mb"] else None, "unit": "MiB",
                "note": "torch.cuda.max_memory_allocated during one forward, each side in its own process "
                        "(reported by the worker)"}
        if self.device_str.startswith("cuda") and job.measure_launches:
            self.stage("launches")
            k, r = both("launches")
            self.result["launches"] = {
                "num_kernels": k["launches"], "ref_num_kernels": r["launches"],
                "fusion_ratio": round_(r["launches"] / k["launches"], 4) if k["launches"] else None,
                "kernel": k, "reference": r,
                "note": "device activities (kernels + memcpy + memset) in one profiled forward"}
            self._host_bound()
        # probes / honesty checks -------------------------------------------------------------
        if job.checks:
            self.stage("checks")
            from .probes import run_judge_probes

            run_judge_probes(ProbeContext(self))

    # ---- stages ------------------------------------------------------------------------------
    def _jit_warmup(self, seed):
        """A Triton kernel compiles at its first call: one forward on inputs of their own, before
        correctness, as part of the build stage (the build's time limit, its seconds; ``jit_s``
        in the build's result), so the JIT is neither a correctness trial's timeout nor in any timing."""
        before = dict(self.result["stages"].get("build") or {})
        self.stage("build")
        t0 = now()
        inputs, _ref_out = self.reference_io(held_out_seed(seed ^ 0x9E3779B1, []), "jit")
        try:
            out, _meta = self.candidate_forward(inputs, "jit")
            out.close()
        finally:
            inputs.close()
        jit = round_(now() - t0, 3)
        self.end_stage()
        self.result["stages"]["build"] = {"state": "done",
                                          "seconds": round_(float(before.get("seconds") or 0.0) + jit, 3)}
        if isinstance(self.result.get("build"), dict):
            self.result["build"]["jit_s"] = jit
        self.stage("correctness")

    def reference_io(self, seed, slot):
        """Inputs for `seed` from the reference (kept in slot `slot` there) and its outputs."""
        iv, ifd = self.ref.call("make_inputs", {"seed": int(seed), "slot": slot, "forward": True,
                                                "trial": self.cur_trial})
        inputs = self.hold(iv["inputs"], ifd)
        outputs = Held(iv["forward"]["outputs"], ifd, owns=False)  # same reply: closed with the inputs
        return inputs, outputs

    def candidate_forward(self, inputs, slot, return_inputs=False):
        v, f = inputs.send_args()
        ov, ofd = self.cand.call("forward", {"slot": slot, "trial": self.cur_trial, "return_inputs": return_inputs,
                                             "inputs": v}, f)
        out = self.hold(ov["outputs"], ofd)
        return out, ov

    def _correctness(self, seed):
        import torch

        job = self.job
        n = int(job.correctness_trials)
        gen = torch.Generator().manual_seed(seed)
        seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=gen)) for _ in range(n)]
        held = int(job.held_out_seed or 0) or held_out_seed(seed, seeds)
        res = {"passed": False, "trials": n, "trials_passed": 0, "seeds": seeds, "held_out": None,
               "max_abs_error": 0.0, "mean_abs_error": 0.0, "max_rel_error": 0.0, "mean_rel_error": 0.0,
               "atol": None, "rtol": None, "dtype": None, "mismatch": None, "failed_trial": None}
        means_abs, means_rel = [], []
        self.types_seen = []

        def one(i, s, label):
            self.trial(i, n, label)
            inputs, ref_out = self.reference_io(s, f"c{i}")
            out, meta = self.candidate_forward(inputs, f"c{i}")
            self.types_seen.append({k: v for k, v in meta.items() if k not in ("outputs", "inputs_after")})
            self.input_dtype = input_precision(inputs.decoded())
            try:
                return self.compare_checked(ref_out, out, f"trial {i}", self.input_dtype)
            finally:
                self.release(inputs, out)

        for i, s in enumerate(seeds, 1):
            cmp = one(i, s, "trial")
            for k in ("max_abs_error", "max_rel_error"):
                res[k] = max(res[k], cmp[k])
            means_abs.append(cmp["mean_abs_error"])
            means_rel.append(cmp["mean_rel_error"])
            res["atol"], res["rtol"], res["dtype"] = cmp["atol"], cmp["rtol"], cmp["dtype"]
            res["input_dtype"] = cmp.get("input_dtype")
            if cmp["passed"]:
                res["trials_passed"] += 1
            elif res["mismatch"] is None:
                res["mismatch"] = cmp["reason"]
                res["failed_trial"] = i
        if means_abs:
            res["mean_abs_error"] = round_(sum(means_abs) / len(means_abs), 9)
            res["mean_rel_error"] = round_(sum(means_rel) / len(means_rel), 9)
        res["passed"] = res["trials_passed"] == n
        if res["passed"]:
            cmp = one(n + 1, held, "held-out")
            res["held_out"] = {"seed": held, "passed": cmp["passed"], "reason": cmp["reason"],
                               "max_abs_error": cmp["max_abs_error"]}
            if not cmp["passed"]:
                res["passed"] = False
                res["mismatch"] = f"held-out trial (seed {held}) failed: {cmp['reason']}"
                res["failed_trial"] = n + 1
        return res

    def compare_checked(self, ref_out, out, where, input_dtype=None):
        """The judge's comparison of one candidate output with the reference's, after checks of
        what the workers sent: a candidate output far larger than the reference's is a mismatch
        without being read; a reference whose outputs are all NaN/inf is reported as such (no
        kernel passes against it), a partly non-finite one is said in a note."""
        rb, cb = value_nbytes(ref_out.value), value_nbytes(out.value)
        if cb > max(2 * rb, rb + (1 << 20)):
            return {"passed": False, "reason": f"the kernel's output is {cb} bytes, the reference's {rb} (not read)",
                    "max_abs_error": 0.0, "max_rel_error": 0.0, "mean_abs_error": 0.0, "mean_rel_error": 0.0,
                    "atol": None, "rtol": None, "dtype": None}
        try:
            ref = ref_out.decoded()
        except protocol.ProtocolError as exc:
            raise StageFailure(self.stage_name, "reference_error", f"the reference's worker sent an output that is "
                               f"not a tensor ktui can read ({exc})", trial=self.cur_trial, fatal=True) from None
        frac = nonfinite_fraction(ref)
        if frac is not None and frac >= 1.0:
            raise StageFailure(self.stage_name, "reference_error",
                               f"the reference returned only NaN/inf ({where}): there is nothing to compare a kernel "
                               "against", trial=self.cur_trial, fatal=True)
        if frac and not getattr(self, "_nan_noted", False):
            self._nan_noted = True
            self.result["notes"].append(f"the reference returned NaN/inf for {100 * frac:.1f} % of its output "
                                        f"elements ({where}): a kernel matches there only with the same non-finite values")
        if time.monotonic() > self.deadline:
            raise Timeout()
        try:
            new = out.decoded()
        except protocol.ProtocolError as exc:  # a pipe, a writable memfd, a size that lies: the kernel's process
            self.cand.kill()
            raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the kernel's worker sent an "
                               f"output that is not a sealed tensor ({exc}); the worker was ended",
                               trial=self.cur_trial, fatal=True) from None
        return self.judged_compare(ref, new, input_dtype=input_dtype)

    @contextlib.contextmanager
    def _candidate_stopped(self, timing):
        """While the reference is timed the candidate's processes are stopped (SIGSTOP): nothing
        the kernel left running (a thread, a native thread, a child) can load the host or launch
        GPU work that slows the reference and so inflates the speedup. What it queued on the GPU
        before is finished: its own timing ended with a synchronize. The candidate's CPU time
        over the window (from /proc, which it cannot understate) is recorded: about 0."""
        proc = self.cand.proc.proc
        pids = sandbox.stop_tree(proc)
        sandbox.wait_stopped(pids)
        cpu0, t0 = sandbox.cpu_seconds(pids), now()
        try:
            yield
        finally:
            cpu1 = sandbox.cpu_seconds(pids)
            sandbox.continue_tree(proc, pids)
            rec = timing.setdefault("candidate_stopped", {"processes": 0, "windows": 0, "seconds": 0.0,
                                                          "cpu_seconds": 0.0})
            rec["processes"] = max(rec["processes"], len(pids))
            rec["windows"] += 1
            rec["seconds"] = round_(rec["seconds"] + now() - t0, 3)
            rec["cpu_seconds"] = round_(rec["cpu_seconds"] + max(0.0, cpu1 - cpu0), 3)

    def _time_side(self, w, label, cap_s=None):
        job = self.job
        # a sample cap the kernel cannot stretch (its own clock may be patched to stand still)
        cap_n = int(min(MAX_SAMPLES, max(20 * int(job.trials), 200)))
        args = {"slots": ["t"], "method": job.method, "trials": int(job.trials), "warmup": int(job.warmup),
                "target_rse": float(job.target_rse), "cap_s": float(job.time_cap_s if cap_s is None else cap_s),
                "adaptive": bool(job.adaptive), "max_samples": cap_n}
        self.trial(1, None, label)
        data, fds = w.call("time", args)
        h = self.hold(data["samples"], fds)
        try:
            samples = valid_samples(h.value, h.fds, cap_n)
        finally:
            self.release(h)
        if isinstance(samples, str):
            if w.role == "reference":
                raise StageFailure(self.stage_name, "reference_error",
                                   f"the reference's worker sent invalid timing samples: {samples}", fatal=True)
            data = dict(data, invalid_samples=samples)
            return data, None
        return data, samples

    def _wall(self, w, slots, label, check=False):
        """The judge's own clock: wall time of F calls (cycling over distinct inputs) ending in a
        device-wide synchronize, F sized from a first pass (never from the worker's own timing,
        which the kernel may have changed) to last about WALL_WINDOW_S; the fastest of
        WALL_REPEATS, per forward. Returns (per-forward times, F, the outputs)."""

        def once(forwards, rtt):
            """(per-forward time with the waits for a CPU taken out, the raw per-forward time)"""
            q0, j0 = w.runqueue_wait_ns(), own_runqueue_wait_ns()
            t = now()
            # one wake-up a second at most while the worker runs (the judge then only becomes
            # runnable when the reply is there, so its own wait below is the reply's latency)
            data, _ = w.call("wall", {"slots": slots, "forwards": forwards}, poll=1.0)
            dt = (now() - t) * 1e6
            q1, j1 = w.runqueue_wait_ns(), own_runqueue_wait_ns()
            # time the worker was runnable but another process had the CPU is not the kernel's
            # (a shared host), nor is the time the judge waited for a CPU to read the reply;
            # sleeps, waits for the GPU and work stay in
            waited = (q1 - q0) / 1e3 if q0 is not None and q1 is not None else 0.0
            waited += (j1 - j0) / 1e3 if j0 is not None and j1 is not None else 0.0
            waited = min(waited, dt)
            self._rq_waited += waited
            self._wall_total += dt
            if data["forwards"] != forwards:  # the judge's count, never the worker's
                w.kill()
                raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the {w.role} says it "
                                   f"ran {data['forwards']} forwards, {forwards} asked (the worker was ended)",
                                   fatal=True)
            n = max(1, forwards)
            return max(0.0, dt - waited - rtt) / n, dt / n

        self.trial(0, WALL_REPEATS, f"{label} wall clock")
        forwards = len(slots)
        # F is sized from the raw time (round trip and waits included): an upper bound per
        # forward, so F never overshoots the window, however much waiting is taken out later
        _, raw = once(forwards, 0.0)
        # grow F until one pass lasts about WALL_WINDOW_S (wake-up latencies then do not matter)
        for _ in range(4):
            if raw * forwards >= WALL_WINDOW_S * 1e6 * 0.5 or forwards >= WALL_MAX_FORWARDS:
                break
            forwards = int(max(forwards * 2, min(WALL_MAX_FORWARDS, WALL_WINDOW_S * 1e6 / max(raw, 1e-3))))
            _, raw = once(forwards, 0.0)
        per = []
        for rep in range(WALL_REPEATS):
            self.trial(rep + 1, WALL_REPEATS, f"{label} wall clock")
            per.append(once(forwards, w.rtt_us)[0])
        if not check:
            return per, forwards, None
        # one more pass like the timed ones, whose time is not used: the outputs of calls the
        # judge picks at random (not the last one, which a kernel could make the only right one)
        rng = secrets.SystemRandom()
        keep = sorted(rng.sample(range(forwards), min(WALL_CHECKED, forwards)))
        self.trial(WALL_REPEATS, WALL_REPEATS, f"{label} outputs of calls {', '.join(str(k + 1) for k in keep)}")
        data, _ = w.call("wall", {"slots": slots, "forwards": forwards, "keep": keep}, poll=1.0)
        if data["forwards"] != forwards:
            raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the {w.role} ran "
                               f"{data['forwards']} forwards, {forwards} asked (the worker was ended)", fatal=True)
        outs, fds = w.call("wall_outputs")
        if len(outs["outputs"]) != len(keep):
            shm.close_fds(fds)
            w.kill()
            raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: {len(outs['outputs'])} "
                               f"outputs of the checked pass, {len(keep)} asked (the {w.role} worker was ended)",
                               fatal=True)
        h = self.hold(outs["outputs"], fds)
        return per, forwards, (h, keep)

    def _timing(self, seed):
        job = self.job
        method = job.method
        method_used = method if self.device_str.startswith("cuda") else "host"
        if method_used != method:
            self.result["notes"].append(f"{method} needs a CUDA device: timed with the host clock on {self.device_str}")
        timing = {"method": method, "method_used": method_used, "trials": int(job.trials), "warmup": int(job.warmup),
                  "l2_flush_mib": 256 if method_used != "host" else 0, "target_rse": job.target_rse,
                  "time_cap_s": job.time_cap_s}
        inputs, ref_out = self.reference_io(seed, "t")
        v, f = inputs.send_args()
        self.cand.call("put_inputs", {"slot": "t", "inputs": v}, f)
        lock = None
        gpu_before = gpu_after = None
        if self.device_str.startswith("cuda"):
            from .gpu import GpuLock, state

            lock = GpuLock(job.lock_dir or os.path.join(default_cache_root(), "locks"), self.device_str)
            ok = lock.acquire(cancel=self.cancel, on_wait=lambda holder: self.trial(
                None, None, f"waiting for the GPU lock (held by pid {holder or '?'})"),
                timeout=max(1.0, self.deadline - time.monotonic()))
            if not ok:
                if self.cancel is not None and self.cancel.is_set():
                    raise Cancelled()
                raise Timeout()
            timing["gpu_lock"] = {"path": lock.path, "waited_s": round_(lock.waited_s, 3)}
            self.deadline += lock.waited_s
            gpu_before = state(self.device_str)
        try:
            try:
                kdata, ks = self._time_side(self.cand, "kernel")
                with self._candidate_stopped(timing):
                    rdata, rs = self._time_side(self.ref, "reference")
            except StageFailure as f:
                if f.kind != "method_unsupported":
                    raise
                timing["error"] = f.message
                self.result["notes"].append(f.message)
                return timing
            if ks is None:  # the kernel's process sent samples that cannot be true: ktui's clock decides
                timing["kernel_invalid_samples"] = kdata["invalid_samples"]
                ks = [float("inf")]
            timing["kernel"], timing["reference"] = stats_us(ks), stats_us(rs)
            timing["kernel_samples_us"] = [round_(x, 3) for x in ks[:2000] if math.isfinite(x)]
            timing["reference_samples_us"] = [round_(x, 3) for x in rs[:2000]]
            timing["batches"] = {"kernel": kdata["batches"], "reference": rdata["batches"]}
            timing["stopped"] = {"kernel": kdata["stopped"], "reference": rdata["stopped"]}
            self._cross_check(timing, ref_out)
            km, rm = timing["kernel"]["mean_us"], timing["reference"]["mean_us"]  # after the cross-checks
            timing["speedup"] = round_(rm / km, 4) if km else None
            if self._floor:
                timing["floor"] = self._floor
            if lock is not None:
                gpu_after = state(self.device_str)
                ours = set()
                for w in self.workers:
                    ours.update(w.proc.tree())
                timing["gpu_state"] = {"before": gpu_before, "after": gpu_after}
                busy = _not_idle(gpu_before, ours)
                if busy:
                    timing["gpu_not_idle"] = busy
                    self.result["notes"].append(f"the GPU was not idle while timing: {busy}")
        finally:
            if lock is not None:
                lock.release()
        return timing

    def judged_compare(self, ref, out, atol=None, rtol=None, input_dtype=None, cosine=None):
        """The judge's one comparison rule, for correctness, the wall-clock cross-check and every
        probe: the tolerance of the outputs' dtype, or of the inputs' precision when that is coarser
        (the trials' inputs), and the task's cosine metric where it has one. Explicit tolerances
        (an exact-sameness check: atol=rtol=0) are used as given, without the cosine metric. (The
        probes judged with the fp32 tolerance alone: fp16 tasks' honest kernels were "wrong while
        timed" at 1e-4 after passing correctness at 1e-2, on a real Harbor sweep.)"""
        explicit = atol is not None or rtol is not None
        if input_dtype is None:
            input_dtype = getattr(self, "input_dtype", None)
        if cosine is None and not explicit:
            cosine = getattr(self, "cosine", None)
        return compare_outputs(ref, out, atol=atol, rtol=rtol, input_dtype=input_dtype, cosine=cosine)

    def _cross_check(self, timing, ref_out):
        """The kernel's own timing vs the judge's clock: the same inputs as the timed loop (so
        caches behave the same; reuse of results is the probes' business), the output checked."""
        n = 1
        slots = ["t"]
        kper, kf, (kouts, keep) = self._wall(self.cand, slots, "kernel", check=True)
        knoise = self._noise_us(self.cand)
        with self._candidate_stopped(timing):
            rper, rf, _ = self._wall(self.ref, slots, "reference")
            rnoise = self._noise_us(self.ref)
        noise = {"kernel": knoise, "reference": rnoise}
        self._noise = noise
        wrong = []
        try:
            for i, o in zip(keep, kouts.value, strict=True):
                one = Held(o["outputs"], kouts.fds, owns=False)
                cmp = self.compare_checked(ref_out, one, f"the wall-clock run's call {i + 1}")
                if not cmp["passed"]:
                    wrong.append(f"forward {i + 1} of {kf}: {cmp['reason']}")
        finally:
            self.release(kouts)
        cc = {"inputs": n, "kernel_forwards": kf, "checked_calls": [k + 1 for k in keep], "reference_forwards": rf,
              "repeats": WALL_REPEATS,
              "kernel_wall_us": [round_(x, 3) for x in kper],
              "reference_wall_us": [round_(x, 3) for x in rper], "rtt_us": round_(self.cand.rtt_us, 3),
              "runqueue_wait_us": round_(self._rq_waited, 1),
              "noise_us": {k: round_(v, 1) for k, v in noise.items()}}
        timing["cross_check"] = cc
        total = self._wall_total
        if total > 0 and cc["runqueue_wait_us"] > WALL_BUSY_FRACTION * total:
            # said, not hidden: a kernel's own threads can make its worker wait for a CPU too
            self.result["notes"].append(
                f"the host was busy while ktui's clock ran: {100 * cc['runqueue_wait_us'] / total:.0f} % of that "
                "time was spent waiting for a CPU and was not counted; the timer cross-check is weaker for it")
        checks = self.result["checks"]
        if wrong:
            checks.append({"name": "timed_outputs_correct", "ok": False,
                           "detail": f"the output of the wall-clock run is wrong: {wrong[0]}"})
            self.result["findings"].append({"class": "wrong_while_timed", "reason": "outputs produced while timed "
                                            "are wrong (the kernel behaves differently when timed)",
                                            "evidence": wrong[:3]})
        invalid = timing.get("kernel_invalid_samples")
        for side, per, fw in (("kernel", kper, kf), ("reference", rper, rf)):
            st = timing[side]
            own = st["mean_us"]
            if side == "kernel" and invalid:
                detail = (f"the kernel's worker sent timing samples that cannot be true ({invalid}): its timer was "
                          f"tampered with; ktui's clock {min(per):.2f} μs per forward ({fw} forwards) is reported")
                checks.append({"name": "timer_cross_check", "ok": False, "detail": detail})
                self.result["findings"].append({"class": "timer_disagrees", "reason": detail,
                                                "evidence": {"invalid_samples": invalid, "wall_us": per}})
                timing["kernel"] = stats_us(per)
                timing["kernel"]["source"] = "judge wall clock"
                cc["kernel_wall_us"] = round_(min(per), 3)
                continue
            # a disagreement is confirmed before it is reported: the worker's timer and ktui's
            # clock are measured again, back to back, so both see the same host (a busy spell
            # between the first two measurements slows only one of them); a changed timer stays
            # off in every re-measurement. When they then agree, the time reported is the
            # re-measured one (never the first, which ktui's clock did not confirm).
            tol = WALL_TOLERANCE_CPU if self.device_kind == "cpu" else WALL_TOLERANCE
            w = self.cand if side == "kernel" else self.ref
            # what a busy host adds to a pass of few forwards (one slow wake-up), per forward
            slack = WALL_SLACK_US + noise[side] / max(1, fw)
            remeasured = 0
            for _retry in range(WALL_CONFIRM):
                if own * (1 + tol) + slack >= min(per):
                    break
                remeasured += 1
                with self._candidate_stopped(timing) if side == "reference" else contextlib.nullcontext():
                    _d, again = self._time_side(w, side, cap_s=max(0.1, float(self.job.time_cap_s) / 4))
                    more, _f, _o = self._wall(w, slots, side)
                per = list(more)
                if again is None:  # invalid samples this time: the disagreement stands
                    st = {"invalid_samples": _d.get("invalid_samples")}
                    own = float("inf")
                    break
                st = stats_us(again)
                own = st["mean_us"]
            if remeasured and math.isfinite(own) and own * (1 + tol) + slack >= min(per):
                first = timing[side]["mean_us"]
                timing[side + "_first"] = timing[side]
                timing[side] = st
                timing[side + "_samples_us"] = [round_(x, 3) for x in again[:2000]]
                self.result["notes"].append(
                    f"the {side}'s first timing ({first:.2f} μs mean) disagreed with ktui's clock; timed again "
                    f"together with it ({remeasured}x), they agree: {own:.2f} μs is reported (a busy host?)")
            wall = min(per)
            cc[f"{side}_wall_us"] = round_(wall, 3)
            cc[f"{side}_wall_median_us"] = round_(sorted(per)[len(per) // 2], 3)
            if not math.isfinite(own) or own * (1 + tol) + slack < wall:
                detail = (f"the {side}'s own timing says {own:.2f} μs per forward (mean), ktui's clock "
                          f"{wall:.2f} μs ({fw} forwards + device synchronize, best of "
                          f"{WALL_REPEATS}): its timer or its work was tampered with, or work runs outside the "
                          "timed stream")
                checks.append({"name": "timer_cross_check" if side == "kernel" else "reference_timer_cross_check",
                               "ok": False, "detail": detail})
                self.result["findings"].append({"class": "timer_disagrees", "reason": detail,
                                                "evidence": {"own_median_us": own if math.isfinite(own) else None,
                                                             "wall_us": per}})
                # the reported time never comes from a source the kernel changed
                timing[side + "_own"] = st
                timing[side] = stats_us(per)
                timing[side]["source"] = "judge wall clock"
            elif self.device_kind == "cpu" and own * (1 + WALL_REPORT_TOLERANCE_CPU) + slack < wall:
                # on the CPU the judge's clock measures the same thing as the worker's timer: an
                # own timing well below it (but within the tolerance that makes a finding) is not
                # reported; the judge's clock is
                timing[side + "_own"] = st
                timing[side] = stats_us(per)
                timing[side]["source"] = "judge wall clock"
                self.result["notes"].append(
                    f"the {side}'s own timing ({own:.2f} μs mean) is {wall / max(own, 1e-9):.1f}x below ktui's clock "
                    f"({wall:.2f} μs per forward): ktui's clock is reported")
            else:
                st["source"] = "worker timer (bound before trace code loaded), cross-checked"
        if not any(c["name"] == "timer_cross_check" for c in checks):
            checks.append(agreeing_cross_check(timing["kernel"]["mean_us"], cc["kernel_wall_us"], kf,
                                               WALL_TOLERANCE_CPU if self.device_kind == "cpu" else WALL_TOLERANCE))
        self._interleaved(timing, cc)

    def _noise_us(self, w):
        """The slowest of 3 empty round trips to ``w`` now (μs): what waking up and answering
        costs on this host at this moment, which a pass of few forwards cannot average away."""
        worst = 0.0
        for _ in range(3):
            t = now()
            w.call("ping")
            worst = max(worst, (now() - t) * 1e6)
        return worst

    def _interleaved(self, timing, cc):
        """Identical calls vs interleaved calls, by ktui's clock, for both sides: the timed loops
        call a side again and again on one input; here the calls cycle over the correctness
        trials' inputs too (already in both workers). A kernel much faster on identical calls
        reuses results while timed; a reference much slower on them is slowed while timed (it
        would inflate the speedup). Either is a finding, and that side's time becomes the
        interleaved one (ktui's clock)."""
        n = int(self.job.correctness_trials)
        mixed = ["t"] + [f"c{i}" for i in range(1, n + 1)]
        if len(mixed) < 2:
            return
        kmix, _kf, _ = self._wall(self.cand, mixed, "kernel interleaved")
        with self._candidate_stopped(timing):
            rmix, _rf, _ = self._wall(self.ref, mixed, "reference interleaved")
        ident = {"kernel": cc["kernel_wall_us"], "reference": cc["reference_wall_us"]}
        inter = {"kernel": min(kmix), "reference": min(rmix)}
        cc["interleaved_inputs"] = len(mixed)
        cc["kernel_interleaved_us"] = round_(inter["kernel"], 3)
        cc["reference_interleaved_us"] = round_(inter["reference"], 3)
        fw = {"kernel": min(cc["kernel_forwards"], _kf), "reference": min(cc["reference_forwards"], _rf)}
        noise = getattr(self, "_noise", {}) or {}
        for side, faster_when_repeated in (("kernel", True), ("reference", False)):
            a, b = ident[side], inter[side]
            slow, fast = (b, a) if faster_when_repeated else (a, b)
            slack = WALL_SLACK_US + noise.get(side, 0.0) / max(1, fw[side])
            if not (slow > INTERLEAVED_RATIO * fast + slack):
                continue
            # measured again, both ways, before it is a finding: a pause of the host during one pass
            # (a loaded machine) must not make an honest side look slowed or replayed
            w = self.cand if side == "kernel" else self.ref
            if side == "kernel":
                again_ident, _f1, _ = self._wall(w, ["t"], "kernel")
                again_mix, _f2, _ = self._wall(w, mixed, "kernel interleaved")
            else:
                with self._candidate_stopped(timing):
                    again_ident, _f1, _ = self._wall(w, ["t"], "reference")
                    again_mix, _f2, _ = self._wall(w, mixed, "reference interleaved")
            a, b = min(a, min(again_ident)), min(b, min(again_mix))
            slow, fast = (b, a) if faster_when_repeated else (a, b)
            if not (slow > INTERLEAVED_RATIO * fast + slack):
                continue
            if faster_when_repeated:
                why = (f"the kernel is {slow / max(fast, 1e-9):.1f}x faster called again and again on one input "
                       f"({fast:.2f} μs per forward) than on {len(mixed)} interleaved inputs ({slow:.2f} μs): it reuses "
                       "results while timed; the interleaved time is reported")
                cls = "faster_on_repeated_calls"
            else:
                why = (f"the reference is {slow / max(fast, 1e-9):.1f}x slower called again and again on one input "
                       f"({slow:.2f} μs per forward) than on {len(mixed)} interleaved inputs ({fast:.2f} μs): it is "
                       "slower when timed than when not; the interleaved time is reported")
                cls = "reference_slower_when_timed"
            self.result["findings"].append({"class": cls, "reason": why,
                                            "evidence": {"identical_us": round_(a, 3), "interleaved_us": round_(b, 3)}})
            self.result["checks"].append({"name": "interleaved_calls" if side == "kernel" else
                                          "reference_interleaved_calls", "ok": False, "detail": why})
            timing[side + "_identical"] = timing[side]
            timing[side] = stats_us(kmix if side == "kernel" else rmix)
            timing[side]["source"] = "judge wall clock, interleaved inputs"

    def _host_bound(self):
        t = self.result.get("timing") or {}
        la = self.result.get("launches") or {}
        k = la.get("kernel") or {}
        st = t.get("kernel") or {}
        if not st or not k or t.get("method_used") == "host":
            return
        busy = (k.get("cuda_time_us") or 0.0) - (k.get("memcpy_time_us") or 0.0)
        med = st.get("median_us") or 0.0
        if med > 0 and busy < HOST_BOUND_FRACTION * med:
            pageable = any("pageable" in n.lower() for n in (k.get("names") or {}))
            why = (f"host-bound: GPU kernels run {busy:.1f} μs of the {med:.1f} μs per forward"
                   + (f"; a pageable host-to-device copy ({k.get('memcpy_time_us', 0):.1f} μs on the device) "
                      "dominates" if pageable else "; the rest is host work or copies"))
            t["host_bound"] = {"device_kernel_us": round_(busy, 3), "event_us": med, "pageable_copy": pageable,
                               "reason": why}
            self.result["notes"].append(why)


def own_runqueue_wait_ns():
    """Nanoseconds this thread (the judge's) spent runnable but waiting for a CPU
    (/proc/thread-self/schedstat); None if unknown."""
    try:
        with open("/proc/thread-self/schedstat") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _not_idle(before, ours):
    from .gpu import not_idle

    return not_idle(before, ours)


class ProbeContext:
    """What judge-side probes (ktui.engine.probes) can use: the two workers, the held values and
    the judge's comparison; they add `checks` and `findings` to the result."""

    def __init__(self, judge):
        self.judge = judge
        self.job = judge.job
        self.result = judge.result
        self.reference = judge.ref
        self.candidate = judge.cand
        self.compare = judge.judged_compare  # the judge's rule (tolerance by input precision, cosine)
        self.input_seed = judge.input_seed  # probes draw their inputs from it (never from job.seed)

    def trial(self, i, n, what):
        self.judge.trial(i, n, what)

    def reference_io(self, seed, slot):
        return self.judge.reference_io(seed, slot)

    def candidate_inputs(self, seed, slot):
        """Reference inputs (and outputs) for ``seed``, held by the judge and also put into the
        candidate worker's ``slot`` for a probe to run on. Returns (inputs, reference outputs)."""
        inputs, ref = self.judge.reference_io(seed, slot)
        v, f = inputs.send_args()
        self.candidate.call("put_inputs", {"slot": slot, "inputs": v}, f)
        return inputs, ref

    def candidate_forward(self, inputs, slot, return_inputs=False):
        return self.judge.candidate_forward(inputs, slot, return_inputs)

    def reference_probe(self, name, args, check, failing):
        """The reply (data, fds) of the reference worker's probe ``name``; None when the reference
        cannot run it (not fatal), after recording check ``check`` as not judged: ``failing``
        says why, followed by the reference's error."""
        try:
            return self.reference.call("probe", {"name": name, "args": args})
        except StageFailure as f:
            if f.fatal:
                raise
            self.add_check(check, None, f"{failing} ({one_line(f.message, 100)})")
            return None

    def hold(self, value, fds):
        """Hold a value tree a probe reply carried. Probe data is free-form, so its tensors and
        values are validated here (a descriptor naming a missing memfd, a bad dtype...): a
        malformed one ends the run as a protocol error, never a harness error."""
        try:
            protocol.check_value(value, len(fds), "probe data")
        except protocol.ProtocolError as exc:
            shm.close_fds(fds)
            raise StageFailure("checks", "protocol_error", f"worker protocol error in a probe's reply: {exc}",
                               trial=self.judge.cur_trial, fatal=True) from None
        return self.judge.hold(value, fds)

    def add_check(self, name, ok, detail):
        self.result["checks"].append({"name": name, "ok": ok, "detail": detail})

    def add_finding(self, cls, reason, evidence=None):
        self.result["findings"].append({"class": cls, "reason": reason, "evidence": evidence})


def judge(job, build=None, emit=None, cancel=None):
    """Judge one kernel (builds it too unless `build`, a BuildResult dict, says it is built)."""
    return Judge(job, emit=emit, cancel=cancel).run(build)


def build(job, emit=None, cancel=None):
    """Compile only: a candidate worker loads the kernel (its load_inline extensions build into
    the kernel's own build directory). Returns a BuildResult dict: {ok, build, failure, ...}."""
    j = Judge(job, emit=emit, cancel=cancel)
    t0 = now()
    res = {"ok": False, "build": None, "failure": None, "kernel_sha1": j.job.kernel_sha1,
           "build_key": j.job.build_key, "build_dir": j.job.build_dir}
    try:
        j.stage("startup")
        cand = j.start("candidate", w=j.spawn_candidate())
        j._setup(cand)
        j.stage("build")
        binfo = j.call_build(cand)
        res["build"] = dict(binfo)
        res["ok"] = bool(binfo["has_model"])
        if not res["ok"]:
            res["failure"] = {"stage": "build", "kind": "no_model", "message": "the kernel code defines no ModelNew"}
        j.end_stage()
        j.result["status"] = "completed"
    except StageFailure as f:
        res["failure"] = {"stage": f.stage, "kind": f.kind, "message": f.message, "detail": f.detail}
    except (Cancelled, Timeout) as exc:
        kind = "cancelled" if isinstance(exc, Cancelled) else "timeout"
        res["failure"] = {"stage": j.stage_name, "kind": kind, "message": f"{kind} {j.describe_position()}"}
    finally:
        res["environment"] = j.result.get("environment")
        res["sandbox"] = j.result.get("sandbox")
        j.close()
    res["seconds"] = round_(now() - t0, 3)
    return res


def run_request(request, emit=None, cancel=None):
    """Old entry point: one request dict -> one result dict."""
    return judge(Job.from_request(request), emit=emit, cancel=cancel)
