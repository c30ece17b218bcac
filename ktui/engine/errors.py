# ---- ktui repro harness: errors and small helpers ------------------------------------------
# Stdlib only: no torch (the app process loads this module). MIT license, part of ktui.
import hashlib
import math
import os
import time
import traceback


class KernelExit(Exception):
    """The kernel code called sys.exit() (or raised SystemExit / KeyboardInterrupt)."""


class StageFailure(Exception):
    def __init__(self, stage, kind, message, trial=None, fatal=False, detail=None, words=None):
        super().__init__(message)
        # who wrote `message`: None (the judge), "kernel" / "reference" (a worker that ran trace code:
        # a claim, read only through what the judge checks itself: claims.py)
        self.words = words
        self.stage = stage
        self.kind = kind
        self.message = message
        self.trial = trial
        self.fatal = fatal
        self.detail = detail


# ---- small helpers -----------------------------------------------------------------------------
def describe_position(stage, trial, what=None):
    """Where a worker was when it stopped, for a message: "during timing (held-out) trial 3"."""
    if not stage:
        return "before it started"
    where = stage
    if what and what not in ("trial",) and stage in ("timing", "checks", "memory", "launches"):
        where += f" ({what})"
    if what == "held-out":
        where += " held-out"
    if trial is not None and stage not in ("memory", "launches"):
        where += f" trial {trial}"
    return f"during {where}"


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


def now():
    return time.perf_counter()


def round_(x, nd=4):
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
    q1, q3 = quantile(xs, 0.25), quantile(xs, 0.75)
    iqr = q3 - q1
    # standard error of the median from the IQR (robust sigma = IQR / 1.349; SE = 1.2533 sigma / sqrt n)
    se = 1.2533 * (iqr / 1.349) / math.sqrt(n) if n > 1 else float("inf")
    rse = se / median if median > 0 else float("inf")
    return {
        "mean_us": round_(mean), "median_us": round_(median), "std_us": round_(std),
        "min_us": round_(xs[0]), "max_us": round_(xs[-1]), "cv": round_(std / mean if mean else 0.0, 5),
        "n": n, "q1_us": round_(q1), "q3_us": round_(q3), "iqr_us": round_(iqr),
        "rse": round_(min(rse, 1e6), 6),
    }


def quantile(xs, q):
    """Linear-interpolated quantile of a sorted list."""
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


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


# ---- guarded execution of model-written code -------------------------------------------------

def classify_exception(exc):
    """(kind, fatal) for an exception raised by kernel code. Read from the exception's classes,
    not by importing torch: this module is loaded by the app process too, which never imports it."""
    oom = any(c.__name__ == "OutOfMemoryError" and c.__module__.startswith("torch") for c in type(exc).__mro__)
    if oom or "out of memory" in str(exc).lower():
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


