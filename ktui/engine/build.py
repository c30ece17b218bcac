# ---- ktui repro harness: shims, device, environment, keyed builds ---------------------------
# Runs inside the sandboxed workers. Stdlib only (torch imported lazily). MIT license, part of ktui.
import hashlib
import os
import platform
import subprocess
import sys
import time
import types

from .buildcache import STALE_LOCK_S, _clear_stale_lock  # noqa: F401  (the judge side's; torch-free)
from .errors import StageFailure, compile_error_text, now, one_line, round_
from .words import count

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


def candidate_class(mod):
    """The candidate's model class: ``ModelNew`` (KernelBench's convention), else a ``Model`` that the
    kernel code defines itself (harnesses whose solution file replaces the reference's ``Model``, e.g.
    a ``solution.py`` beside ``baseline.py``). A ``Model`` imported from elsewhere (``from reference
    import Model``) is the reference's, not a candidate: None."""
    cls = getattr(mod, "ModelNew", None)
    if cls is not None:
        return cls
    cls = getattr(mod, "Model", None)
    if isinstance(cls, type) and getattr(cls, "__module__", None) == getattr(mod, "__name__", None):
        return cls
    return None


NO_MODEL = "the kernel code defines no ModelNew (nor a Model class of its own)"


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
                               f"{dev} does not exist ({count(torch.cuda.device_count(), 'CUDA device')})")
    elif dev.type != "cpu":
        raise StageFailure("startup", "unsupported", f"device type {dev.type!r} is not supported")
    return dev


def _driver_version():
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:  # noqa: BLE001 - no bindings, or any pynvml.NVMLError*: nvidia-smi is asked next
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass  # no nvidia-smi: the driver's /proc file next
    try:
        with open("/proc/driver/nvidia/version") as fh:
            for tok in fh.read().split():
                if tok.count(".") >= 1 and tok.replace(".", "").isdigit():
                    return tok
    except OSError:
        pass  # no NVIDIA driver here
    return None


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as fh:
            for ln in fh:
                if ln.lower().startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass  # no /proc/cpuinfo: what platform knows
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

    def __init__(self, ext_root, key, progress=None):
        self.ext_root = ext_root
        self.key = key
        self.progress = progress  # progress(what): "compiling NAME" before each build (a build event)
        self.built = []  # (original name, unique name, seconds)
        self.failed = []  # builds that raised: {name, error} (the kernel may catch that and fall back)
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
            t0 = now()
            if patch.progress is not None:
                try:
                    patch.progress(f"compiling {name} (MAX_JOBS={os.environ.get('MAX_JOBS', 'auto')})")
                except Exception:  # noqa: BLE001 - progress never stops a build
                    pass
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
                rec = {"name": name, "unique_name": uname, "seconds": round_(now() - t0, 3)}
                steps = ninja_steps(bdir, since=t0)
                if steps:  # where the build's time went: each compile and the link, by ninja's own log
                    rec["steps"] = steps
                patch.built.append(rec)

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


def ninja_steps(bdir, since=None):
    """The compile and link steps ninja ran in ``bdir`` for this build (its ``.ninja_log``: start
    and end in ms from the start of its run), those whose output file was written since ``since``
    (a ``now()`` reading): [{"output", "seconds", "start_s"}]; [] when ninja compiled nothing (a
    cached build) or left no log."""
    try:
        with open(os.path.join(bdir, ".ninja_log"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()[:5000]
    except OSError:
        return []
    t_wall = time.time() - (now() - since) - 1.0 if since is not None else 0.0
    latest = {}
    for ln in lines:
        parts = ln.split("\t")
        if ln.startswith("#") or len(parts) < 4:
            continue
        try:
            start, end = int(parts[0]), int(parts[1])
            if os.path.getmtime(os.path.join(bdir, parts[3])) < t_wall:
                continue  # built by an earlier run
        except (ValueError, OSError):
            continue
        latest[parts[3]] = {"output": os.path.basename(parts[3])[:80], "seconds": round_((end - start) / 1000.0, 3),
                            "start_s": round_(start / 1000.0, 3)}
    return sorted(latest.values(), key=lambda r: r["start_s"])[:50]


def _dir_has_binary(path):
    for _root, _dirs, files in os.walk(path):
        if any(f.endswith(".so") or f.endswith(".pyd") for f in files):
            return True
    return False



from .kernelsrc import CPU_NEEDS_CUDA, needs_cuda  # noqa: E402,F401 - torch-free, for the app's process too


