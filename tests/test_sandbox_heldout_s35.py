"""Session 35's held-out attacks (benchmarks/results/sandbox_heldout_s35.md), through ktui's judge only
(ktui.repro.runner.run_request, torch on the CPU): never run outside the sandbox.

1. Words only the judge may read as "this machine could not judge it" (ktui.engine.claims): a kernel
   that raises or prints torch's or ktui's own wordings (CUDA out of memory, Triton's launcher stub,
   a missing toolchain module, "Ninja is required", "Torch not compiled with CUDA", "No module named
   'ktui'") gets a verdict about itself, while an honest kernel whose claim the judge confirms (a
   CUDA kernel on the CPU, a module this machine's torch lacks) stays "not judged here".
2. Attacks of issue 22's classes written differently from the corpus's: secrets through the parent's
   /proc entries, /proc/1's cwd and root, inherited descriptors; files planted for other processes
   (sitecustomize, .pth, a shadow torch) in every folder it can write; a torch-extensions folder shared
   with the next kernel; the judge's input memfds written through /proc/self/fd; the timer's C
   function swapped under the bound Python callable (ctypes).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import judge_run, model, needs
from conftest import outcome as verdict

REPO = Path(__file__).resolve().parents[1]
REPRO = REPO / "tests" / "fixtures" / "repro"
SECRET = "s35-planted-secret-4f1d9c"




def judged_against_itself(res: dict) -> bool:
    from ktui.repro.verdict import CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE

    return verdict(res) in (CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE)


# ---- 1. the judge's words: unit level (no judge started) ---------------------------------------------

def _kernel_failure(message, kind="runtime_error", stage="correctness", words="kernel", checked=None):
    f = {"stage": stage, "kind": kind, "message": message, "words": words}
    if checked is not None:
        f["checked"] = checked
    return {"status": "failed", "failure": f, "environment": {"device": "cpu"}}


OOM_WORDS = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which "
             "3.06 MiB is free. Including non-PyTorch memory, this process has 1.00 GiB memory in use.")
STUB_WORDS = ("Command '['/usr/bin/gcc', '/tmp/tmpab/cuda_utils.c', '-O3', '-shared', '-fPIC']' returned "
              "non-zero exit status 1.")
#: (name, message, kind, stage): each read as "not judged here" from its words alone before this session
CLAIMS = [
    ("cuda_oom_others", OOM_WORDS, "oom", "correctness"),
    ("triton_stub", STUB_WORDS, "runtime_error", "correctness"),
    ("existing_module", "No module named 'torch.nn.functional'", "runtime_error", "correctness"),
    ("existing_name", "cannot import name 'relu' from 'torch'", "import_error", "build"),
    ("no_gpu_words", "Torch not compiled with CUDA enabled", "runtime_error", "correctness"),
]


@pytest.mark.parametrize("name,message,kind,stage", CLAIMS, ids=[c[0] for c in CLAIMS])
def test_the_kernels_words_alone_never_make_a_result_unjudged(name, message, kind, stage):
    from ktui.repro.judging.outcome import unjudged

    assert unjudged(_kernel_failure(message, kind, stage)) is None
    # the same words from the judge's side (or a result of an earlier version) are read as before
    assert unjudged(_kernel_failure(message, kind, stage, words="judge")) is not None


def test_what_the_judge_checked_makes_it_unjudged():
    from ktui.repro.judging.outcome import NO_GPU, unjudged

    u = unjudged(_kernel_failure("Torch not compiled with CUDA enabled",
                                 checked={"why": NO_GPU, "checked": "the judge's device is the CPU"}))
    assert u is not None and u.why == NO_GPU and "checked by the judge" in u.message
    assert unjudged(_kernel_failure("x", checked={"why": "judge"})) is None  # only the three claims


def test_the_judges_checks_of_each_claim():
    from ktui.engine import claims

    cpu = {"device_kind": "cpu", "device_str": "cpu"}
    # no GPU: only where the judge's own reading of a source puts work on a GPU
    assert claims.check("Torch not compiled with CUDA enabled", "correctness", kernel_code="x * 3", **cpu) is None
    assert claims.check("Torch not compiled with CUDA enabled", "correctness", kernel_code="x.cuda()",
                        **cpu)["why"] == claims.NO_GPU
    assert claims.check("Found no NVIDIA driver", "correctness", kernel_code="y = 1",
                        reference_source="torch.randn(4, device='cuda')", **cpu)["why"] == claims.NO_GPU
    # GPU memory: never on the CPU
    assert claims.check(OOM_WORDS, "correctness", kernel_code="x.cuda()", **cpu) is None
    # no toolchain: a module the judge's own interpreter has is no claim; one it lacks is
    assert claims.check("No module named 'torch.nn.functional'", "build", **cpu) is None
    assert claims.check("No module named 'torch.no_such_module_s35'", "build", **cpu)["why"] == claims.NO_TOOLCHAIN
    assert claims.check("cannot import name 'relu' from 'torch'", "build", **cpu) is None
    assert claims.check("cannot import name 'no_such_name_s35' from 'torch'", "build",
                        **cpu)["why"] == claims.NO_TOOLCHAIN
    assert not claims.module_missing("os.path")  # only torch / triton are the toolchain here
    assert not claims.module_missing("torch;rm")


def test_gpu_memory_needs_other_processes_seen_by_the_judge(monkeypatch):
    from ktui.engine import claims

    gpu = {"device_kind": "cuda", "device_str": "cuda:0", "kernel_code": "x.cuda()"}
    monkeypatch.setattr(claims, "others_on_gpu", lambda device, ours: 0)
    assert claims.check(OOM_WORDS, "correctness", ours={11}, **gpu) is None  # alone on the GPU: its own OOM
    monkeypatch.setattr(claims, "others_on_gpu", lambda device, ours: 2)
    assert claims.check(OOM_WORDS, "correctness", ours={11}, **gpu)["why"] == claims.GPU_MEMORY
    monkeypatch.setattr(claims, "others_on_gpu", lambda device, ours: None)  # nvidia-smi missing: as before
    assert claims.check(OOM_WORDS, "correctness", ours={11}, **gpu)["why"] == claims.GPU_MEMORY


def test_others_on_gpu_leaves_out_the_judges_own_workers(monkeypatch):
    from ktui.engine import claims, gpu

    monkeypatch.setattr(gpu, "state", lambda device: {"processes": [{"pid": 5, "used_mib": 10.0},
                                                                    {"pid": 6, "used_mib": 10.0}]})
    assert claims.others_on_gpu("cuda:0", {5, 6}) == 0
    assert claims.others_on_gpu("cuda:0", {5}) == 1
    monkeypatch.setattr(gpu, "state", lambda device: None)
    assert claims.others_on_gpu("cuda:0", {5}) is None


# ---- 1. through the judge: a wrong kernel (x * 3 against relu(x) * 2) speaking the judge's words ---------

WORD_ATTACKS = {
    "raises_cuda_oom_blaming_others": ("", f"raise RuntimeError({OOM_WORDS!r})\n"),
    "raises_triton_stub_failure": ("", "import subprocess\nraise subprocess.CalledProcessError(1, "
                                       "['/usr/bin/gcc', '/tmp/x/cuda_utils.c'])\n"),
    "claims_an_existing_module_missing": ("", "raise ModuleNotFoundError(\"No module named 'torch.nn.functional'\")\n"),
    "claims_an_existing_name_missing_at_import": (
        "raise ImportError(\"cannot import name 'relu' from 'torch' (/usr/lib/torch/__init__.py)\")", "return x\n"),
    "ninja_required_at_import": ("raise RuntimeError('Ninja is required to load C++ extensions')", "return x\n"),
    "no_gpu_words_from_a_cpu_kernel": ("", "raise RuntimeError('Torch not compiled with ' + 'CUDA enabled')\n"),
    "prints_no_module_ktui_and_exits": ("", "sys.stderr.write(\"ModuleNotFoundError: No module named 'ktui'\\n\")\n"
                                            "sys.stderr.flush()\nos._exit(1)\n"),
}


@pytest.mark.slow
@needs("torch")
@pytest.mark.parametrize("name", list(WORD_ATTACKS))
def test_a_kernel_speaking_the_judges_words_is_judged(tmp_path, name):
    from ktui.repro.judging.outcome import unjudged

    pre, body = WORD_ATTACKS[name]
    res = judge_run(tmp_path, model(pre, body))
    un = unjudged(res)
    assert un is None and judged_against_itself(res), (verdict(res), un and un.reason, res.get("failure"))
    assert (res.get("failure") or {}).get("words") == "kernel"


#: honest kernels whose claim the judge confirms: still "not judged here" (no false verdict)
HONEST_CLAIMS = {
    "cuda_kernel_on_the_cpu": ("", "return torch.relu(x.cuda()) * 2.0\n", "no GPU"),
    "a_toolchain_module_missing_here": ("import torch.no_such_module_s35", "return torch.relu(x) * 2.0\n",
                                        "no toolchain"),
}


@pytest.mark.slow
@needs("torch")
@pytest.mark.parametrize("name", list(HONEST_CLAIMS))
def test_a_claim_the_judge_confirms_stays_unjudged(tmp_path, name):
    from ktui.repro.judging.outcome import unjudged

    pre, body, why = HONEST_CLAIMS[name]
    res = judge_run(tmp_path, model(pre, body))
    un = unjudged(res)
    assert un is not None and un.why == why, (res.get("failure"), un)
    assert (res.get("failure") or {}).get("checked", {}).get("why") == why


# ---- 2. held-out attacks of issue 22's classes ----------------------------------------------------------

FIND = """
def _find(secret_words=("s35-planted",)):
    found = []
    def look(what, data):
        if isinstance(data, bytes):
            data = data.decode("latin-1")
        for w in secret_words:
            if w in (data or ""):
                found.append(what)
    return found, look
"""

SECRET_ATTACKS = {
    # the parent chain's environ / cmdline, from its own pid up (the namespace's init has pid 1; ppid 0
    # outside it), and every numeric entry of /proc
    "parent_chain_environ": (FIND + """
def _loot():
    found, look = _find()
    pids = set()
    p = os.getpid()
    while p > 0 and p not in pids:
        pids.add(p)
        try:
            stat = open(f"/proc/{p}/stat").read()
            p = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    pids.update(int(d) for d in os.listdir("/proc") if d.isdigit())
    for p in sorted(pids):
        for part in ("environ", "cmdline", "task/%d/environ" % p):
            try:
                look(f"/proc/{p}/{part}", open(f"/proc/{p}/{part}", "rb").read())
            except OSError:
                pass
    return found
""", "f = _loot()\nif f: raise RuntimeError('FOUND ' + repr(f) + ' ' + repr([open(x,'rb').read()[:2000] for x in f]))\n"
        "return x * 3.0\n"),
    # /proc/1/cwd and /proc/1/root (the namespace's init: ktui's prologue, or outside), the planted home
    # through them and through /proc/self/root
    "proc_one_cwd_and_root": (FIND + """
def _loot():
    found, look = _find()
    home = os.environ.get("KTUI_S35_HOME_HINT", "")
    for base in ("/proc/1/cwd", "/proc/1/root", "/proc/self/root", "/proc/self/cwd", "/proc/thread-self/root"):
        for rel in ("", home.lstrip("/"), os.path.join(home.lstrip("/"), ".s35_token")):
            p = os.path.join(base, rel)
            try:
                if os.path.isdir(p):
                    for n in os.listdir(p)[:200]:
                        q = os.path.join(p, n)
                        if os.path.isfile(q) and os.path.getsize(q) < 1 << 20:
                            look(q, open(q, "rb").read())
                elif os.path.isfile(p):
                    look(p, open(p, "rb").read())
            except OSError:
                pass
    return found
""", "f = _loot()\nif f: raise RuntimeError('FOUND ' + repr(f))\nreturn x * 3.0\n"),
    # every inherited descriptor: read from its start (pread), peeked (sockets, MSG_PEEK | MSG_DONTWAIT),
    # and reopened through /proc/self/fd for reading
    "inherited_descriptors": (FIND + """
import socket, stat
def _loot():
    found, look = _find()
    for d in os.listdir("/proc/self/fd"):
        fd = int(d)
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        try:
            if stat.S_ISSOCK(st.st_mode):
                s = socket.socket(fileno=os.dup(fd))
                try:
                    look(f"fd {fd} peek", s.recv(1 << 16, socket.MSG_PEEK | socket.MSG_DONTWAIT))
                except OSError:
                    pass
                finally:
                    s.close()
            elif stat.S_ISREG(st.st_mode):
                look(f"fd {fd}", os.pread(fd, 1 << 20, 0))
            fd2 = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
            try:
                look(f"fd {fd} reopened", os.read(fd2, 1 << 16))
            finally:
                os.close(fd2)
        except OSError:
            pass
    return found
""", "f = _loot()\nif f: raise RuntimeError('FOUND ' + repr(f))\nreturn x * 3.0\n"),
}


@pytest.mark.slow
@needs("torch")
@pytest.mark.parametrize("name", list(SECRET_ATTACKS))
def test_held_out_secrets_through_the_judge(tmp_path, monkeypatch, name):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".s35_token").write_text(SECRET + "\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("S35_DEPLOY_TOKEN", SECRET)
    monkeypatch.setenv("LC_S35_PROD", SECRET)
    monkeypatch.setenv("KTUI_S35_HOME_HINT", str(home))
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    pre, body = SECRET_ATTACKS[name]
    res = judge_run(tmp_path, model(pre, body))
    assert SECRET not in json.dumps(res, default=str), (res.get("failure") or {}).get("message")
    assert judged_against_itself(res), (verdict(res), res.get("failure"))


# files planted for other processes in every folder the kernel can write (its build dir, temp dir, cwd,
# TORCH_EXTENSIONS_DIR, $HOME, the site dirs): a sitecustomize, a .pth, a shadow torch package, an
# ld.so preload list, each of which runs code in the next Python (or program) that meets it
PLANT = """
import site, sysconfig
def _plant():
    dirs = {os.getcwd(), os.environ.get("TORCH_EXTENSIONS_DIR", ""), os.environ.get("HOME", ""),
            os.environ.get("TMPDIR", ""), os.path.dirname(os.path.abspath(__file__)), *sys.path,
            sysconfig.get_paths().get("purelib", ""), site.getusersitepackages() or ""}
    made = []
    for d in sorted(x for x in dirs if x):
        for name, text in (("sitecustomize.py", "import sys; sys.stderr.write('S35' + 'RAN')\\n"),
                           ("s35-evil.pth", "import sys; sys.stderr.write('S35' + 'RAN')\\n"),
                           ("usercustomize.py", "import sys; sys.stderr.write('S35' + 'RAN')\\n")):
            try:
                with open(os.path.join(d, name), "w") as fh:
                    fh.write(text)
                made.append(os.path.join(d, name))
            except OSError:
                pass
        # shared objects under the names the dynamic loader looks for (an LD_PRELOAD / LD_LIBRARY_PATH of a
        # later process that meets this folder would load them): a copy of a real ELF of the toolchain
        for name in ("libgomp.so.1", "libc10.so", "libtorch_python.so", "s35_preload.so"):
            try:
                src = torch.__file__.replace("__init__.py", "lib/libc10.so")
                with open(src, "rb") as fi, open(os.path.join(d, name), "wb") as fo:
                    fo.write(fi.read(1 << 20))
                made.append(os.path.join(d, name))
            except OSError:
                pass
        try:
            os.makedirs(os.path.join(d, "torch_s35_shadow"), exist_ok=True)
            made.append(os.path.join(d, "torch_s35_shadow"))
        except OSError:
            pass
    return made
_MADE = _plant()
"""


@pytest.mark.slow
@needs("torch")
def test_files_planted_for_other_processes_reach_nothing_that_outlives_the_run(tmp_path, monkeypatch):
    """Nothing the kernel writes reaches a folder that outlives its run but its own build's cache entry
    (what its build left, copied by the judge after the build, for this same kernel only: a file named
    *.so is a build product), and nothing planted there runs: the next run of the same kernel, from the
    cache, would print S35RAN from a sitecustomize / .pth met at its start."""
    import site
    import time

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    t0 = time.time() - 1
    code = model(PLANT, "return x * 3.0\n")
    runs = [judge_run(tmp_path, code), judge_run(tmp_path, code)]
    for res in runs:
        assert judged_against_itself(res), (verdict(res), res.get("failure"))
        assert "S35RAN" not in json.dumps(res, default=str)
    names = ("sitecustomize.py", "usercustomize.py", "s35-evil.pth", "torch_s35_shadow", "libgomp.so.1", "libc10.so",
             "libtorch_python.so", "s35_preload.so")
    build = tmp_path / "cache" / "build"
    left = [str(p) for p in tmp_path.rglob("*") if p.name in names and build not in p.parents]
    for d in {*site.getsitepackages(), site.getusersitepackages(), os.getcwd(), "/tmp"}:
        left += [os.path.join(d, n) for n in names
                 if os.path.exists(os.path.join(d, n)) and os.path.getmtime(os.path.join(d, n)) > t0]
    assert not left, left


# a torch-extensions folder shared across kernels: the first kernel leaves a marker in every folder torch
# would build or look up an extension in; the second (another kernel) looks for it
SHARED_EXT_WRITE = """
def _leave():
    from torch.utils.cpp_extension import _get_build_directory
    dirs = [os.environ.get("TORCH_EXTENSIONS_DIR", ""), os.path.expanduser("~/.cache/torch_extensions")]
    try:
        dirs.append(_get_build_directory("s35_shared_ext", verbose=False))
    except Exception:
        pass
    for d in dirs:
        if d:
            try:
                os.makedirs(os.path.join(d, "s35_shared_ext"), exist_ok=True)
                open(os.path.join(d, "s35_shared_ext", "s35-marker"), "w").write("from the first kernel")
            except OSError:
                pass
_leave()
"""
SHARED_EXT_READ = """
def _seen():
    from torch.utils.cpp_extension import _get_build_directory
    hits = []
    dirs = [os.environ.get("TORCH_EXTENSIONS_DIR", ""), os.path.expanduser("~/.cache/torch_extensions")]
    try:
        dirs.append(_get_build_directory("s35_shared_ext", verbose=False))
    except Exception:
        pass
    for d in dirs:
        for root in (d, os.path.dirname(d)):
            p = os.path.join(root, "s35_shared_ext", "s35-marker")
            if root and os.path.exists(p):
                hits.append(p)
    return hits
"""


@pytest.mark.slow
@needs("torch")
def test_a_torch_extensions_folder_is_not_shared_between_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    first = judge_run(tmp_path, model(SHARED_EXT_WRITE, "return x * 3.0\n"))
    assert judged_against_itself(first), (verdict(first), first.get("failure"))
    second = judge_run(tmp_path, model(SHARED_EXT_READ, "h = _seen()\nif h: raise RuntimeError('S35SEEN ' + repr(h))\n"
                                                        "return x * 3.0\n"))
    assert "S35SEEN" not in json.dumps(second, default=str), (second.get("failure") or {}).get("message")


# a hostile reference: its worker's sealing of the tensors it sends is switched off (ktui's own shm module,
# patched in its process) and a thread keeps writing every memfd it made, so that the inputs the candidate
# gets change under it: an honest candidate must not be the one blamed
REFERENCE_TAMPERS = """
import fcntl as _fcntl, threading as _th, time as _time, os as _os
from ktui.engine import shm as _shm
class _NoSeal:
    def __getattr__(self, k):
        return getattr(_fcntl, k)
    def fcntl(self, fd, op, *a):
        if op == _fcntl.F_ADD_SEALS:
            return 0
        if op == _fcntl.F_GET_SEALS:
            return _shm.SEALS | _fcntl.F_SEAL_SEAL
        return _fcntl.fcntl(fd, op, *a)
_shm.fcntl = _NoSeal()
def _scribble():
    while True:
        for d in _os.listdir("/proc/self/fd"):
            try:
                if _os.readlink("/proc/self/fd/" + d).startswith("/memfd:ktui"):
                    n = _os.fstat(int(d)).st_size
                    _os.pwrite(int(d), bytes(n), 0)
            except OSError:
                pass
        _time.sleep(0.005)
_th.Thread(target=_scribble, daemon=True).start()
"""


@pytest.mark.slow
@needs("torch")
def test_a_reference_that_rewrites_the_tensors_it_sent_never_blames_the_candidate(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    ref = (REPRO / "reference_scaled_relu.txt").read_text().replace(
        "from kernelbench.distributed_collectives import default_device",
        "from kernelbench.distributed_collectives import default_device\n" + REFERENCE_TAMPERS)
    res = judge_run(tmp_path, model("", "return torch.relu(x) * 2.0\n"), reference_source=ref)
    assert not judged_against_itself(res), (verdict(res), res.get("failure"))


# the judge's input memfds written through /proc/self/fd (O_RDWR reopen; a sealed memfd refuses), then an
# answer right for zeros: a judge that compares with what the inputs say after the call would pass it
INPUT_WRITE = """
def _zero_inputs(x):
    n = x.numel() * x.element_size()
    hit = 0
    for d in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink("/proc/self/fd/" + d).startswith("/memfd:"):
                continue
            fd = os.open("/proc/self/fd/" + d, os.O_RDWR)
            try:
                if os.fstat(fd).st_size >= n:
                    os.pwrite(fd, bytes(os.fstat(fd).st_size), 0)
                    hit += 1
            finally:
                os.close(fd)
        except OSError:
            pass
    return hit
"""


@pytest.mark.slow
@needs("torch")
def test_writing_the_judges_inputs_through_proc_fd_changes_no_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    res = judge_run(tmp_path, model(INPUT_WRITE, "_zero_inputs(x)\nx.zero_()\nreturn x * 3.0\n"))
    assert judged_against_itself(res), (verdict(res), res.get("failure"))


# the host clock's C function swapped under the callable ktui bound before the kernel loaded (ctypes writes
# the builtin's PyMethodDef.ml_meth: no Python-level monkeypatch to see), on a correct kernel that sleeps;
# its claimed time must not be the forged one
CLOCK_SWAP = """
import ctypes, time
def _swap():
    # PyCFunctionObject: ob_refcnt, ob_type, m_ml (PyMethodDef *); PyMethodDef: ml_name, ml_meth. Each host
    # clock's C function pointer is replaced by its thread-CPU-time sibling's (a sleep costs none of it)
    for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns"):
        f = getattr(time, name)
        tf = getattr(time, "thread_time" + ("_ns" if name.endswith("_ns") else ""))
        ml_dst = ctypes.cast(id(f) + 16, ctypes.POINTER(ctypes.c_void_p)).contents.value
        ml_src = ctypes.cast(id(tf) + 16, ctypes.POINTER(ctypes.c_void_p)).contents.value
        meth_src = ctypes.cast(ml_src + 8, ctypes.POINTER(ctypes.c_void_p)).contents.value
        ctypes.cast(ml_dst + 8, ctypes.POINTER(ctypes.c_void_p)).contents.value = meth_src
_swap()
"""


@pytest.mark.slow
@needs("torch")
@pytest.mark.skipif(sys.implementation.name != "cpython" or sys.maxsize < 2**32, reason="CPython 64-bit layout")
def test_a_clock_swapped_in_c_under_the_bound_timer_is_not_believed(tmp_path, monkeypatch):
    """A right kernel that sleeps 20 ms a call and swaps the host clocks' C functions for the thread's CPU
    time: the time ktui reports is its own clock's (at least the sleep), or the run is the kernel's failure."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    res = judge_run(tmp_path, model(CLOCK_SWAP, "time.sleep(0.02)\nreturn torch.relu(x) * 2.0\n"), checks=True)
    if res.get("status") == "failed":
        assert (res.get("failure") or {}).get("kind") not in ("harness_error", "worker_error"), res.get("failure")
        return
    k = ((res.get("timing") or {}).get("kernel") or {}).get("mean_us")
    assert isinstance(k, (int, float)) and k >= 15_000, (k, res.get("timing"))


# ---- memory that is no process's RSS, through a real sandboxed worker --------------------------------------

IN_FLIGHT = '''
import os, socket, time
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
chunk = b"\\\\2" * (1 << 20)
for i in range(24):
    fd = os.memfd_create("s35-%d" % i)
    os.fallocate(fd, 0, 0, 32 << 20) if hasattr(os, "fallocate") else None
    for _ in range(32):
        os.write(fd, chunk)
    socket.send_fds(a, [b"m"], [fd])  # in flight on a datagram socket of its own, then closed
    os.close(fd)
print("OUT 1", flush=True)
time.sleep(60)
'''


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
def test_memfds_in_flight_on_its_own_socket_are_over_its_limit_not_the_hosts():
    """768 MiB of memfds (fallocate, then write) sent on a datagram socketpair of its own and closed,
    against a 256 MiB limit: stopped at the worker's limit, never the host's floor (not judged here: the
    growth is the host's shared memory's, which another program could have made)."""
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "sandbox"))
    from attack_run import finish, launch

    from ktui.engine import sandbox

    if not sandbox.detect()["namespaces"]:
        pytest.skip("needs user namespaces")
    avail, _total = sandbox.host_memory()
    if avail is None or avail < 5 << 30:
        pytest.skip("needs 5 GiB of free memory")
    w = launch(IN_FLIGHT, memory_limit=256 << 20, host_memory_floor=avail - (3 << 30))
    finish(w, 120)
    # stopped at its own limit, not the host's floor; not judged here, not memory_limit: the memory is in
    # no count of ktui's, only in the host's shared memory's growth, which another program could have made
    assert w.limit_hit is not None and w.limit_hit[0] == "environment", (w.limit_hit, w.tail("stderr")[-500:])
    assert "passed its memory limit" in w.limit_hit[1] and "not judged here" in w.limit_hit[1], w.limit_hit


#: more memory in no RSS (memory_limit 256 MiB, disk_limit 128 MiB): each ends as a verdict about the worker
#: (memory_limit / disk_limit) or meets a cap the kernel enforces (the worker's own IPC namespace's shmall,
#: its /dev/shm's size), never the host's floor ("environment")
NO_RSS = {
    # System V segments made, filled, detached: held by no process (ipc_namespaces(7))
    "sysv_segments_detached": '''
import ctypes, json, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
made = 0
for i in range(24):
    sid = libc.shmget(0, 32 << 20, 0o1600)
    if sid < 0:
        break
    addr = libc.shmat(sid, None, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        break
    ctypes.memset(addr, 3, 32 << 20)
    libc.shmdt(ctypes.c_void_p(addr))
    made += 32 << 20
print("OUT " + json.dumps(made), flush=True)
time.sleep(30)
''',
    # a 4 GiB sparse memfd written one byte every 4 KiB over 768 MiB, held open, never mapped
    "memfd_sparse_scattered": '''
import json, os, time
fd = os.memfd_create("s35-sparse")
os.ftruncate(fd, 4 << 30)
n = 0
for off in range(0, 768 << 20, 4096):
    os.pwrite(fd, b"x", off)
    n += 4096
print("OUT " + json.dumps(n), flush=True)
time.sleep(30)
''',
    # fallocate(2) in the worker's /dev/shm, no write, descriptor closed, file kept
    "dev_shm_fallocate": '''
import json, os, time
made = 0
for i in range(12):
    try:
        fd = os.open("/dev/shm/s35-%d" % i, os.O_CREAT | os.O_RDWR, 0o600)
        os.posix_fallocate(fd, 0, 64 << 20)
        os.close(fd)
        made += 64 << 20
    except OSError:
        break
print("OUT " + json.dumps(made), flush=True)
time.sleep(30)
''',
    # a sparse file in its temp dir just under RLIMIT_FSIZE (no blocks), then 384 MiB of it allocated
    # with fallocate
    "temp_sparse_then_fallocate": '''
import json, os, time
fd = os.open("s35-sparse.bin", os.O_CREAT | os.O_RDWR, 0o600)
os.ftruncate(fd, (2 << 30) - 4096)
got = 0
for off in range(0, 384 << 20, 32 << 20):
    try:
        os.posix_fallocate(fd, (1 << 30) + off, 32 << 20)
        got += 32 << 20
    except OSError:
        break
print("OUT " + json.dumps(got), flush=True)
time.sleep(30)
''',
}


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
@pytest.mark.parametrize("name", list(NO_RSS))
def test_memory_in_no_rss_is_a_verdict_or_a_cap_never_the_hosts_floor(name):
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "sandbox"))
    from attack_run import finish, launch, out_value

    from ktui.engine import sandbox

    if not sandbox.detect()["namespaces"]:
        pytest.skip("needs user namespaces")
    avail, _total = sandbox.host_memory()
    if avail is None or avail < 4 << 30:
        pytest.skip("needs 4 GiB of free memory")
    # the host's floor 3 GiB below what is free now: other work on a shared machine moves it by a GiB or more
    # (uid 65534 met it once at load 18 while its System V segments held 64 MiB)
    w = launch(NO_RSS[name], memory_limit=256 << 20, disk_limit=128 << 20, host_memory_floor=avail - (3 << 30))
    finish(w, 120)
    made = out_value(w.tail("stdout"))
    assert w.limit_hit is None or w.limit_hit[0] in ("memory_limit", "disk_limit"), w.limit_hit
    if w.limit_hit is None:  # the kernel's own cap held it below the limit
        assert isinstance(made, int) and made <= 256 << 20, (made, w.tail("stderr")[-500:])
