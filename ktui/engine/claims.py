# ---- ktui repro harness: what a failure's words claim about the machine, checked by the judge ------
# A kernel's failure is judged (its own fault: "not reproducible", "correctness disagrees") unless
# the machine could not judge it: no GPU, no toolchain, the GPU's memory held by other work. Those
# were read from the failure's words: torch's "Torch not compiled with CUDA", Triton's launcher
# stub, "No module named 'triton.ops'", a CUDA out-of-memory message that blames others. Once
# trace code has run in a worker, those words are the kernel's (it may raise or print them: a
# wrong kernel raising torch's CUDA out-of-memory text was "not judged here" on the CPU). Here
# the judge checks each claim itself, on its own side, when the failure happens: its device, its
# own reading of the sources, its own import machinery and compiler search, nvidia-smi's list of
# the GPU's processes. :func:`check` says what the judge confirmed; the outcome
# (ktui.repro.judging.outcome) takes only that for a failure in the kernel's words.
# Stdlib only (torch and triton imported only to look a module up). MIT license, part of ktui.
import importlib
import importlib.util
import os
import re
import shutil
import sysconfig

from .words import count

NO_GPU, NO_TOOLCHAIN, GPU_MEMORY = "no GPU", "no toolchain", "GPU memory"

#: torch's CUDA out-of-memory message: what was asked, the GPU's capacity and free memory, this process's use
CUDA_OOM = re.compile(r"Tried to allocate ([\d.]+) ([KMGT]i?B).*?total capacity of ([\d.]+) ([KMGT]i?B) of which "
                      r"([\d.]+) ([KMGT]i?B) is free.*?this process has ([\d.]+) ([KMGT]i?B) memory in use", re.S)
UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
#: the process would have fitted on the GPU alone when what it held and asked for is under this share of it
OOM_OTHERS_SHARE = 0.8
#: Triton's own launcher / driver stub failed to compile (its C file, not the kernel's code): the toolchain
TRITON_STUB = re.compile(r"(?:cuda_utils|__triton_launcher|driver)\.c\b.*returned non-zero|"
                         r"Command '\[[^\]]*(?:cuda_utils|__triton_launcher)\.c")
#: the kernel imports a part of the toolchain that this machine's version does not have (Triton 3 removed
#: ``triton.ops``; torch moves private modules): the recorded run had another version, not a broken kernel
TOOLCHAIN_VERSION = re.compile(r"No module named '((?:triton|torch)\.[\w.]+)'|"
                               r"cannot import name '(\w+)' from '((?:triton|torch)(?:\.[\w.]+)?)'")
#: a failure message that says the machine lacks a GPU or a GPU toolchain (not that the kernel is wrong)
NEEDS_GPU = re.compile(
    r"(?i)no CUDA (?:GPU|device|devices)|CUDA_HOME|\bnvcc\b.*(?:not found|No such file)|No such file.*\bnvcc\b|"
    r"Torch not compiled with CUDA|Found no NVIDIA driver|no NVIDIA driver|CUDA driver (?:version|initialization)|"
    r"cudaGetDeviceCount|CUDA-capable device|0 active drivers|no active (?:GPU|driver)|"
    r"torch\.cuda\.is_available\(\) is False|device=['\"]?cuda|\.cuda\(\)|expected device cuda|"
    r"(?:cuda|gpu|triton|hip)\b.*\bnot available|libcuda\.so|libcudart|cuda\.h: No such file|"
    r"cannot find -lcuda|CUDA error: no kernel image")
NO_CUDA_TOOLKIT = re.compile(r"(?i)CUDA_HOME|\bnvcc\b.*(?:not found|No such file)|No such file.*\bnvcc\b|"
                             r"cuda\.h: No such file|cannot find -lcud")
NO_COMPILER = re.compile(r"(?i)(?:\bc\+\+|\bg\+\+|\bgcc|\bclang|ninja)\b.*(?:not found|No such file)|"
                         r"Ninja is required|command not found")
#: the judge's own reading of a source that puts work on a GPU (beyond kernelsrc.needs_cuda's extensions)
_SOURCE_ON_GPU = re.compile(r"""\.cuda\(|\.to\(\s*['"]cuda|device\s*=\s*['"]cuda|torch\.device\(\s*['"]cuda|"""
                            r"""\btorch\.cuda\.|\bimport\s+triton\b|\bfrom\s+triton\b|cuda_sources|__global__|"""
                            r"""\bcupy\b|\bnumba\.cuda\b""")
_MODULE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


def gpu_memory_held_by_others(msg):
    """When a CUDA out-of-memory message shows that the process itself held and asked for far
    less than the GPU has (others held the rest), the words that say so; else None. Words only:
    :func:`check` decides whether the judge saw other work on the GPU."""
    m = CUDA_OOM.search(msg or "")
    if m is None:
        return None
    try:
        ask, total, free, own = (float(m.group(i)) * UNITS[m.group(i + 1)] for i in (1, 3, 5, 7))
    except (KeyError, ValueError):
        return None
    if total <= 0 or own + ask >= OOM_OTHERS_SHARE * total:
        return None
    return (f"the GPU's memory was held by other work: this process had {own / 2**30:.1f} GiB and asked for "
            f"{ask / 2**30:.2f} GiB more of {total / 2**30:.1f} GiB, {free / 2**30:.2f} GiB free")


def source_uses_gpu(*sources):
    """The judge's reading of the kernel's or the reference's source: does it put work on a GPU?"""
    from .kernelsrc import needs_cuda

    return any(s and (needs_cuda(s) or _SOURCE_ON_GPU.search(s)) for s in sources)


def module_missing(name):
    """True when this machine's toolchain has no module ``name`` (looked up in the judge's own
    interpreter, the one the workers run); False when it has it or the name is not a module path."""
    if not _MODULE.match(name or "") or name.split(".")[0] not in ("torch", "triton"):
        return False
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        return True
    except Exception:  # noqa: BLE001 - a parent package that fails to import: the toolchain is broken here
        return True


def name_missing(name, module):
    """True when ``module`` of the toolchain (torch / triton) does not define ``name`` here."""
    if not _MODULE.match(module or "") or not re.match(r"^\w+$", name or "") or \
            module.split(".")[0] not in ("torch", "triton"):
        return False
    if module_missing(module):
        return True
    try:
        mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - broken here: the toolchain's fault, not the kernel's
        return True
    if hasattr(mod, name):
        return False
    return importlib.util.find_spec(f"{module}.{name}") is None if hasattr(mod, "__path__") else True


def compiler_missing():
    """True when the judge finds no C/C++ compiler (what load_inline and Triton's stub need)."""
    cands = [os.environ.get("CXX"), os.environ.get("CC"), "c++", "g++", "clang++", "cc", "gcc", "clang"]
    return not any(c and shutil.which(c.split()[0]) for c in cands)


def ninja_missing():
    if shutil.which("ninja"):
        return False
    try:
        return importlib.util.find_spec("ninja") is None
    except Exception:  # noqa: BLE001
        return True


def python_headers_missing():
    inc = sysconfig.get_paths().get("include") or ""
    return not os.path.exists(os.path.join(inc, "Python.h"))


def cuda_toolkit_missing():
    """True when the judge finds no nvcc: neither under CUDA_HOME / CUDA_PATH nor on PATH."""
    for env in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(env)
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return False
    return shutil.which("nvcc") is None and not os.access("/usr/local/cuda/bin/nvcc", os.X_OK)


def others_on_gpu(device, ours):
    """Compute processes on ``device`` other than ``ours`` (pids), from nvidia-smi: a count, or
    None when nvidia-smi cannot be asked."""
    from .gpu import state

    st = state(device)
    if st is None:
        return None
    return sum(1 for p in st.get("processes") or () if p.get("pid") not in ours)


def check(message, stage, *, device_kind, device_str=None, kernel_code=None, reference_source=None,
          ours=()):
    """What the judge confirmed, itself, of a claim in a kernel's failure ``message`` that the
    machine could not judge it: ``{"why": NO_GPU | NO_TOOLCHAIN | GPU_MEMORY, "checked": words}``
    or None (the failure is the kernel's: judged). Each claim is checked on the judge's side:

    - no GPU: the judge's device is the CPU and its own reading of the kernel's or the reference's
      source puts work on a GPU (a CPU kernel raising "Found no NVIDIA driver" is judged);
    - GPU memory: a CUDA out-of-memory message blaming others, on a GPU where nvidia-smi lists
      other processes than this judge's workers (never on the CPU; where nvidia-smi cannot be
      asked, the benefit of the doubt: not judged, as before);
    - no toolchain: the module the message names is missing from the judge's interpreter; Triton's
      stub or a build lacks a compiler, Python's headers or nvcc where the judge looks for them.
    """
    msg = " ".join(str(message or "").split())[:2000]
    on_cpu = device_kind == "cpu" or not str(device_str or "cuda").startswith(("cuda", "hip"))
    if on_cpu and NEEDS_GPU.search(msg) and source_uses_gpu(kernel_code, reference_source):
        return {"why": NO_GPU, "checked": "the judge's device is the CPU and the kernel's or the reference's "
                                          "source puts work on a GPU"}
    if not on_cpu and gpu_memory_held_by_others(msg) is not None:
        n = others_on_gpu(device_str, set(ours))
        if n is None or n > 0:
            return {"why": GPU_MEMORY, "checked": ("nvidia-smi could not be asked" if n is None else
                                                   f"nvidia-smi lists {count(n, 'other process')} on the GPU")}
    tv = TOOLCHAIN_VERSION.search(msg)
    if tv is not None:
        if tv.group(1) and module_missing(tv.group(1)):
            return {"why": NO_TOOLCHAIN, "checked": f"the judge's interpreter has no module {tv.group(1)}"}
        if tv.group(2) and name_missing(tv.group(2), tv.group(3)):
            return {"why": NO_TOOLCHAIN, "checked": f"the judge's {tv.group(3)} has no {tv.group(2)}"}
    if TRITON_STUB.search(msg) and not on_cpu and (compiler_missing() or python_headers_missing()):
        return {"why": NO_TOOLCHAIN, "checked": "the judge finds no C compiler or no Python.h for Triton's stub"}
    if stage in ("startup", "build"):
        if NO_COMPILER.search(msg) and (compiler_missing() or ("ninja" in msg.lower() and ninja_missing())):
            return {"why": NO_TOOLCHAIN, "checked": "the judge finds no C/C++ compiler or no ninja"}
        if NO_CUDA_TOOLKIT.search(msg) and cuda_toolkit_missing() and source_uses_gpu(kernel_code):
            return {"why": NO_TOOLCHAIN if not on_cpu else NO_GPU, "checked": "the judge finds no nvcc"}
    return None
