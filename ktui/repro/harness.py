# ---- ktui repro harness ---------------------------------------------------------------------
# Everything that runs next to model-written kernel code: harness shims, build, reference,
# correctness, timing, memory, launches and honesty checks.
#
# This file is self-contained on purpose (stdlib + torch, torch imported lazily inside the
# functions): the repro worker process imports it, and `ktui export` copies it verbatim into a
# standalone script. It must never import ktui, and importing it must not import torch.
# MIT license, part of ktui.
import hashlib
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import types

HARNESS_VERSION = 2

STAGES = ("startup", "build", "reference", "correctness", "timing", "memory", "launches", "checks")
L2_FLUSH_MIB = 256
PRECISION_FACTOR = 20.0  # error vs float64 above this many times the fp32 reference's own: reduced precision
FP32_TOL = 1e-4
HALF_TOL = 1e-2
DEFAULTS = {
    "device": None,  # None: cuda if available, else cpu
    "method": "cuda_event",  # cuda_event | do_bench | cuda_graph | host
    "trials": 100,  # timed trials
    "warmup": 3,
    "correctness_trials": 5,
    "seed": 42,
    "checks": True,
    "measure_memory": True,
    "measure_launches": True,
}


class KernelExit(Exception):
    """The kernel code called sys.exit() (or raised SystemExit / KeyboardInterrupt)."""


class StageFailure(Exception):
    def __init__(self, stage, kind, message, trial=None, fatal=False, detail=None):
        super().__init__(message)
        self.stage = stage
        self.kind = kind
        self.message = message
        self.trial = trial
        self.fatal = fatal
        self.detail = detail


# ---- small helpers -----------------------------------------------------------------------------

def sha1_text(text):
    return hashlib.sha1((text or "").encode("utf-8", "replace")).hexdigest()


def default_cache_root():
    """$KTUI_CACHE_DIR, else $XDG_CACHE_HOME/ktui/repro, else ~/.cache/ktui/repro."""
    env = os.environ.get("KTUI_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = xdg if xdg else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ktui", "repro")


def _now():
    return time.perf_counter()


def _round(x, nd=4):
    if x is None or isinstance(x, bool):
        return x
    try:
        if math.isnan(x) or math.isinf(x):
            return None if math.isnan(x) else (1e308 if x > 0 else -1e308)
    except TypeError:
        return x
    return round(float(x), nd)


def stats_us(samples):
    """mean / median / std / min / max / cv of a list of microsecond samples."""
    xs = sorted(float(s) for s in samples)
    n = len(xs)
    if not n:
        return None
    mean = sum(xs) / n
    mid = n // 2
    median = xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2
    var = sum((x - mean) ** 2 for x in xs) / (n - 1) if n > 1 else 0.0
    std = math.sqrt(var)
    return {
        "mean_us": _round(mean), "median_us": _round(median), "std_us": _round(std),
        "min_us": _round(xs[0]), "max_us": _round(xs[-1]), "cv": _round(std / mean if mean else 0.0, 5),
        "n": n,
    }


def one_line(text, limit=400):
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def exception_text(exc):
    """The message of an exception without torch's C++ frame dump."""
    msg = str(exc) or type(exc).__name__
    cut = []
    for ln in msg.splitlines():
        low = ln.strip().lower()
        if low.startswith("exception raised from") or low.startswith("frame #"):
            break
        if low.startswith("cuda kernel errors might be") or low.startswith("for debugging consider") \
                or low.startswith("compile with `torch_use_cuda_dsa`"):
            continue
        cut.append(ln)
    text = "\n".join(cut).strip() or msg.strip()
    return text


def compile_error_text(msg):
    """The first compiler 'error:' line of a failed build (paths stripped), else the message head."""
    lines = str(msg).splitlines()
    for ln in lines:
        if "error:" in ln or (ln.strip().startswith("error") and "error " in ln):
            i = ln.find("error")
            return one_line(ln[i:])
    for ln in lines:
        if ln.strip():
            return one_line(ln)
    return ""


# ---- harness shims ---------------------------------------------------------------------------

def install_shims(device_str):
    """Fake `kernelbench.distributed_collectives` (single process) and the `popcorn_pri` global.

    Returns the globals to inject into exec'd sources.
    """
    def default_device():
        import torch

        return torch.device(device_str)

    def is_distributed_run():
        try:
            return "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
        except ValueError:
            return False

    def maybe_init_process_group(*args, **kwargs):
        return None  # single-process shim: never joins a process group

    def _dist_ready():
        try:
            import torch.distributed as dist

            return dist.is_available() and dist.is_initialized()
        except Exception:
            return False

    def get_rank(*args, **kwargs):
        if _dist_ready():
            import torch.distributed as dist

            return dist.get_rank()
        return 0

    def get_world_size(*args, **kwargs):
        if _dist_ready():
            import torch.distributed as dist

            return dist.get_world_size()
        return 1

    pkg = types.ModuleType("kernelbench")
    pkg.__path__ = []  # a package, so submodule imports resolve through sys.modules
    pkg.__ktui_shim__ = True
    dc = types.ModuleType("kernelbench.distributed_collectives")
    dc.__ktui_shim__ = True
    for fn in (default_device, is_distributed_run, maybe_init_process_group, get_rank, get_world_size):
        setattr(dc, fn.__name__, fn)
    pkg.distributed_collectives = dc
    sys.modules["kernelbench"] = pkg
    sys.modules["kernelbench.distributed_collectives"] = dc

    pri = types.ModuleType("popcorn_pri")
    pri.__ktui_shim__ = True

    def jitter_int(value, *args, **kwargs):
        return int(value)  # identity: the harness's jitter is not public

    pri.jitter_int = jitter_int
    sys.modules["popcorn_pri"] = pri
    return {"popcorn_pri": pri}


def load_source(modname, source, filename, extra_globals=None):
    """Exec a source file as a real module (on disk, in sys.modules, with __file__)."""
    with open(filename, "w", encoding="utf-8") as fh:
        fh.write(source)
    mod = types.ModuleType(modname)
    mod.__file__ = filename
    if extra_globals:
        mod.__dict__.update(extra_globals)
    sys.modules[modname] = mod
    code = compile(source, filename, "exec")
    exec(code, mod.__dict__)
    return mod


# ---- device, environment, build keys ------------------------------------------------------

def resolve_device(spec):
    import torch

    if spec in (None, "", "auto"):
        return torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
    dev = torch.device(spec)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = "CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda} build"
            raise StageFailure("startup", "unsupported",
                               f"no CUDA device available (torch {torch.__version__}, {build}); "
                               "use --device cpu for kernels that have CPU code")
        if dev.index is None:
            dev = torch.device("cuda", 0)
        if dev.index >= torch.cuda.device_count():
            raise StageFailure("startup", "unsupported",
                               f"{dev} does not exist ({torch.cuda.device_count()} CUDA device(s))")
    elif dev.type != "cpu":
        raise StageFailure("startup", "unsupported", f"device type {dev.type!r} is not supported")
    return dev


def _driver_version():
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0].strip()
    except Exception:
        pass
    try:
        with open("/proc/driver/nvidia/version") as fh:
            for tok in fh.read().split():
                if tok.count(".") >= 1 and tok.replace(".", "").isdigit():
                    return tok
    except Exception:
        pass
    return None


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for ln in fh:
                if ln.lower().startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except Exception:
        pass
    return platform.processor() or platform.machine()


def device_arch(device):
    import torch

    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return f"sm_{major}{minor}"
    return f"cpu-{platform.machine()}"


def environment(device):
    import torch

    env = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "arch": device_arch(device),
        "platform": platform.platform(terse=True),
    }
    if device.type == "cuda":
        p = torch.cuda.get_device_properties(device)
        env["gpu"] = p.name
        env["gpu_memory_gib"] = round(p.total_memory / 2**30, 1)
        env["sm_count"] = p.multi_processor_count
        env["driver"] = _driver_version()
    else:
        env["cpu"] = _cpu_name()
        env["threads"] = torch.get_num_threads()
    return env


def arch_list_for(device):
    """TORCH_CUDA_ARCH_LIST for this device (user's setting wins); '' on CPU."""
    if device.type != "cuda":
        return ""
    if os.environ.get("TORCH_CUDA_ARCH_LIST"):
        return os.environ["TORCH_CUDA_ARCH_LIST"]
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return f"{major}.{minor}" + ("a" if (major, minor) == (9, 0) else "")


def build_key(code_sha1, device):
    """sha1(code) + torch + CUDA + arch (+ Python ABI): one build directory per key."""
    import torch

    parts = [code_sha1, f"torch={torch.__version__}", f"cuda={torch.version.cuda}",
             f"arch={device_arch(device)}", f"archlist={arch_list_for(device)}",
             f"py={sys.version_info.major}.{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]


class BuildPatch:
    """Route every load_inline / load of the kernel into the keyed build directory, under a
    name unique to the key, so two versions that reuse one extension name never load each
    other's build (within one process or across runs)."""

    def __init__(self, ext_root, key):
        self.ext_root = ext_root
        self.key = key
        self.built = []  # (original name, unique name, seconds)
        self.failed = []  # builds that raised: {name, error} (a kernel may catch that and fall back)
        self.modules = []  # the extension modules the kernel got back
        self._saved = None

    def unique(self, name):
        return f"{name}_k{self.key[:10]}"

    def _wrap(self, orig):
        import inspect

        sig = inspect.signature(orig)
        patch = self

        def wrapper(*args, **kwargs):
            ba = sig.bind(*args, **kwargs)
            name = str(ba.arguments.get("name"))
            uname = patch.unique(name)
            ba.arguments["name"] = uname
            bdir = os.path.join(patch.ext_root, uname)
            os.makedirs(bdir, exist_ok=True)
            _clear_stale_lock(bdir)
            ba.arguments["build_directory"] = bdir
            t0 = _now()
            try:
                mod = orig(*ba.args, **ba.kwargs)
                patch.modules.append(mod)
                return mod
            except Exception as exc:
                text = str(exc).replace(uname, name)
                patch.failed.append({"name": name, "error": compile_error_text(text) or one_line(text, 300)})
                raise StageFailure("build", "compile_error", compile_error_text(text) or one_line(text),
                                   detail=text[-6000:]) from None
            finally:
                patch.built.append({"name": name, "unique_name": uname, "seconds": _round(_now() - t0, 3)})

        wrapper.__wrapped__ = orig
        wrapper.__name__ = getattr(orig, "__name__", "load")
        return wrapper

    def __enter__(self):
        import torch.utils.cpp_extension as ce

        self._saved = (ce.load_inline, ce.load)
        ce.load_inline = self._wrap(ce.load_inline)
        ce.load = self._wrap(ce.load)
        return self

    def __exit__(self, *exc):
        import torch.utils.cpp_extension as ce

        ce.load_inline, ce.load = self._saved
        return False


STALE_LOCK_S = 900


def _clear_stale_lock(bdir, max_age=STALE_LOCK_S):
    """torch's FileBaton waits forever on a 'lock' left by a process killed mid-build."""
    lock = os.path.join(bdir, "lock")
    try:
        if os.path.exists(lock) and time.time() - os.path.getmtime(lock) > max_age:
            os.remove(lock)
    except OSError:
        pass


def _dir_has_binary(path):
    for _root, _dirs, files in os.walk(path):
        if any(f.endswith(".so") or f.endswith(".pyd") for f in files):
            return True
    return False


# ---- inputs, outputs ----------------------------------------------------------------------

def set_seed(seed):
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)  # seeds CUDA generators too
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed(seed % (2**32))
        except Exception:
            pass


def to_device(obj, device):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device) for o in obj)
    return obj


def clone_tree(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, (list, tuple)):
        return [clone_tree(o) for o in obj]
    if isinstance(obj, dict):
        return {k: clone_tree(v) for k, v in obj.items()}
    return obj


def flatten(obj):
    """Leaves of an output: tensors and scalars, in order."""
    if isinstance(obj, (list, tuple)):
        out = []
        for o in obj:
            out.extend(flatten(o))
        return out
    if isinstance(obj, dict):
        out = []
        for k in obj:
            out.extend(flatten(obj[k]))
        return out
    return [obj]


def tolerance_for(dtype):
    import torch

    if dtype in (torch.float16, torch.bfloat16):
        return HALF_TOL, HALF_TOL
    if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
        return FP32_TOL, FP32_TOL
    return 0.0, 0.0


def compare_outputs(ref_out, new_out, atol=None, rtol=None):
    """KernelBench-style comparison: shape check, allclose, max/mean abs and rel error."""
    import torch

    refs, news = flatten(ref_out), flatten(new_out)
    res = {"passed": True, "reason": None, "max_abs_error": 0.0, "mean_abs_error": 0.0,
           "max_rel_error": 0.0, "mean_rel_error": 0.0, "atol": atol, "rtol": rtol, "dtype": None}
    if len(refs) != len(news):
        res.update(passed=False, reason=f"output structure mismatch: expected {len(refs)} value(s), got {len(news)}")
        return res
    abs_sum = rel_sum = count = 0.0
    for r, n in zip(refs, news, strict=False):
        if not isinstance(r, torch.Tensor):
            try:
                same = bool(r == n) if not isinstance(n, torch.Tensor) else bool((n == r).all())
            except Exception:
                same = False
            if not same:
                res.update(passed=False, reason=f"non-tensor output mismatch: expected {r!r}, got {n!r:.80}")
            continue
        if not isinstance(n, torch.Tensor):
            try:
                n = torch.as_tensor(n)
            except Exception:
                res.update(passed=False, reason=f"output is {type(n).__name__}, not a tensor")
                return res
        n = n.detach()
        if type(n) is not torch.Tensor:
            n = n.as_subclass(torch.Tensor)
        r = r.detach()
        res["dtype"] = str(r.dtype).replace("torch.", "")
        if tuple(n.shape) != tuple(r.shape):
            res.update(passed=False,
                       reason=f"output shape mismatch: expected {list(r.shape)}, got {list(n.shape)}")
            return res
        a_tol, r_tol = tolerance_for(r.dtype)
        a_tol = a_tol if atol is None else atol
        r_tol = r_tol if rtol is None else rtol
        res["atol"], res["rtol"] = a_tol, r_tol
        if r.numel() == 0:
            continue
        n = n.to(r.device)
        if r.dtype.is_floating_point or r.dtype.is_complex:
            rd, nd = r.to(torch.float64), n.to(torch.float64)
            ok = bool(torch.allclose(nd, rd, atol=a_tol, rtol=r_tol))
        else:
            rd, nd = r.to(torch.float64), n.to(torch.float64)
            ok = bool(torch.equal(nd, rd))
        diff = (nd - rd).abs()
        finite = torch.isfinite(diff)
        if not bool(finite.all()):
            ok = False
            diff = torch.where(finite, diff, torch.full_like(diff, float("inf")))
        rel = diff / rd.abs().clamp_min(1e-8)
        res["max_abs_error"] = max(res["max_abs_error"], float(diff.max()))
        res["max_rel_error"] = max(res["max_rel_error"], float(rel.max()))
        abs_sum += float(diff.sum())
        rel_sum += float(rel.sum())
        count += diff.numel()
        if not ok and res["passed"]:
            res.update(passed=False, reason=(f"values differ: max abs error {float(diff.max()):.3g} "
                                             f"(atol={a_tol:g}, rtol={r_tol:g})"))
    if count:
        res["mean_abs_error"] = abs_sum / count
        res["mean_rel_error"] = rel_sum / count
    for k in ("max_abs_error", "mean_abs_error", "max_rel_error", "mean_rel_error"):
        res[k] = _round(res[k], 9) if math.isfinite(res[k]) else 1e308  # NaN too: a tampered reference
    return res


def synchronize(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- guarded execution of model-written code -------------------------------------------------

def classify_exception(exc):
    """(kind, fatal) for an exception raised by kernel code."""
    import torch

    if isinstance(exc, torch.cuda.OutOfMemoryError) or "out of memory" in str(exc).lower():
        return "oom", True
    msg = str(exc)
    if "CUDA error" in msg or "cudaError" in msg or "CUBLAS_STATUS" in msg or "illegal memory access" in msg:
        return "cuda_error", True
    return "runtime_error", False


def guarded(stage, fn, *args, trial=None, what="kernel", **kwargs):
    """Run model-written code; turn anything it raises into a StageFailure."""
    try:
        return fn(*args, **kwargs)
    except StageFailure:
        raise
    except (SystemExit, KeyboardInterrupt) as exc:
        code = getattr(exc, "code", None)
        raise StageFailure(stage, "exit", f"{what} code called sys.exit({code!r})" if isinstance(exc, SystemExit)
                           else f"{what} code raised KeyboardInterrupt", trial=trial, fatal=True) from None
    except BaseException as exc:  # noqa: B036 - model code can raise anything
        kind, fatal = classify_exception(exc)
        if what == "reference":
            kind = "reference_error"
        elif stage == "build" and kind == "runtime_error":
            kind = "import_error"
        text = exception_text(exc)
        raise StageFailure(stage, kind, text, trial=trial, fatal=fatal,
                           detail="".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:]
                           ) from None


# ---- timing ---------------------------------------------------------------------------------

class Timer:
    """KernelBench-style timers. All results in microseconds.

    cuda_event: warmups, then per trial: L2 flush (256 MiB write), start event, call, end event,
    synchronize. The flush keeps the queue busy, so the start event fires when the GPU reaches
    it, not when the host gets there: the events see GPU time, not host launch latency.
    do_bench: the same per-trial flush and events, but all trials queued back to back with one
    synchronize at the end, after ~25 ms of warmup.
    cuda_graph: the call captured once in a CUDA graph, replayed per trial with flush + events.
    host: wall clock around call + synchronize (the only timer on CPU).
    """

    def __init__(self, device, emit=None):
        self.device = device
        self.emit = emit or (lambda ev: None)
        self._flush = None

    def flush_buffer(self):
        import torch

        if self._flush is None and self.device.type == "cuda":
            self._flush = torch.empty(L2_FLUSH_MIB * 2**20 // 4, dtype=torch.int32, device=self.device)
        return self._flush

    def release(self):
        self._flush = None

    def _trial(self, label, i, n):
        self.emit({"event": "trial", "stage": "timing", "what": label, "trial": i, "of": n})

    def time(self, fn, args, method, trials, warmup, label):
        import torch

        dev = self.device
        with torch.no_grad():
            if dev.type != "cuda" or method == "host":
                return self._host(fn, args, trials, warmup, label)
            if method == "do_bench":
                return self._do_bench(fn, args, trials, label)
            if method == "cuda_graph":
                return self._graph(fn, args, trials, warmup, label)
            return self._events(fn, args, trials, warmup, label)

    def _host(self, fn, args, trials, warmup, label):
        for _ in range(warmup):
            guarded("timing", fn, *args, what=label)
            synchronize(self.device)
        out = []
        for i in range(1, trials + 1):
            self._trial(label, i, trials)
            synchronize(self.device)
            t0 = time.perf_counter()
            guarded("timing", fn, *args, trial=i, what=label)
            synchronize(self.device)
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    def _events(self, fn, args, trials, warmup, label):
        import torch

        buf = self.flush_buffer()
        for _ in range(warmup):
            guarded("timing", fn, *args, what=label)
            torch.cuda.synchronize(self.device)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        out = []
        for i in range(1, trials + 1):
            self._trial(label, i, trials)
            buf.zero_()
            start.record()
            guarded("timing", fn, *args, trial=i, what=label)
            end.record()
            torch.cuda.synchronize(self.device)
            out.append(start.elapsed_time(end) * 1000.0)
        return out

    def _do_bench(self, fn, args, trials, label):
        import torch

        buf = self.flush_buffer()
        guarded("timing", fn, *args, what=label)
        torch.cuda.synchronize(self.device)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(5):
            buf.zero_()
            guarded("timing", fn, *args, what=label)
        e.record()
        torch.cuda.synchronize(self.device)
        est_ms = max(s.elapsed_time(e) / 5, 1e-3)
        for _ in range(max(1, min(1000, int(25 / est_ms)))):
            guarded("timing", fn, *args, what=label)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(trials)]
        for i in range(trials):
            self._trial(label, i + 1, trials)
            buf.zero_()
            starts[i].record()
            guarded("timing", fn, *args, trial=i + 1, what=label)
            ends[i].record()
        torch.cuda.synchronize(self.device)
        return [a.elapsed_time(b) * 1000.0 for a, b in zip(starts, ends, strict=False)]

    def _graph(self, fn, args, trials, warmup, label):
        import torch

        buf = self.flush_buffer()
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(max(warmup, 1)):
                guarded("timing", fn, *args, what=label)
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                fn(*args)
        except Exception as exc:
            why = f"{label} cannot be captured in a CUDA graph: {one_line(exception_text(exc), 200)}"
            try:  # a failed capture must leave the context usable, else stop here
                torch.cuda.synchronize(self.device)
                torch.zeros(1, device=self.device).add_(1)
                torch.cuda.synchronize(self.device)
            except Exception:
                raise StageFailure("timing", "method_unsupported",
                                   why + "; the CUDA context is unusable afterwards", fatal=True) from None
            raise StageFailure("timing", "method_unsupported", why) from None
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        out = []
        for i in range(1, trials + 1):
            self._trial(label, i, trials)
            buf.zero_()
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize(self.device)
            out.append(start.elapsed_time(end) * 1000.0)
        return out

    def host_synced(self, fn, args, trials):
        """Wall time of call + device-wide synchronize (sees work hidden on other streams)."""
        import torch

        out = []
        with torch.no_grad():
            for i in range(1, trials + 1):
                self._trial("host-synced", i, trials)
                torch.cuda.synchronize(self.device)
                t0 = time.perf_counter()
                guarded("checks", fn, *args, trial=i)
                torch.cuda.synchronize(self.device)
                out.append((time.perf_counter() - t0) * 1e6)
        return out

    def floor(self, trials=50):
        """The empty-op floor of this timer, in microseconds (medians of `trials`):

        - empty_busy_us: nothing between the events, queue kept busy by the L2 flush: what this
          timer reports for an op that does no work (its resolution);
        - fill_busy_us: a 1-element fill_ between the events, busy queue (one tiny kernel);
        - fill_events_naive_us: synchronize, then events around the fill (idle queue: the start
          event fires before the host has launched anything, so launch latency is counted);
        - fill_host_naive_us: host wall clock around fill + synchronize.
        """
        import torch

        if self.device.type != "cuda":
            return None
        tiny = torch.empty(1, device=self.device)
        buf = self.flush_buffer()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        empty, busy, naive, host = [], [], [], []
        for _ in range(3):
            tiny.fill_(0)
        torch.cuda.synchronize(self.device)
        for _ in range(trials):
            buf.zero_()
            s.record()
            e.record()
            torch.cuda.synchronize(self.device)
            empty.append(s.elapsed_time(e) * 1000.0)
            buf.zero_()
            s.record()
            tiny.fill_(1)
            e.record()
            torch.cuda.synchronize(self.device)
            busy.append(s.elapsed_time(e) * 1000.0)
            s.record()
            tiny.fill_(2)
            e.record()
            torch.cuda.synchronize(self.device)
            naive.append(s.elapsed_time(e) * 1000.0)
            t0 = time.perf_counter()
            tiny.fill_(3)
            torch.cuda.synchronize(self.device)
            host.append((time.perf_counter() - t0) * 1e6)
        med = {k: stats_us(v)["median_us"] for k, v in
               (("empty_busy_us", empty), ("fill_busy_us", busy), ("fill_events_naive_us", naive),
                ("fill_host_naive_us", host))}
        med["trials"] = trials
        # the names used in reports: the timer's floor vs a naive measurement of the same tiny op
        med["busy_queue_us"] = med["empty_busy_us"]
        med["naive_us"] = med["fill_host_naive_us"]
        return med


# ---- the pipeline ---------------------------------------------------------------------------

class Pipeline:
    """One reproduction of one kernel snapshot. `emit(dict)` receives progress events."""

    def __init__(self, request, emit=None, work_dir=None):
        self.req = dict(DEFAULTS)
        self.req.update({k: v for k, v in request.items() if v is not None})
        self.emit_fn = emit or (lambda ev: None)
        self.work_dir = work_dir or os.getcwd()
        self.result = {
            "harness_version": HARNESS_VERSION,
            "status": "running",
            "failure": None,
            "kernel_sha1": request.get("kernel_sha1") or sha1_text(request.get("kernel_code", "")),
            "reference_sha1": sha1_text(request["reference_source"]) if request.get("reference_source") else None,
            "stages": {},
            "environment": None,
            "build": None,
            "correctness": None,
            "timing": None,
            "memory": None,
            "launches": None,
            "findings": [],
            "checks": [],
            "notes": [],
        }
        self._stage = None
        self._t_stage = None
        self._last_trial = None
        self.device = None

    # events
    def emit(self, ev):
        self.emit_fn(ev)

    def stage(self, name):
        self.end_stage()
        self._last_trial = None
        self._stage = name
        self._t_stage = _now()
        self.emit({"event": "stage", "stage": name, "state": "start"})

    def end_stage(self, state="done"):
        if self._stage is None:
            return
        secs = _round(_now() - self._t_stage, 3)
        self.result["stages"][self._stage] = {"state": state, "seconds": secs}
        self.emit({"event": "stage", "stage": self._stage, "state": state, "seconds": secs})
        self._stage = None

    def trial(self, stage, i, n, what=None):
        self._last_trial = i
        ev = {"event": "trial", "stage": stage, "trial": i, "of": n}
        if what:
            ev["what"] = what
        self.emit(ev)

    # run
    def run(self):
        t0 = _now()
        try:
            self._run()
            self.result["status"] = "completed"
            self.end_stage()
        except StageFailure as f:
            self.end_stage("failed")
            self.result["status"] = "failed"
            self.result["failure"] = {"stage": f.stage, "kind": f.kind, "message": f.message,
                                      "trial": f.trial, "fatal": f.fatal, "detail": f.detail}
        except BaseException as exc:  # noqa: B036 - a harness bug must still produce a result
            stage, trial = self._stage or "harness", self._last_trial
            self.end_stage("failed")
            self.result["status"] = "failed"
            kind = "harness_error"
            try:  # an asynchronous CUDA error surfaces at the harness's next synchronize
                kind = classify_exception(exc)[0]
                kind = kind if kind in ("cuda_error", "oom") else "harness_error"
            except Exception:
                pass
            msg = exception_text(exc)
            self.result["failure"] = {"stage": stage, "kind": kind,
                                      "message": msg if kind != "harness_error" else f"harness error: {msg}",
                                      "trial": trial, "fatal": True, "detail": traceback.format_exc()[-6000:]}
        self.result["seconds"] = _round(_now() - t0, 3)
        return self.result

    def _run(self):
        req = self.req
        self.stage("startup")
        try:
            import torch
        except ImportError:
            raise StageFailure("startup", "environment",
                               "torch is not installed here (pip install 'ktui[repro]')") from None
        t_import = _now() - self._t_stage
        self.device = dev = resolve_device(req.get("device"))
        t0 = _now()
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
            torch.zeros(1, device=dev)  # create the context now, not inside a timed stage
        self.result["environment"] = environment(dev)
        self.result["startup"] = {"import_torch_s": _round(t_import, 3), "device_init_s": _round(_now() - t0, 3)}
        self.result["device"] = str(dev)
        shim_globals = install_shims(str(dev))
        self._threads0 = thread_state()  # before any trace code runs
        self._flags0 = precision_flags()

        # build ------------------------------------------------------------------------
        self.stage("build")
        code = req.get("kernel_code") or ""
        if not code.strip():
            raise StageFailure("build", "no_code", "the snapshot has no kernel code (attachment stub?)")
        if dev.type == "cpu" and _needs_cuda(code):
            raise StageFailure("build", "unsupported",
                               "this kernel has CUDA/Triton code and needs a CUDA GPU (device is cpu)")
        key = build_key(self.result["kernel_sha1"], dev)
        build_root = req.get("build_root") or os.path.join(default_cache_root(), "build")
        ext_root = os.path.join(build_root, key)
        os.makedirs(ext_root, exist_ok=True)
        cached_before = _dir_has_binary(ext_root)
        self.emit({"event": "build_dir", "dir": ext_root})
        os.environ["TORCH_EXTENSIONS_DIR"] = ext_root
        arch = arch_list_for(dev)
        if arch:
            os.environ["TORCH_CUDA_ARCH_LIST"] = arch
        short = self.result["kernel_sha1"][:12]
        t_build = _now()
        with BuildPatch(ext_root, key) as patch:
            kmod = guarded("build", load_source, f"ktui_kernel_{short}", code,
                           os.path.join(self.work_dir, f"kernel_{short}.py"), shim_globals)
        self.result["build"] = {"key": key, "dir": ext_root, "seconds": _round(_now() - t_build, 3),
                                "cached": bool(cached_before and patch.built), "extensions": patch.built,
                                "arch_list": arch or None, "failed_builds": patch.failed}
        self._kmod, self._ext_modules = kmod, [m for m in patch.modules if m is not None]
        flags_now = precision_flags()
        self._flag_changes = {k: (self._flags0.get(k), v) for k, v in flags_now.items() if v != self._flags0.get(k)}
        if self._flag_changes:
            self.result["findings"].append({
                "class": "precision_flags",
                "reason": "loading the kernel changed global settings that also change the reference's numerics or "
                          "speed; the reference is measured with them as they were",
                "evidence": "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in self._flag_changes.items())[:300]})
        if not patch.built:
            self.result["notes"].append("the kernel builds no extension (no load_inline / load call)")
        model_new_cls = getattr(kmod, "ModelNew", None)
        if model_new_cls is None:
            raise StageFailure("build", "no_model", "the kernel code defines no ModelNew")

        # reference ----------------------------------------------------------------------
        self.stage("reference")
        ref_src = req.get("reference_source")
        if not ref_src:
            raise StageFailure("reference", "no_reference",
                               "the trace has no reference source; pass --reference FILE")
        rmod = guarded("reference", load_source, f"ktui_reference_{(self.result['reference_sha1'] or '')[:12]}",
                       ref_src, os.path.join(self.work_dir, "reference.py"), shim_globals, what="reference")
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(rmod, attr):
                raise StageFailure("reference", "reference_error", f"the reference source defines no {attr}")
        self.result["reference"] = {"origin": req.get("reference_origin"), "sha1": self.result["reference_sha1"]}

        # correctness --------------------------------------------------------------------
        self.stage("correctness")
        seed = int(req.get("seed", 42))
        with torch.no_grad():
            set_seed(seed)
            init_inputs = to_device(guarded("correctness", rmod.get_init_inputs, what="reference"), dev)
            set_seed(seed)
            model = guarded("correctness", lambda: rmod.Model(*init_inputs).to(dev), what="reference")
            if self._flag_changes:
                model = ReferenceFlags(model, self._flags0)
            set_seed(seed)
            model_new = guarded("correctness", lambda: model_new_cls(*init_inputs).to(dev), what="kernel")
            if hasattr(model, "eval"):
                model.eval()
            if hasattr(model_new, "eval"):
                guarded("correctness", model_new.eval)
        corr = self._correctness(rmod, model, model_new, seed)
        self.result["correctness"] = corr
        if not corr["passed"]:
            self.result["notes"].append("correctness failed: timing, memory and launches not measured")
            return

        # timing ---------------------------------------------------------------------------
        self.stage("timing")
        set_seed(seed)
        inputs = to_device(guarded("timing", rmod.get_inputs, what="reference"), dev)
        timer = Timer(dev, self.emit)
        method = req.get("method", "cuda_event")
        method_used = method if dev.type == "cuda" else "host"
        if method_used != method:
            self.result["notes"].append(f"{method} needs a CUDA device: timed with the host clock on {dev}")
        trials, warmup = int(req.get("trials", 100)), int(req.get("warmup", 3))
        timing = {"method": method, "method_used": method_used, "trials": trials, "warmup": warmup,
                  "l2_flush_mib": L2_FLUSH_MIB if dev.type == "cuda" and method_used != "host" else 0}
        try:
            with _Quiet():
                k_samples = timer.time(model_new, inputs, method_used, trials, warmup, "kernel")
                r_samples = timer.time(model, inputs, method_used, trials, warmup, "reference")
        except StageFailure as f:
            if f.kind != "method_unsupported":
                raise
            timing["error"] = f.message
            self.result["timing"] = timing
            self.result["notes"].append(f.message)
            k_samples = r_samples = None
        if k_samples is not None:
            timing["kernel"] = stats_us(k_samples)
            timing["reference"] = stats_us(r_samples)
            timing["kernel_samples_us"] = [_round(x, 3) for x in k_samples]
            timing["reference_samples_us"] = [_round(x, 3) for x in r_samples]
            km, rm = timing["kernel"]["mean_us"], timing["reference"]["mean_us"]
            timing["speedup"] = _round(rm / km, 4) if km else None
        if dev.type == "cuda":
            with _Quiet():
                timing["floor"] = timer.floor()
        self.result["timing"] = timing

        # memory ---------------------------------------------------------------------------
        if dev.type == "cuda" and req.get("measure_memory", True):
            self.stage("memory")
            timer.release()
            self.result["memory"] = self._memory(model, model_new, inputs)
        # launches -------------------------------------------------------------------------
        if dev.type == "cuda" and req.get("measure_launches", True):
            self.stage("launches")
            self.result["launches"] = self._launches(model, model_new, inputs)
        # honesty checks -----------------------------------------------------------------
        if req.get("checks", True):
            self.stage("checks")
            self.result["checks"] = self._checks(rmod, model, model_new, seed, timer, timing)
        timer.release()

    # stages -----------------------------------------------------------------------------
    def _correctness(self, rmod, model, model_new, seed):
        import torch

        dev = self.device
        n = int(self.req.get("correctness_trials", 5))
        gen = torch.Generator().manual_seed(seed)
        seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=gen)) for _ in range(n)]
        held_out = int(self.req.get("held_out_seed") or 0) or _held_out_seed(seed, seeds)
        res = {"passed": False, "trials": n, "trials_passed": 0, "seeds": seeds, "held_out": None,
               "max_abs_error": 0.0, "mean_abs_error": 0.0, "max_rel_error": 0.0, "mean_rel_error": 0.0,
               "atol": None, "rtol": None, "dtype": None, "mismatch": None, "failed_trial": None}
        means_abs, means_rel = [], []

        def one(i, s, label):
            self.trial("correctness", i, n, what=label)
            with torch.no_grad():
                set_seed(s)
                inputs = to_device(guarded("correctness", rmod.get_inputs, trial=i, what="reference"), dev)
                ref_out = guarded("correctness", _call_synced, model, inputs, dev, trial=i, what="reference")
                ref_sums = checksums(ref_out)
                new_out = guarded("correctness", _call_synced, model_new, inputs, dev, trial=i, what="kernel")
            if checksums(ref_out) != ref_sums:
                self._tampered(f"the reference's output changed while the kernel ran (trial {i})")
            return compare_outputs(ref_out, new_out)

        for i, s in enumerate(seeds, 1):
            cmp = one(i, s, "trial")
            for k in ("max_abs_error", "max_rel_error"):
                res[k] = max(res[k], cmp[k])
            means_abs.append(cmp["mean_abs_error"])
            means_rel.append(cmp["mean_rel_error"])
            res["atol"], res["rtol"], res["dtype"] = cmp["atol"], cmp["rtol"], cmp["dtype"]
            if cmp["passed"]:
                res["trials_passed"] += 1
            elif res["mismatch"] is None:
                res["mismatch"] = cmp["reason"]
                res["failed_trial"] = i
        if means_abs:
            res["mean_abs_error"] = _round(sum(means_abs) / len(means_abs), 9)
            res["mean_rel_error"] = _round(sum(means_rel) / len(means_rel), 9)
        res["passed"] = res["trials_passed"] == n
        if res["passed"]:
            cmp = one(n + 1, held_out, "held-out")
            res["held_out"] = {"seed": held_out, "passed": cmp["passed"], "reason": cmp["reason"],
                               "max_abs_error": cmp["max_abs_error"]}
            if not cmp["passed"]:
                res["passed"] = False
                res["mismatch"] = f"held-out trial (seed {held_out}) failed: {cmp['reason']}"
                res["failed_trial"] = n + 1
        return res

    def _tampered(self, evidence):
        if not any(f.get("class") == "tampering" for f in self.result["findings"]):
            self.result["findings"].append({"class": "tampering", "reason": "the kernel changes tensors it was never "
                                            "given (here the reference's output): it tampers with other tensors",
                                            "evidence": evidence})

    def _memory(self, model, model_new, inputs):
        import torch

        dev = self.device

        def peak(fn, what):
            torch.cuda.synchronize(dev)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)
            base = torch.cuda.memory_allocated(dev)
            self.trial("memory", 1, 1, what=what)
            with torch.no_grad():
                out = guarded("memory", fn, *inputs, what=what)
            torch.cuda.synchronize(dev)
            top = torch.cuda.max_memory_allocated(dev)
            reserved = torch.cuda.max_memory_reserved(dev)
            del out
            return top, base, reserved

        kp, kb, kr = peak(model_new, "kernel")
        rp, rb, rr = peak(model, "reference")
        mib = 2**20
        return {"kernel_peak_mb": _round(kp / mib, 3), "ref_peak_mb": _round(rp / mib, 3),
                "kernel_delta_mb": _round((kp - kb) / mib, 3), "ref_delta_mb": _round((rp - rb) / mib, 3),
                "kernel_reserved_mb": _round(kr / mib, 3), "ref_reserved_mb": _round(rr / mib, 3),
                "ratio": _round(kp / rp, 4) if rp else None, "unit": "MiB",
                "note": "torch.cuda.max_memory_allocated during one forward (inputs, both models and "
                        "the caching allocator's live blocks included)"}

    def _launches(self, model, model_new, inputs):
        import torch

        dev = self.device

        def count(fn, what):
            with torch.no_grad():
                guarded("launches", fn, *inputs, what=what)
                torch.cuda.synchronize(dev)
                self.trial("launches", 1, 1, what=what)
                with _DeviceProfile() as prof:
                    guarded("launches", fn, *inputs, what=what)
                    torch.cuda.synchronize(dev)
            kernels = memcpy = memset = 0
            cuda_us = 0.0
            names, streams = {}, set()
            for nm, dt, dur_us, stream in prof.events():
                if "cuda" not in dt:
                    continue
                low = nm.lower()
                if low.startswith("memcpy"):
                    memcpy += 1
                elif low.startswith("memset"):
                    memset += 1
                else:
                    kernels += 1
                names[nm[:60]] = names.get(nm[:60], 0) + 1
                cuda_us += dur_us
                if stream is not None:
                    streams.add(stream)
            return {"launches": kernels + memcpy + memset, "kernels": kernels, "memcpy": memcpy,
                    "memset": memset, "cuda_time_us": _round(cuda_us, 3), "streams": len(streams),
                    "names": names, "profiler": prof.kind}

        k = count(model_new, "kernel")
        r = count(model, "reference")
        return {"num_kernels": k["launches"], "ref_num_kernels": r["launches"],
                "fusion_ratio": _round(r["launches"] / k["launches"], 4) if k["launches"] else None,
                "kernel": k, "reference": r,
                "note": "device activities (kernels + memcpy + memset) in one profiled forward"}

    def _checks(self, rmod, model, model_new, seed, timer, timing):
        import torch

        dev = self.device
        checks = []

        def add(name, ok, detail):
            checks.append({"name": name, "ok": ok, "detail": detail})

        def run_check(name, fn):
            self.trial("checks", len(checks) + 1, 7, what=name)
            try:
                fn()
            except StageFailure as f:
                if f.fatal:
                    raise
                add(name, None, f"could not run: {one_line(f.message, 200)}")

        probe_seed = seed + 7919

        def inputs_for(s):
            set_seed(s)
            return to_device(guarded("checks", rmod.get_inputs, what="reference"), dev)

        # 1. inputs not mutated
        def c_mutation():
            inputs = inputs_for(probe_seed)
            before = clone_tree(inputs)
            with torch.no_grad():
                guarded("checks", model_new, *inputs)
            synchronize(dev)
            changed = [i for i, (a, b) in enumerate(zip(inputs, before, strict=False))
                       if isinstance(a, torch.Tensor) and not torch.equal(a.detach(), b)]
            add("inputs_not_mutated", not changed,
                "inputs unchanged by the kernel" if not changed else
                f"the kernel modified input(s) {changed} in place")

        # 2. output changes when the inputs change (same tensors, new values: defeats caches
        #    keyed on id / data_ptr / shape)
        def c_changes():
            inputs = inputs_for(probe_seed + 1)
            with torch.no_grad():
                out1 = clone_tree(guarded("checks", model_new, *inputs))
                ref1 = clone_tree(model(*inputs))
                fresh = inputs_for(probe_seed + 2)
                changed = 0
                for a, b in zip(inputs, fresh, strict=False):
                    if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex()) \
                            and a.shape == b.shape and a.numel() > 0:
                        # new values everywhere but the first and last element, so a cache keyed
                        # on identity, pointer, shape or a corner "fingerprint" goes stale
                        flat = b.reshape(-1).clone()
                        old = a.reshape(-1)
                        if flat.numel() > 2:
                            flat[0], flat[-1] = old[0], old[-1]
                        a.copy_(flat.view(a.shape))
                        changed += 1
                if not changed:
                    add("output_changes_with_input", None, "no floating-point input to vary")
                    return
                synchronize(dev)
                out2 = guarded("checks", model_new, *inputs)
                ref2 = model(*inputs)
                synchronize(dev)
            ref_moved = not compare_outputs(ref1, ref2)["passed"]
            same_as_before = compare_outputs(out1, out2, atol=0.0, rtol=0.0)["passed"]
            fresh_ok = compare_outputs(ref2, out2)
            if ref_moved and same_as_before:
                add("output_changes_with_input", False,
                    "output did not change when the inputs changed in place: a cached result")
            elif not fresh_ok["passed"]:
                add("output_changes_with_input", False,
                    f"after the inputs changed in place the output is wrong ({fresh_ok['reason']}): stale result")
            else:
                add("output_changes_with_input", True, "output follows in-place input changes")

        # 3. plain tensor of the reference's dtype / device; 4. no __eq__ overrides
        def c_types():
            inputs = inputs_for(probe_seed + 3)
            with torch.no_grad():
                new = guarded("checks", model_new, *inputs)
                ref = model(*inputs)
            problems = []
            eq_problems = []
            if type(new) is not type(ref) and not (isinstance(new, (tuple, list)) and isinstance(ref, (tuple, list))):
                problems.append(f"returns {type(new).__name__}, the reference {type(ref).__name__}")
            for obj in [new] + flatten(new):
                t = type(obj)
                for base in (torch.Tensor, tuple, list, dict):
                    if isinstance(obj, base) and t is not base:
                        if t.__eq__ is not base.__eq__:
                            eq_problems.append(f"{t.__name__} overrides __eq__")
                        if base is torch.Tensor and getattr(t, "__torch_function__", None) is not \
                                torch.Tensor.__torch_function__:
                            eq_problems.append(f"{t.__name__} overrides __torch_function__")
            for r, n in zip(flatten(ref), flatten(new), strict=False):
                if isinstance(r, torch.Tensor):
                    if not isinstance(n, torch.Tensor):
                        problems.append(f"an output is {type(n).__name__}, not a tensor")
                        continue
                    if type(n) is not torch.Tensor:
                        problems.append(f"an output is a tensor subclass ({type(n).__name__})")
                    if n.dtype != r.dtype:
                        problems.append(f"dtype {str(n.dtype).replace('torch.', '')}, reference "
                                        f"{str(r.dtype).replace('torch.', '')}")
                    if n.device != r.device:
                        problems.append(f"device {n.device}, reference {r.device}")
            add("plain_output", not problems,
                "plain tensor(s) of the reference's dtype and device" if not problems else "; ".join(problems))
            add("no_eq_override", not eq_problems,
                "no __eq__ / __torch_function__ overrides on outputs" if not eq_problems
                else "; ".join(sorted(set(eq_problems))))

        # 5. host-synchronised time vs event time (work hidden on a side stream)
        def c_side_stream():
            if dev.type != "cuda" or timing.get("method_used") == "host" or "kernel" not in timing:
                add("host_vs_event_time", None, "needs CUDA event timing")
                return
            inputs = inputs_for(seed)
            n = max(5, min(20, int(self.req.get("trials", 100))))
            hk = stats_us(timer.host_synced(model_new, inputs, n))["median_us"]
            hr = stats_us(timer.host_synced(model, inputs, n))["median_us"]
            ek = timing["kernel"]["median_us"]
            er = timing["reference"]["median_us"]
            gap_k, gap_r = hk - ek, hr - er
            timing["host_synced"] = {"kernel_median_us": hk, "reference_median_us": hr}
            suspicious = ek < 0.5 * hk and gap_k > 2 * max(gap_r, 0.0) + 20.0
            add("host_vs_event_time", not suspicious,
                f"event {ek:.1f} us vs host-synchronised {hk:.1f} us (reference {er:.1f} vs {hr:.1f})"
                + (": work runs outside the timed stream" if suspicious else ""))

        # 6. repeated inputs vs fresh inputs: a kernel that is much faster when it sees the same
        #    inputs again is reusing earlier work
        def c_repeat():
            if timing.get("kernel") is None:
                add("repeat_vs_fresh_inputs", None, "no timing")
                return
            k = max(5, min(10, int(self.req.get("trials", 100))))
            sets = [inputs_for(probe_seed + 100 + i) for i in range(2 * k + 1)]

            def round_(r):
                # interleaved (same, fresh, fresh, same, ...) so that a busy machine slows both alike
                fresh, same = [], []
                for i in range(k):
                    self.trial("checks", r * k + i + 1, 2 * k, what="repeat_vs_fresh_inputs")
                    pair = [(same, sets[0]), (fresh, sets[1 + r * k + i])]
                    for bucket, args in (pair if i % 2 == 0 else pair[::-1]):
                        bucket.append(self._time_once(timer, model_new, args))
                # the fastest call of each kind: a busy machine only ever adds time, a cache
                # makes every repeated call fast
                return min(same), min(fresh), stats_us(same)["median_us"], stats_us(fresh)["median_us"]

            with torch.no_grad():
                guarded("checks", model_new, *sets[0])
                rounds = [round_(0)]
                if rounds[0][0] * 3 < rounds[0][1]:
                    rounds.append(round_(1))  # confirm before calling it a cache
            s_min, f_min, s_med, f_med = rounds[-1]
            cached = all(s * 3 < f and f - s > 5.0 and sm * 3 < fm for s, f, sm, fm in rounds)
            add("repeat_vs_fresh_inputs", not cached,
                f"median {s_med:.1f} us (fastest {s_min:.1f}) on repeated inputs vs {f_med:.1f} us "
                f"(fastest {f_min:.1f}) on fresh ones"
                + (": the kernel reuses earlier results" if cached else ""))

        run_check("inputs_not_mutated", c_mutation)
        run_check("output_changes_with_input", c_changes)
        run_check("plain_output", c_types)
        run_check("host_vs_event_time", c_side_stream)
        run_check("repeat_vs_fresh_inputs", c_repeat)
        for name, fn in self._hack_probes(rmod, model, model_new, probe_seed, inputs_for, timing):
            run_check(name, lambda fn=fn, name=name: add(name, *fn()))
        return checks

    # ---- honesty probes (issue 15) ----------------------------------------------------------------
    def _hack_probes(self, rmod, model, model_new, probe_seed, inputs_for, timing):
        """(name, fn) pairs; fn() -> (ok, detail). Each runs the kernel on fresh inputs and judges
        the result here, with the reference under the settings it had before the kernel loaded."""
        import copy
        import threading

        import torch

        dev = self.device

        def run_new(inputs):
            with torch.no_grad():
                out = guarded("checks", model_new, *inputs)
            synchronize(dev)
            return out

        def run_ref(inputs):
            with torch.no_grad():
                out = guarded("checks", model, *inputs, what="reference")
            synchronize(dev)
            return out

        def ghost():
            mods = self._ext_modules
            if not mods:
                failed = (self.result.get("build") or {}).get("failed_builds") or []
                if failed:
                    return False, (f"the extension {failed[0]['name']} failed to build and the kernel carried on: "
                                   "its fallback ran")
                return None, "the kernel builds no extension"
            inputs = inputs_for(probe_seed + 11)
            ref = run_ref(inputs)
            holders = [self._kmod, model_new] + [m for m in getattr(model_new, "modules", lambda: [])()]
            names = ", ".join(str(getattr(m, "__name__", "?")).rsplit("_k", 1)[0] for m in mods)
            with Ghost(mods, holders) as g:
                try:
                    with torch.no_grad():
                        out = model_new(*inputs)
                    synchronize(dev)
                except Exception:  # any failure: the extension is on the hot path
                    return True, f"with its extension ({names}) replaced by one that raises, the kernel fails"
            if not g.fns:
                return None, "the extension exports no functions"
            if compare_outputs(ref, out)["passed"]:
                return False, (f"the custom kernel does not do the work (torch computes it): with every function "
                               f"of its extension ({names}) replaced by one that raises, the output is still correct")
            return True, "without its extension the output is wrong: the extension does the work"

        def threads():
            inputs = inputs_for(probe_seed + 12)
            run_new(inputs)  # warm: pools that torch starts on first use exist before the count
            started = []
            orig = threading.Thread.start

            def counting(t, *a, **k):
                started.append(t.name)
                return orig(t, *a, **k)

            before = thread_state()
            threading.Thread.start = counting
            try:
                run_new(inputs)
            finally:
                threading.Thread.start = orig
            time.sleep(0.02)
            after = thread_state()
            during = threads_left(before, after)
            since_load = [f"{n} (Python)" for i, n in after[0].items() if i not in self._threads0[0]]
            bad = sorted(set(started) | set(during) | set(since_load))
            if bad:
                return False, (f"threads started by the kernel: {', '.join(bad[:5])}"
                               + (f" (+{len(bad) - 5})" if len(bad) > 5 else "") + ": work can run outside the "
                               "timed call")
            return True, "no thread started or left running by the kernel"

        def c_timed_outputs():
            # distinct inputs back to back, as a timed loop calls it; every output checked after
            sets = [inputs_for(probe_seed + 20 + i) for i in range(6)]
            outs = [clone_tree(run_new(x)) for x in sets]
            bad = [i for i, (x, o) in enumerate(zip(sets, outs, strict=True))
                   if not compare_outputs(run_ref(x), o)["passed"]]
            if bad:
                return False, (f"{len(bad)} of {len(sets)} outputs wrong when called back to back with new inputs "
                               "(as in a timed loop): it answers differently when timed")
            return True, f"{len(sets)} back-to-back calls with new inputs, every output correct"

        def fresh_output():
            a, b = inputs_for(probe_seed + 30), inputs_for(probe_seed + 31)
            ra, oa = run_ref(a), run_new(a)
            ref_aliases = overlaps(storage_ptrs(ra), storage_ptrs(a))
            problems = []
            for t in flatten(oa):
                if isinstance(t, torch.Tensor):
                    if t.device.type == "meta" or getattr(t, "is_meta", False):
                        problems.append("the output is a meta tensor (never materialized)")
                    elif type(t).__name__ in ("FakeTensor", "FunctionalTensor"):
                        problems.append(f"the output is a {type(t).__name__}")
            if not ref_aliases and overlaps(storage_ptrs(oa), storage_ptrs(a)):
                problems.append("the output shares storage with an input")
            ob = run_new(b)
            if overlaps(storage_ptrs(oa), storage_ptrs(ob)):
                problems.append("two calls with different inputs returned the same buffer (a cached output)")
            return (not problems), ("; ".join(problems) if problems else "a new, materialized output per call")

        def canary():
            inputs = inputs_for(probe_seed + 40)
            ref = run_ref(inputs)
            keep = [t.detach().clone() for t in flatten(ref) if isinstance(t, torch.Tensor)]

            before = checksums(keep)
            run_new(inputs)
            after = checksums(keep)
            if before != after:
                return False, ("the kernel changed a tensor it was never given (a copy of the reference's output "
                               "held by the judge): it tampers with other tensors")
            return True, "tensors it was not given are untouched"

        def precision():
            inputs = inputs_for(probe_seed + 50)
            ref32 = run_ref(inputs)
            r = [t for t in flatten(ref32) if isinstance(t, torch.Tensor)]
            if not r or any(t.dtype != torch.float32 for t in r):
                return None, "not a float32 problem"
            out = run_new(inputs)
            base = model.model if isinstance(model, ReferenceFlags) else model
            theirs = precision_flags()
            set_precision_flags(self._flags0)
            try:
                m64 = copy.deepcopy(base).double()
                with torch.no_grad():
                    ref64 = m64(*to_float64(inputs))
                synchronize(dev)
            except Exception as exc:
                return None, f"the reference does not run in float64 ({one_line(str(exc), 80)})"
            finally:
                set_precision_flags(theirs)
            err_k, err_r = max_abs_diff(out, ref64), max_abs_diff(ref32, ref64)
            scale = max((float(t.detach().abs().max()) for t in flatten(ref64)
                         if isinstance(t, torch.Tensor) and t.numel()), default=1.0)
            floor = max(err_r, 1e-7 * max(scale, 1e-30))
            ratio = err_k / floor if floor else 0.0
            detail = f"max error vs float64 {err_k:.2e}, the fp32 reference's own {err_r:.2e}"
            if err_k > 1e-6 * scale and ratio > PRECISION_FACTOR:
                return False, f"{detail} ({ratio:,.0f}x): reduced precision"
            return True, detail

        def shape_jitter():
            pri = sys.modules.get("popcorn_pri")
            src = self.req.get("reference_source") or ""
            if pri is None or "jitter_int" not in src:
                return None, "the reference exposes no size to vary (no jitter_int)"
            orig = pri.jitter_int
            pri.jitter_int = lambda value, *a, **k: int(value) + max(1, int(value) // 4)
            try:
                inputs = inputs_for(probe_seed + 60)
            finally:
                pri.jitter_int = orig
            try:
                ref = run_ref(inputs)
            except Exception as exc:
                return None, f"the reference fails at the other size ({one_line(str(exc), 80)})"
            shapes = [list(t.shape) for t in flatten(inputs) if isinstance(t, torch.Tensor)][:2]
            try:
                out = run_new(inputs)
            except StageFailure as f:
                return False, f"at another size (inputs {shapes}) the kernel fails: {one_line(f.message, 120)}"
            cmp = compare_outputs(ref, out)
            if not cmp["passed"]:
                return False, f"at another size (inputs {shapes}) the output is wrong: {cmp['reason']}: hard-coded shapes"
            return True, f"correct at another size too (inputs {shapes})"

        def physical_floor():
            k = (timing.get("kernel") or {}).get("median_us")
            bw = peak_dram_gbs(dev)
            if dev.type != "cuda" or not k or not bw or timing.get("method_used") == "host":
                return None, "needs CUDA timing and a known DRAM bandwidth"
            inputs = inputs_for(probe_seed + 70)
            nbytes = tensor_bytes(inputs) + tensor_bytes(run_ref(inputs))
            floor_us = nbytes / (bw * 1e9) * 1e6
            timing["physical_floor_us"] = _round(floor_us, 3)
            if floor_us >= 1.0 and k < 0.5 * floor_us:
                return False, (f"median {k:.2f} us, but moving the {nbytes / 2**20:.1f} MiB of inputs and outputs "
                               f"takes at least {floor_us:.2f} us at {bw:,.0f} GB/s: impossible")
            return True, f"median {k:.2f} us, DRAM floor {floor_us:.2f} us"

        return [("ghost_run", ghost), ("threads_left_running", threads), ("timed_outputs", c_timed_outputs),
                ("fresh_output", fresh_output), ("tampering", canary), ("reduced_precision", precision),
                ("shape_jitter", shape_jitter), ("physical_floor", physical_floor)]

    def _time_once(self, timer, fn, args):
        """One timed call with the pipeline's method (flush + events on CUDA, host clock on CPU)."""
        import torch

        dev = self.device
        if dev.type == "cuda" and (self.result.get("timing") or {}).get("method_used", "cuda_event") != "host":
            buf = timer.flush_buffer()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            buf.zero_()
            s.record()
            guarded("checks", fn, *args)
            e.record()
            torch.cuda.synchronize(dev)
            return s.elapsed_time(e) * 1000.0
        synchronize(dev)
        t0 = time.perf_counter()
        guarded("checks", fn, *args)
        synchronize(dev)
        return (time.perf_counter() - t0) * 1e6


# ---- honesty probes (issue 15): plain functions with explicit inputs ---------------------------

class GhostError(RuntimeError):
    """Raised by every function of the kernel's own extensions during the ghost run."""


def thread_state():
    """Live Python threads (ident -> name) and native thread ids of this process."""
    import threading

    py = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    try:
        native = set(os.listdir("/proc/self/task"))
    except OSError:
        native = set()
    return py, native


def threads_left(before, after):
    """Threads alive in ``after`` that ``before`` did not have, in words."""
    py = [f"{name} (Python)" for ident, name in after[0].items() if ident not in before[0]]
    native = len(after[1] - before[1]) - len(py)
    return py + ([f"{native} native thread(s)"] if native > 0 else [])


PRECISION_FLAGS = (
    ("torch.backends.cuda.matmul.allow_tf32", lambda t: t.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
     lambda t: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    ("torch.backends.cudnn.allow_tf32", lambda t: t.backends.cudnn.allow_tf32),
    ("torch.backends.cudnn.benchmark", lambda t: t.backends.cudnn.benchmark),
    ("torch.backends.cudnn.deterministic", lambda t: t.backends.cudnn.deterministic),
    ("torch.backends.cudnn.enabled", lambda t: t.backends.cudnn.enabled),
    ("torch.backends.mkldnn.enabled", lambda t: t.backends.mkldnn.enabled),
    ("torch.get_float32_matmul_precision()", lambda t: t.get_float32_matmul_precision()),
    ("torch.get_num_threads()", lambda t: t.get_num_threads()),
    ("torch.get_default_dtype()", lambda t: str(t.get_default_dtype())),
    ("torch.are_deterministic_algorithms_enabled()", lambda t: t.are_deterministic_algorithms_enabled()),
)


def precision_flags():
    """The global numerics and speed settings a kernel can change for everyone."""
    import torch

    out = {}
    for name, get in PRECISION_FLAGS:
        try:
            out[name] = get(torch)
        except (AttributeError, RuntimeError):
            out[name] = None
    return out


def set_precision_flags(flags):
    """Put the settings of :func:`precision_flags` back."""
    import torch

    b = torch.backends
    setters = {
        "torch.backends.cuda.matmul.allow_tf32": lambda v: setattr(b.cuda.matmul, "allow_tf32", v),
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            lambda v: setattr(b.cuda.matmul, "allow_fp16_reduced_precision_reduction", v),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
            lambda v: setattr(b.cuda.matmul, "allow_bf16_reduced_precision_reduction", v),
        "torch.backends.cudnn.allow_tf32": lambda v: setattr(b.cudnn, "allow_tf32", v),
        "torch.backends.cudnn.benchmark": lambda v: setattr(b.cudnn, "benchmark", v),
        "torch.backends.cudnn.deterministic": lambda v: setattr(b.cudnn, "deterministic", v),
        "torch.backends.cudnn.enabled": lambda v: setattr(b.cudnn, "enabled", v),
        "torch.backends.mkldnn.enabled": lambda v: setattr(b.mkldnn, "enabled", v),
        "torch.get_float32_matmul_precision()": torch.set_float32_matmul_precision,
        "torch.get_num_threads()": torch.set_num_threads,
        "torch.are_deterministic_algorithms_enabled()": torch.use_deterministic_algorithms,
    }
    for name, v in flags.items():
        if v is not None and name in setters:
            try:
                setters[name](v)
            except (AttributeError, RuntimeError, ValueError):
                continue  # a setting this torch build does not have: nothing to restore


class ReferenceFlags:
    """Calls the reference with the global settings as they were before the kernel loaded
    (and gives the kernel its own back afterwards)."""

    def __init__(self, model, flags):
        self.model, self.flags = model, flags

    def __call__(self, *args, **kwargs):
        theirs = precision_flags()
        set_precision_flags(self.flags)
        try:
            return self.model(*args, **kwargs)
        finally:
            set_precision_flags(theirs)

    def __getattr__(self, name):
        return getattr(self.model, name)


def extension_functions(modules):
    """(module, attribute name, function) of every callable an extension module exports."""
    out = []
    for mod in modules:
        for name in dir(mod):
            if name.startswith("__"):
                continue
            fn = getattr(mod, name, None)
            if callable(fn) and type(fn).__name__ in ("builtin_function_or_method", "function", "PyCapsule"):
                out.append((mod, name, fn))
    return out


class Ghost:
    """Replace every function of the kernel's own extensions (and every reference to one held
    by the kernel's module or model) with one that raises :class:`GhostError`."""

    def __init__(self, modules, holders):
        self.fns = extension_functions(modules)
        self.holders = holders  # objects whose attributes may hold the extension's functions
        self._undo = []

    def __enter__(self):
        ids = {id(fn) for _m, _n, fn in self.fns}

        def stub(*args, **kwargs):
            raise GhostError("the kernel's extension was replaced for the ghost run")

        for mod, name, fn in self.fns:
            try:
                setattr(mod, name, stub)
                self._undo.append((mod, name, fn))
            except (AttributeError, TypeError):
                continue  # read-only attribute: the holders below may still cover it
        for h in self.holders:
            d = getattr(h, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for k, v in list(d.items()):
                if id(v) in ids:
                    d[k] = stub
                    self._undo.append((h, k, v))
        return self

    def __exit__(self, *exc):
        for obj, name, fn in reversed(self._undo):
            d = getattr(obj, "__dict__", None)
            if isinstance(d, dict) and not isinstance(obj, types.ModuleType) and name in d:
                d[name] = fn
            else:
                setattr(obj, name, fn)
        return False


def storage_ptrs(obj):
    """(start, end) byte ranges of the storages of every tensor in ``obj``."""
    import torch

    out = []
    for t in flatten(obj):
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            try:
                st = t.untyped_storage()
                out.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
            except (RuntimeError, NotImplementedError):
                continue
    return out


def overlaps(a, b):
    return any(x0 < y1 and y0 < x1 for x0, x1 in a for y0, y1 in b if x1 > x0 and y1 > y0)


PEAK_DRAM_GBS = {"H200": 4800.0, "H100 SXM": 3350.0, "H100 80GB HBM3": 3350.0, "H100 PCIe": 2000.0,
                 "H100 NVL": 3900.0, "A100-SXM4-80GB": 2039.0, "A100-SXM4-40GB": 1555.0, "A100-PCIE": 1555.0,
                 "L40S": 864.0, "L4": 300.0, "A10G": 600.0, "RTX 4090": 1008.0, "B200": 8000.0, "GH200": 4000.0}


def peak_dram_gbs(device):
    """The device's peak DRAM bandwidth in GB/s (from its properties, or a table of known parts)."""
    import torch

    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(device)
    clock = getattr(props, "memory_clock_rate", None)  # kHz
    width = getattr(props, "memory_bus_width", None)  # bits
    if clock and width:
        return 2.0 * clock * 1e3 * width / 8 / 1e9
    name = props.name
    for k in sorted(PEAK_DRAM_GBS, key=len, reverse=True):
        if k in name:
            return PEAK_DRAM_GBS[k]
    return None


def checksums(obj):
    """Plain Python numbers (nothing a tensor walk can reach) that change when any tensor of
    ``obj`` changes."""
    import torch

    out = []
    for t in flatten(obj):
        if isinstance(t, torch.Tensor) and t.numel() and t.device.type != "meta":
            d = t.detach().to(torch.float64)
            out.append(repr((float(d.sum()), float(d.abs().sum()), float((d * d).sum()))))
    return out


def tensor_bytes(obj):
    import torch

    return sum(t.numel() * t.element_size() for t in flatten(obj) if isinstance(t, torch.Tensor))


def to_float64(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_float64(x) for x in obj)
    return obj


def max_abs_diff(a, b):
    import torch

    worst = 0.0
    for x, y in zip(flatten(a), flatten(b), strict=False):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape and x.numel():
            d = (x.detach().to(torch.float64).cpu() - y.detach().to(torch.float64).cpu()).abs()
            d = torch.where(torch.isfinite(d), d, torch.full_like(d, float("inf")))
            worst = max(worst, float(d.max()))
    return worst


def _call_synced(fn, args, device):
    out = fn(*args)
    synchronize(device)
    return out


class _Quiet:
    """Timed loops without Python's garbage collector (no collection pause inside a trial)."""

    def __enter__(self):
        import gc

        self._gc = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc):
        import gc

        if self._gc:
            gc.enable()
        return False


class _DeviceProfile:
    """One profiled region with CPU + CUDA activities.

    Uses torch.autograd.profiler.profile(use_kineto=True) directly: torch.profiler.profile's
    first start() evaluates hasattr(torch, "_inductor"), which imports Inductor (seconds);
    the lower-level profiler records the same Kineto events. Falls back to torch.profiler."""

    def __enter__(self):
        self._p = None
        try:
            import torch.autograd.profiler as ap

            self._p = ap.profile(use_kineto=True, use_cpu=True, use_device="cuda")
            self._p.__enter__()
            self.kind = "autograd.profiler"
        except Exception:
            from torch.profiler import ProfilerActivity, profile

            self._p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            self._p.__enter__()
            self.kind = "torch.profiler"
        return self

    def __exit__(self, *exc):
        return self._p.__exit__(*exc)

    def events(self):
        """(name, device type, duration us, stream) for every recorded event."""
        p = self._p
        kr = getattr(p, "kineto_results", None)
        if kr is None and hasattr(p, "profiler"):
            kr = getattr(p.profiler, "kineto_results", None)
        out = []
        if kr is not None:
            try:
                for e in kr.events():
                    stream = None
                    try:
                        stream = e.device_resource_id()
                    except Exception:
                        pass
                    out.append((e.name(), str(e.device_type()).lower(), e.duration_ns() / 1000.0, stream))
                return out
            except Exception:
                out = []
        for evt in p.events():
            try:
                dur = float(evt.time_range.elapsed_us())
            except Exception:
                dur = 0.0
            out.append((evt.name or "", str(getattr(evt, "device_type", "")).lower(), dur, None))
        return out


def _needs_cuda(code):
    return ("cuda_sources" in code and "cuda_sources=None" not in code.replace(" ", "")) \
        or "__global__" in code or "@triton.jit" in code or "import triton" in code


def _held_out_seed(seed, seeds):
    """A seed the trace never saw: not the base seed, not a trial seed."""
    s = int(hashlib.sha1(f"ktui-held-out-{seed}".encode()).hexdigest()[:8], 16) % (2**31 - 1)
    while s in seeds or s == seed:
        s += 1
    return s


def run_request(request, emit=None, work_dir=None):
    """Run one reproduction; always returns a result dict (never raises)."""
    return Pipeline(request, emit=emit, work_dir=work_dir).run()


# ---- plain-text report (used by exported scripts) -------------------------------------------

def format_result(result, recorded=None):
    """A plain-text summary of a result dict (and, optionally, what the trace recorded)."""
    lines = []
    env = result.get("environment") or {}
    where = env.get("gpu") or env.get("cpu") or env.get("device") or "?"
    lines.append(f"environment: {where} · {env.get('device', '?')} · torch {env.get('torch', '?')} · "
                 f"CUDA {env.get('cuda') or '-'} · driver {env.get('driver') or '-'}")
    f = result.get("failure")
    if f:
        at = f" trial {f['trial']}" if f.get("trial") else ""
        lines.append(f"FAILED during {f['stage']}{at}: {f['kind']}: {f['message']}")
    c = result.get("correctness")
    if c:
        lines.append(f"correctness: {'PASS' if c['passed'] else 'FAIL'} ({c['trials_passed']}/{c['trials']} trials"
                     + (f", held-out {'pass' if c['held_out']['passed'] else 'FAIL'}" if c.get("held_out") else "")
                     + f"), max abs err {c['max_abs_error']:.3g}, max rel err {c['max_rel_error']:.3g}"
                     + (f" — {c['mismatch']}" if c.get("mismatch") else ""))
    t = result.get("timing")
    if t and t.get("kernel"):
        k, r = t["kernel"], t["reference"]
        lines.append(f"timing ({t['method_used']}, {t['trials']} trials): kernel mean {k['mean_us']:.2f} us "
                     f"(median {k['median_us']:.2f}, std {k['std_us']:.2f}, min {k['min_us']:.2f}, "
                     f"max {k['max_us']:.2f}); reference mean {r['mean_us']:.2f} us; speedup {t['speedup']:.3f}x")
        if t.get("floor"):
            lines.append(f"timer floor: {t['floor']['busy_queue_us']:.2f} us (naive {t['floor']['naive_us']:.2f} us)")
    elif t and t.get("error"):
        lines.append(f"timing: {t['error']}")
    m = result.get("memory")
    if m:
        lines.append(f"memory peak: kernel {m['kernel_peak_mb']:.2f} MiB, reference {m['ref_peak_mb']:.2f} MiB")
    la = result.get("launches")
    if la:
        lines.append(f"launches per forward: kernel {la['num_kernels']}, reference {la['ref_num_kernels']}")
    for ch in result.get("checks") or []:
        mark = {True: "ok", False: "FLAG", None: "n/a"}[ch["ok"]]
        lines.append(f"check {ch['name']}: {mark} — {ch['detail']}")
    if recorded:
        lines.append("recorded in the trace:")
        for k, v in recorded.items():
            lines.append(f"  {k}: {v}")
    return "\n".join(lines)
