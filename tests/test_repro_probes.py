"""The dynamic honesty probes ported to the sandboxed pipeline (ktui/engine/probes: threads,
fresh output, reduced precision, shape jitter, physical floor) with small Python kernels on the
CPU, each tried by a kernel that should trip it and by one that must not; and their pure parts
(the comparison's NaN handling, the size jitter, the bandwidth table, the GPU floor's logic)
without any worker."""

from __future__ import annotations

import sys

import pytest
from conftest import BUILD_TIMEOUT_S, needs

from ktui.repro.runner import run_request

torch_missing = needs("torch")

REF = '''
import torch, torch.nn as nn
from kernelbench.distributed_collectives import default_device
B, N = 8, 64
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(B), N, device=default_device())]
def get_init_inputs():
    return []
'''

# KernelBench style: module-level sizes, no jitter_int; `features` shapes the weights
REF_CONSTANTS = '''
import torch, torch.nn as nn
batch_size = 16
features = 32
class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features))
    def forward(self, x):
        return x * self.w
def get_inputs():
    return [torch.randn(batch_size, features)]
def get_init_inputs():
    return [features]
'''

SOFTMAX_REF = '''
import torch, torch.nn as nn
B, D = 16, 256
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(B), D)]
def get_init_inputs():
    return []
'''

HONEST = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0) * 2.0
'''


def _run(kernel, tmp_path, reference=REF, **kw):
    req = {"kernel_code": kernel, "reference_source": reference, "device": "cpu", "trials": 3,
           "correctness_trials": 2, "build_root": str(tmp_path / "build")}
    req.update(kw)
    # a stage's deadline, not a figure: 240 s as the sandbox tests give (a spinner kernel on a 2-core CI
    # machine once ran past 90 s in its timing stage)
    return run_request(req, run_timeout=240, compile_timeout=BUILD_TIMEOUT_S)


def _check(res, name):
    found = [c for c in res["checks"] if c["name"] == name]
    assert len(found) == 1, (name, [c["name"] for c in res["checks"]], res.get("failure"))
    return found[0]


@torch_missing
def test_honest_kernel_passes_every_ported_probe(tmp_path):
    res = _run(HONEST, tmp_path)
    assert res["status"] == "completed", res.get("failure")
    for name in ("threads_left_running", "fresh_output", "reduced_precision", "shape_jitter"):
        c = _check(res, name)
        assert c["ok"] is True, c
    assert "8 -> 16" in _check(res, "shape_jitter")["detail"]  # B = 8 keeps its factor 8
    # no GPU: the physical floor says it does not apply (never a finding on the CPU)
    assert _check(res, "physical_floor")["ok"] is None


# a thread that outlives forward, started at most every 30 ms (the timed loop's thousands of
# calls would otherwise exhaust the sandbox's thread limit)
LEFT_RUNNING = '''
import threading, time, torch, torch.nn as nn
_last = [0.0]
class ModelNew(nn.Module):
    def forward(self, x):
        if time.monotonic() - _last[0] > 0.03:
            _last[0] = time.monotonic()
            threading.Thread(target=time.sleep, args=(1.0,), daemon=True).start()
        return torch.clamp(x, min=0) * 2.0
'''


@torch_missing
def test_threads_left_running_and_joined_threads(tmp_path):
    left = LEFT_RUNNING
    c = _check(_run(left, tmp_path), "threads_left_running")
    assert c["ok"] is False and "left running" in c["detail"], c
    joined = '''
import threading, torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        halves = list(zip(x.chunk(2), out.chunk(2)))
        ts = [threading.Thread(target=lambda a, o: o.copy_(torch.clamp(a, min=0) * 2.0), args=h) for h in halves]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return out
'''
    c = _check(_run(joined, tmp_path), "threads_left_running")
    assert c["ok"] is True, c  # threads that finish inside forward are honest parallelism


# a thread that forward never waits for but whose work is short: it is over long before forward
# returns on an idle machine, and still running on a busy one (the corpus's thread injection)
FAST_UNJOINED = '''
import threading, time, torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        threading.Thread(target=lambda: out.copy_(torch.clamp(x, min=0) * 2.0), daemon=True).start()
        time.sleep(0.003)
        return out
'''


@torch_missing
def test_an_unjoined_thread_is_seen_however_fast_its_work(tmp_path):
    """During the probe's forward a thread the kernel starts begins late, so one forward does not
    wait for is alive when forward returns: the race does not depend on the machine's load."""
    res = _run(FAST_UNJOINED, tmp_path)
    c = _check(res, "threads_left_running")
    assert c["ok"] is False and "still running when forward returned" in c["detail"], c
    assert res["correctness"]["passed"]  # the race is won outside the probe: only the probe sees it


@torch_missing
def test_threads_seen_from_outside_when_the_worker_probe_lies(tmp_path):
    """The kernel replaces the worker-side probe with one that reports nothing: the judge's own
    count of the worker's threads (/proc/PID/task, around a forward of its own) still sees them."""
    liar = '''
import threading
import ktui.engine.probes as P
P.WORKER_PROBES["threads"] = lambda *a, **k: {"findings": [], "data": {}}
threading.Thread.start = getattr(threading.Thread.start, "__wrapped__", threading.Thread.start)
''' + LEFT_RUNNING
    c = _check(_run(liar, tmp_path), "threads_left_running")
    assert c["ok"] is False and "counted by ktui from outside" in c["detail"], c


@torch_missing
def test_processes_left_running(tmp_path):
    forks = '''
import os, time, torch, torch.nn as nn
_last = [0.0]
class ModelNew(nn.Module):
    def forward(self, x):
        if time.monotonic() - _last[0] > 0.03:
            _last[0] = time.monotonic()
            if os.fork() == 0:
                time.sleep(1.0)
                os._exit(0)
        return torch.clamp(x, min=0) * 2.0
'''
    c = _check(_run(forks, tmp_path), "threads_left_running")
    assert c["ok"] is False and "started during forward and still running" in c["detail"], c


@torch_missing
def test_fresh_output_reused_buffer_and_aliasing(tmp_path):
    kept = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = None
    def forward(self, x):
        if self.out is None or self.out.shape != x.shape:
            self.out = torch.empty_like(x)
        torch.mul(torch.clamp(x, min=0), 2.0, out=self.out)
        return self.out
'''
    c = _check(_run(kept, tmp_path), "fresh_output")
    assert c["ok"] is False and "same storage" in c["detail"], c
    # a view problem: the reference itself returns a view of its input, so the kernel may too
    view_ref = REF.replace("return torch.relu(x) * 2.0", "return x.view(-1)")
    view = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x.reshape(-1)
'''
    res = _run(view, tmp_path, reference=view_ref)
    assert res["correctness"]["passed"], res.get("failure")
    assert _check(res, "fresh_output")["ok"] is True


@torch_missing
def test_reduced_precision_inside_the_tolerance(tmp_path):
    stored_half = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1).half().float()
'''
    res = _run(stored_half, tmp_path, reference=SOFTMAX_REF)
    assert res["correctness"]["passed"], res["correctness"]  # inside the float32 tolerance...
    c = _check(res, "reduced_precision")
    assert c["ok"] is False and "reduced precision" in c["detail"], c  # ...and still named
    honest = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
'''
    assert _check(_run(honest, tmp_path, reference=SOFTMAX_REF), "reduced_precision")["ok"] is True


@torch_missing
def test_shape_jitter_with_module_constants(tmp_path):
    hard = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features))
    def forward(self, x):
        return (x.reshape(16, -1) * self.w).reshape(16, 32)
'''
    c = _check(_run(hard, tmp_path, reference=REF_CONSTANTS), "shape_jitter")
    assert c["ok"] is False and "batch_size: 16 -> 32" in c["detail"], c  # not `features` (the weights')
    honest = hard.replace("return (x.reshape(16, -1) * self.w).reshape(16, 32)", "return x * self.w")
    c = _check(_run(honest, tmp_path, reference=REF_CONSTANTS), "shape_jitter")
    assert c["ok"] is True, c
    raises = HONEST.replace("return torch.clamp", "assert x.shape[0] == 8, 'only 8 rows'\n        return torch.clamp")
    c = _check(_run(raises, tmp_path), "shape_jitter")
    assert c["ok"] is False and "the kernel fails" in c["detail"] and "only 8 rows" in c["detail"], c


def test_size_jitter_keeps_tile_factors():
    from ktui.engine.probes.shapes import jittered

    for v in (1, 2, 3, 7, 8, 16, 48, 64, 96, 100, 128, 1000, 1024, 4096, 16384):
        j = jittered(v)
        assert j > v and j <= 2 * v
        g = min(128, v & -v)  # the power-of-two factor, up to 128
        assert j % g == 0, (v, j)


def test_compare_outputs_is_nan_safe():
    import torch

    from ktui.engine.compare import compare_outputs

    nan, inf = float("nan"), float("inf")
    ref = torch.tensor([1.0, nan, inf, -inf, 2.0])
    same = compare_outputs(ref, ref.clone())
    assert same["passed"] and same["max_abs_error"] == 0.0 and same["mean_rel_error"] == 0.0
    for bad in ([1.0, 0.0, inf, -inf, 2.0], [1.0, nan, -inf, -inf, 2.0], [1.0, nan, inf, -inf, 2.1]):
        assert not compare_outputs(ref, torch.tensor(bad))["passed"], bad
    r = compare_outputs(torch.tensor([1.0, 2.0]), torch.tensor([1.0, nan]))
    assert not r["passed"] and r["max_abs_error"] == 1e308 and r["mean_rel_error"] == r["mean_rel_error"]


def test_precision_judgement_and_nan_safe_error():
    import torch

    from ktui.engine.probes.precision import judge_precision, max_abs_diff

    assert judge_precision(2.7e-5, 7.7e-9, 0.09)[0]  # fp16 storage of a softmax
    assert not judge_precision(8e-6, 7e-6, 69.0)[0]  # a float32 row sum summed another way
    assert not judge_precision(3e-7, 0.0, 8.0)[0]  # an exact reference, a float32 ulp or so off
    assert not judge_precision(5e-4, 1e-4, 8.0)[0]  # the reference is itself that far off
    nan = float("nan")
    assert max_abs_diff(torch.tensor([nan, 1.0]), torch.tensor([nan, 1.5])) == 0.5
    assert max_abs_diff(torch.tensor([1.0]), torch.tensor([nan])) == float("inf")


def test_peak_bandwidth_table():
    from ktui.engine.probes.floor import peak_dram_gbs

    assert peak_dram_gbs("NVIDIA H200")[0] == 4800.0
    assert peak_dram_gbs("NVIDIA GH200 480GB")[1] == "GH200"
    assert peak_dram_gbs("NVIDIA H100 PCIe")[0] == 2000.0
    assert peak_dram_gbs("NVIDIA A100-SXM4-80GB")[0] == 2039.0
    assert peak_dram_gbs("NVIDIA L40S")[1] == "L40S"
    assert peak_dram_gbs("Some Future GPU") == (None, None)


class _Held:
    def __init__(self, v):
        self.v = v

    def decoded(self):
        return self.v


class _NoWork:
    """A reference worker whose forward's FLOPs are not counted (the compute floor is then not
    judged; the DRAM floor is what these tests are about)."""

    def call(self, op, args):
        return {"data": {}}, []


class _Ctx:
    """What the physical floor probe reads, without a GPU."""

    def __init__(self, median_us, gpu="NVIDIA H200", method="cuda_event", device="cuda:0", mib=64):
        import torch

        from ktui.engine.pipeline import Job

        self.job = Job(kernel_code="x", device=device)
        self.input_seed = 1234
        self.result = {"timing": {"method_used": method, "kernel": {"median_us": median_us},
                                  "floor": {"busy_queue_us": 2.0}},
                       "device": device, "environment": {"gpu": gpu}, "checks": []}
        self.t = torch.zeros(mib * 2**20 // 4)

        self.reference = _NoWork()

    def trial(self, *a):
        pass

    def reference_io(self, seed, slot):
        return _Held([self.t]), _Held(self.t.clone())

    def add_check(self, name, ok, detail):
        self.result["checks"].append({"name": name, "ok": ok, "detail": detail})


@torch_missing
def test_physical_floor_logic():
    from ktui.engine.probes.floor import physical_floor

    # 128 MiB moved at 4.8 TB/s takes ~28 us: 5 us is impossible, 40 us is fine
    fast = _Ctx(5.0)
    physical_floor(fast)
    c = _check(fast.result, "physical_floor")
    assert c["ok"] is False and "faster than the memory allows" in c["detail"] and "H200" in c["detail"], c
    ok = _Ctx(40.0)
    physical_floor(ok)
    assert _check(ok.result, "physical_floor")["ok"] is True
    unknown = _Ctx(5.0, gpu="Mystery Accelerator")
    physical_floor(unknown)
    c = _check(unknown.result, "physical_floor")
    assert c["ok"] is None and "not known" in c["detail"]
    host = _Ctx(0.001, method="host", device="cpu")
    physical_floor(host)
    assert _check(host.result, "physical_floor")["ok"] is None


@torch_missing
def test_a_kernel_raising_in_the_timed_loop_is_its_own_failure(tmp_path):
    """Correct for the checked calls, then raising when ktui's own clock times it: the failure is
    the kernel's (a runtime error during timing), never a harness error that says nothing about it."""
    late = '''
import sys, torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == "op_wall":
                raise RuntimeError("tired of being timed")
            f = f.f_back
        return torch.clamp(x, min=0) * 2.0
'''
    res = _run(late, tmp_path)
    f = res["failure"]
    assert f["kind"] == "runtime_error" and f["stage"] == "timing", f
    assert "the kernel raised while timed by ktui's clock: " in f["message"] and "tired of being timed" in f["message"]


@torch_missing
def test_tampering_is_named_when_the_output_is_wrong_too(tmp_path):
    wrong_and_tampering = '''
import gc, torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        for o in gc.get_objects():
            if isinstance(o, torch.Tensor) and o is not x and o.shape == x.shape and o.is_floating_point():
                o.fill_(float("nan"))
        return torch.clamp(x, min=0) * 3.0
'''
    res = _run(wrong_and_tampering, tmp_path)
    assert res["status"] == "completed" and not res["correctness"]["passed"], res.get("failure")
    c = _check(res, "tampering")
    assert c["ok"] is False and "tampers with other tensors" in c["detail"], c
    assert _check(res, "threads_left_running")["ok"] is True  # the other probe that runs on a failure
    assert not any(c["name"] == "shape_jitter" for c in res["checks"])  # the rest need a correct kernel


@torch_missing
def test_physical_floor_judges_the_timers_own_claim():
    from ktui.engine.probes.floor import physical_floor

    # ktui's clock disagreed and replaced the reported time: the event timer's claim is judged
    ctx = _Ctx(120.0)
    ctx.result["timing"]["kernel_own"] = {"median_us": 4.0}
    physical_floor(ctx)
    assert _check(ctx.result, "physical_floor")["ok"] is False


@torch_missing
def test_unwritten_output_is_seen_by_the_judge(tmp_path):
    empty = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty_like(x)
'''
    res = _run(empty, tmp_path)
    assert not res["correctness"]["passed"]
    c = _check(res, "unwritten_output")
    assert c["ok"] is False and "never wrote" in c["detail"], c
    assert _check(_run(HONEST, tmp_path), "unwritten_output")["ok"] is True


def test_sentinel_fraction():
    import torch

    from ktui.engine.probes.unwritten import SENTINEL, sentinel_fraction

    t = torch.zeros(8, dtype=torch.float32)
    t.view(torch.uint8)[:16] = SENTINEL  # 4 of 8 elements are all-sentinel bytes
    assert sentinel_fraction(t) == 0.5
    assert sentinel_fraction(torch.randn(64)) == 0.0
    assert sentinel_fraction(torch.full((4,), SENTINEL, dtype=torch.uint8)) == 1.0


@torch_missing
def test_a_forged_probe_reply_is_a_protocol_error(tmp_path):
    """A kernel that replaces a worker probe with one answering a tensor descriptor for a memfd
    that does not exist: the run ends as a protocol error (about the worker it took over), never
    a harness error."""
    forged = '''
import ktui.engine.probes as P
P.WORKER_PROBES["fresh_output"] = lambda *a, **k: {"findings": [], "data": {
    "problems": [], "first": {"__tensor__": 7, "dtype": "float32", "shape": [8, 64], "nbytes": 2048, "type": "x"},
    "second": None}}
''' + HONEST
    res = _run(forged, tmp_path)
    f = res["failure"]
    assert f["kind"] == "protocol_error" and f["stage"] == "checks", f
    assert "harness error" not in f["message"]


def test_thread_origin_kernel_or_library():

    from ktui.engine.probes.threads import origin_of

    # a frame of this test file (outside any installed library): counted as the kernel's
    where, kernel = origin_of(sys._getframe())
    assert kernel and where.startswith("test_repro_probes.py:")
    import torch

    # code running inside torch's own files is a library's
    fake = {"__name__": "torch.fake"}
    code = compile("import sys\nf = sys._getframe()", torch.__file__, "exec")
    exec(code, fake)
    assert origin_of(fake["f"])[1] is False


def _event_ctx(ek, hk, er, hr, busy=None):
    class Ctx:
        result = {"timing": {"method_used": "cuda_event", "kernel": {"median_us": ek}, "reference": {"median_us": er},
                             "cross_check": {"kernel_wall_us": hk, "reference_wall_us": hr}},
                  "launches": {"kernel": {"cuda_time_us": busy}} if busy is not None else None, "checks": []}

        def add_check(self, name, ok, detail):
            self.result["checks"].append({"name": name, "ok": ok, "detail": detail})

    return Ctx()


def test_host_vs_event_time_tells_host_overhead_from_hidden_work():
    """The H200 figures of the honest kernel that runs on its own stream and joins it back (event
    22.9 us, ktui's wall clock 64.8 us; the reference 6.5 vs 16.4): the GPU ran no more than the
    events saw, so the gap is host time. The same gap with the GPU busy far longer than the events
    (work on a stream nobody waits for) is hidden work; without the GPU's record the gap decides."""
    from ktui.engine.probes.basic import host_vs_event_time

    honest = _event_ctx(22.9, 64.8, 6.5, 16.4, busy=3.1)
    host_vs_event_time(honest)
    c = honest.result["checks"][-1]
    assert c["ok"] is True and "host time, not hidden work" in c["detail"], c
    hidden = _event_ctx(22.9, 640.0, 6.5, 16.4, busy=610.0)
    host_vs_event_time(hidden)
    c = hidden.result["checks"][-1]
    assert c["ok"] is False and "587.1 us more than the events saw" in c["detail"], c
    assert "outside the timed stream" in c["detail"]
    unknown = _event_ctx(22.9, 64.8, 6.5, 16.4)
    host_vs_event_time(unknown)
    assert unknown.result["checks"][-1]["ok"] is False
    close = _event_ctx(22.9, 30.0, 6.5, 16.4, busy=900.0)  # the events and the wall clock agree
    host_vs_event_time(close)
    assert close.result["checks"][-1]["ok"] is True


# a C++ extension whose call is only a marker (its result is ignored: torch computes the answer),
# and an honest one that writes its answer into the output buffer it is given (returns nothing)
MARKER_EXT = '''
import torch, torch.nn as nn
from torch.utils.cpp_extension import load_inline
cpp = "torch::Tensor touch(torch::Tensor x) { return x; }"
mod = load_inline(name="ktui_probe_marker", cpp_sources=[cpp], functions=["touch"], verbose=False)
class ModelNew(nn.Module):
    def forward(self, x):
        mod.touch(x)
        return torch.relu(x) * 2.0
'''
IDENTITY_MARKER_EXT = '''
import torch, torch.nn as nn
from torch.utils.cpp_extension import load_inline
cpp = "torch::Tensor prepare(torch::Tensor x) { return x.contiguous(); }"
mod = load_inline(name="ktui_probe_identity", cpp_sources=[cpp], functions=["prepare"], verbose=False)
class ModelNew(nn.Module):
    def forward(self, x):
        y = mod.prepare(x)
        return torch.relu(y) * 2.0
'''
WRITES_INTO_EXT = '''
import torch, torch.nn as nn
from torch.utils.cpp_extension import load_inline
cpp = """
void fill(torch::Tensor x, torch::Tensor y) {
    auto xc = x.contiguous();
    const float* in = xc.data_ptr<float>();
    float* out = y.data_ptr<float>();
    for (int64_t i = 0; i < xc.numel(); ++i) out[i] = in[i] > 0.0f ? 2.0f * in[i] : 0.0f;
}
"""
mod = load_inline(name="ktui_probe_fill", cpp_sources=[cpp], functions=["fill"], verbose=False)
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        mod.fill(x, y)
        return y
'''


def _ghost(kernel, tmp_path):
    """The ghost run's check on a completed reproduction of ``kernel``."""
    res = _run(kernel, tmp_path)
    assert res["status"] == "completed", res.get("failure")
    return _check(res, "ghost_run")


@needs("torch", "ninja")
@pytest.mark.timeout(1800)  # three judge runs, each building a C++ extension (over 100 s each at load 15)
def test_ghost_run_sees_through_a_marker_extension(tmp_path):
    """The ghost run's first pass (every extension function raises) makes a marker kernel fail
    like an honest one; its next passes (they do nothing and return NaN, then their input) tell
    them apart: the marker's output is still correct, the honest kernel's is not, even though
    its output buffer is torch.empty (freed memory holds a sentinel first, so no stale earlier
    answer shows)."""
    c = _ghost(MARKER_EXT, tmp_path)
    assert c["ok"] is False and "does not do the work" in c["detail"] and "marker call" in c["detail"], c
    # its result is used, but it only hands its input back: torch computes the answer
    c = _ghost(IDENTITY_MARKER_EXT, tmp_path)
    assert c["ok"] is False and "returns its input, the output is still correct" in c["detail"], c
    c = _ghost(WRITES_INTO_EXT, tmp_path)
    assert c["ok"] is True and "returns NaN, its output is wrong" in c["detail"], c
    assert "returns its input, its output is wrong" in c["detail"], c


# a stand-in for triton.jit (triton needs a GPU): kernel[grid](...) calls self.run, as triton's
# JITFunction does; the ghost run finds such objects by their type's name
_FAKE_TRITON = '''
import torch, torch.nn as nn
class JITFunction:  # stands in for triton.runtime.jit.JITFunction
    def __init__(self, fn):
        self.fn = fn
    def __getitem__(self, grid):
        return lambda *a, **k: self.run(*a, grid=grid, **k)
    def run(self, *a, grid=None, **k):
        return self.fn(*a, **k)
'''
TRITON_MARKER = _FAKE_TRITON + '''
def _presence(x, y):
    pass
presence = JITFunction(_presence)
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        presence[(1,)](x, y)
        return torch.relu(x) * 2.0
'''
TRITON_HONEST = _FAKE_TRITON + '''
def _fill(x, y):
    y.copy_(torch.where(x > 0, x + x, torch.zeros_like(x)))
fill = JITFunction(_fill)
class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        fill[(1,)](x, y)
        return y
'''


@torch_missing
def test_ghost_run_covers_triton_kernels(tmp_path):
    """Triton kernels are ghosted too (their run replaced): a marker launch is seen through, a
    kernel that writes its output through the launch is not flagged."""
    c = _ghost(TRITON_MARKER, tmp_path)
    assert c["ok"] is False and "_presence" in c["detail"] and "does not do the work" in c["detail"], c
    c = _ghost(TRITON_HONEST, tmp_path)
    assert c["ok"] is True and "_fill" in c["detail"], c


# ---- stream order (CUDA): work on a stream never ordered after the caller's -----------------------
def _has_cuda():
    import importlib.util

    return importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available()


cuda_missing = pytest.mark.skipif(not _has_cuda(), reason="needs a CUDA GPU")


class _FakeStreamPrims:
    """CPU stand-ins for the primitives the stream-order worker uses, logging what runs where."""

    def __init__(self, log):
        import time

        self.log, self.stream, self.perf, self.in_caller = log, "caller", time.perf_counter, False

    def stream_ctx(self, stream):
        import contextlib

        prims = self

        @contextlib.contextmanager
        def ctx():
            prims.in_caller = stream == "caller"
            try:
                yield
            finally:
                prims.in_caller = False
        return ctx()

    def sync_all(self):
        self.log.append("sync")

    def event(self):
        return {}

    def record(self, ev):
        ev["t"] = self.perf()
        self.log.append(("record", self.in_caller))

    def gpu_sleep(self, cycles):
        self.log.append(("sleep", cycles, self.in_caller))

    def ev_elapsed(self, a, b):
        return 50.0  # ms: the "GPU" was still sleeping when forward returned


@torch_missing
def test_late_forward_delays_inputs_on_the_callers_stream_only(monkeypatch):
    """The worker half, on stand-in primitives: the inputs hold other values until a sleep and
    the copy queued on the caller's stream, forward runs outside that stream context (where the kernel
    put it: the timed loop's situation), and its output is copied on the caller's stream."""
    import torch

    import ktui.engine.roles as roles
    from ktui.engine.probes.streams import CYCLES_PER_MS, late_forward

    log = []
    prims = _FakeStreamPrims(log)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))  # stand-in CUDA tensors
    x, idx, stale = torch.randn(4, 8), torch.arange(4), [torch.randn(4, 8), torch.arange(4) + 10]

    class Model:
        def __call__(self, a, b):
            log.append(("forward", prims.in_caller, torch.equal(a, x), b.tolist()))
            return {"y": [a * 2.0]}

    class W:
        pass

    w = W()
    w.prims, w.model = prims, Model()
    monkeypatch.setattr(roles, "guarded", lambda stage, fn, *a, **k: fn(*a))
    x0 = x.clone()
    snap, host_s, gpu_ms = late_forward(w, [x, idx], stale, 20.0)
    assert ("sleep", int(20.0 * CYCLES_PER_MS), True) in log
    fwd = next(e for e in log if e[0] == "forward")
    assert fwd == ("forward", False, True, [0, 1, 2, 3])  # real values back, integers untouched
    assert torch.equal(x, x0)
    assert log.index(("sleep", int(20.0 * CYCLES_PER_MS), True)) < log.index(fwd)
    assert log.count("sync") == 2 and log[-1] == "sync"
    assert torch.equal(snap["y"][0], x * 2.0) and gpu_ms == 50.0 and host_s >= 0


def _stream_ctx(runs, ref_value, stale_value=None):
    """A judge-side ProbeContext stand-in whose candidate returns ``runs`` (outputs encoded for
    real, through memfds), the reference's output being ``ref_value``."""
    import torch

    from ktui.engine import protocol, shm
    from ktui.engine.compare import compare_outputs

    x = torch.randn(4, 8)
    fds, outs, timings = [], [], []
    for out, host_ms, gpu_ms in runs:
        outs.append(shm.encode_value(out, fds))
        timings.append({"host_ms": host_ms, "gpu_ms": gpu_ms, "sleep_ms": 20.0})

    class Held:
        def __init__(self, value, fds_):
            self.value, self.fds = value, fds_

        def decoded(self):
            return self.value

    class Cand:
        def call(self, op, args, fds_=None):
            assert (op, args["name"], args["args"]) == ("probe", "late_inputs",
                                                        {"slot": "p-stream", "stale": "p-stream-stale"})
            return {"data": {"outputs": outs, "runs": timings}}, fds

    class Ctx:
        judge = type("J", (), {"device_kind": "cuda"})()
        input_seed = 5
        candidate = Cand()
        compare = staticmethod(compare_outputs)
        result = {"checks": []}

        def trial(self, *a):
            pass

        def alone(self, what):  # the device-lock window (devicelock.py): nothing to lock here
            import contextlib

            return contextlib.nullcontext()

        def candidate_inputs(self, seed, slot):
            if slot == "p-stream-stale":
                return Held([x + 1.0], []), Held(stale_value if stale_value is not None else ref_value * 0 - 7, [])
            return Held([x], []), Held(ref_value, [])

        def hold(self, value, fds_):
            protocol.check_value(value, len(fds_), "probe data")  # as ProbeContext.hold does
            return Held(value, fds_)

        def add_check(self, name, ok, detail):
            self.result["checks"].append({"name": name, "ok": ok, "detail": detail})

    return Ctx()


@torch_missing
def test_stream_order_judges_what_the_callers_stream_saw():
    """The judge half: an output read on the caller's stream that is wrong is a finding whatever
    the timings; a right one passes only when forward returned while the inputs were still late
    (otherwise the run proves nothing: not judged, never a pass)."""
    import torch

    from ktui.engine.probes.streams import stream_order

    ref = torch.ones(4, 8)
    stale = torch.full((4, 8), 3.0)  # the reference's answer on the values the inputs held until ready
    ctx = _stream_ctx([(stale, 0.2, 20.0)], ref, stale)
    stream_order(ctx)
    c = ctx.result["checks"][-1]
    assert c["ok"] is False and "20.0 ms late" in c["evidence"], c
    assert "computed on the values its inputs held before the caller's stream wrote them" in c["detail"], c
    unfinished = torch.zeros(4, 8)  # neither answer: read too early or not finished
    ctx = _stream_ctx([(unfinished, 0.2, 20.0)], ref, stale)
    stream_order(ctx)
    c = ctx.result["checks"][-1]
    assert c["ok"] is False and "before it was finished" in c["detail"], c
    ctx = _stream_ctx([(ref.clone(), 0.3, 20.0)], ref)
    stream_order(ctx)
    c = ctx.result["checks"][-1]
    assert c["ok"] is True and "ordered after the caller's stream" in c["detail"], c
    ctx = _stream_ctx([(ref.clone(), 25.0, 20.0), (ref.clone(), 250.0, 200.0), (ref.clone(), 1500.0, 1000.0)], ref)
    stream_order(ctx)
    c = ctx.result["checks"][-1]
    assert c["ok"] is None and "not judged" in c["detail"], c
    # a wrong output in an early (inconclusive) run still counts
    ctx = _stream_ctx([(stale, 25.0, 20.0), (ref.clone(), 50.0, 200.0)], ref)
    stream_order(ctx)
    assert ctx.result["checks"][-1]["ok"] is False


@torch_missing
def test_stream_order_needs_cuda(tmp_path):
    res = _run(HONEST, tmp_path)
    c = _check(res, "stream_order")
    assert c["ok"] is None and "needs CUDA" in c["detail"], c


UNJOINED_STREAM = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        torch.cuda.synchronize()  # a decoy "join" for a text search
        self.side = torch.cuda.streams.Stream()
    def forward(self, x):
        with torch.cuda.stream(self.side):
            return torch.relu(x) * 2.0
'''
GLOBAL_STREAM = '''
import torch, torch.nn as nn
torch.cuda.set_stream(torch.cuda.Stream())  # every later launch, the timed ones included, goes there
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
'''
JOINED_STREAM = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()
    def forward(self, x):
        main = torch.cuda.current_stream()
        self.side.wait_stream(main)
        with torch.cuda.stream(self.side):
            y = torch.relu(x) * 2.0
        main.wait_stream(self.side)
        y.record_stream(main)
        return y
'''


@cuda_missing
@pytest.mark.parametrize("kernel, ok", [(UNJOINED_STREAM, False), (GLOBAL_STREAM, False), (JOINED_STREAM, True),
                                        (HONEST, True)], ids=["unjoined", "global", "joined", "same-stream"])
def test_stream_order_on_a_gpu(tmp_path, kernel, ok):
    res = _run(kernel, tmp_path, device="cuda")
    assert res["status"] == "completed", res.get("failure")
    c = _check(res, "stream_order")
    assert c["ok"] is ok, c


# a kernel that leaves a thread burning the CPU between its calls: while the reference is timed
# it would slow the reference (and so inflate the speedup), unless ktui stops the kernel's processes
SPINNER = '''
import threading, torch, torch.nn as nn
def _spin():
    n = 0
    while True:
        n += 1
threading.Thread(target=_spin, daemon=True).start()
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0) * 2.0
'''


@torch_missing
def test_the_kernel_is_stopped_while_the_reference_is_timed(tmp_path):
    """The reference's timing and its wall clock run with the candidate's processes stopped: the
    spinning thread gets no CPU then (measured by ktui from /proc), and the candidate works
    again afterwards (the probes after timing still run it)."""
    res = _run(SPINNER, tmp_path, trials=60)
    assert res["status"] == "completed", res.get("failure")
    st = res["timing"]["candidate_stopped"]
    assert st["windows"] >= 2 and st["processes"] >= 1, st
    assert st["seconds"] > 0.05, st  # long enough for a spinning thread to show on /proc's clock
    assert st["cpu_seconds"] <= 0.02 + 0.1 * st["seconds"], st
    # the candidate ran again after the windows (a probe that runs whatever the kernel's speed:
    # the spinner makes it slower than the reference, so the speed-only ones are not needed)
    assert _check(res, "repeated_calls")["ok"] is True
    assert _check(res, "threads_left_running")["ok"] is False  # and the spinner is named


@torch_missing
def test_stopping_a_process_tree_stops_its_cpu_use():
    """The mechanism on its own: a child that spins uses no CPU while its tree is stopped, and
    spins again once it continues."""
    import subprocess
    import time

    from ktui.engine import sandbox

    p = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
    try:
        time.sleep(0.3)
        pids = sandbox.stop_tree(p)
        assert p.pid in pids and sandbox.wait_stopped(pids)
        c0 = sandbox.cpu_seconds(pids)
        time.sleep(0.5)
        assert sandbox.cpu_seconds(pids) - c0 <= 0.02
        sandbox.continue_tree(p, pids)
        c1 = sandbox.cpu_seconds(pids)
        time.sleep(0.5)
        assert sandbox.cpu_seconds(pids) - c1 >= 0.1
    finally:
        p.kill()
        p.wait()


# tried as an attack on the stop while the reference is timed: a daemon double-forked (setsid) at
# load, spinning in the background, outside the forward the threads probe watches
DAEMON = '''
import os, time, torch, torch.nn as nn
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            pass
    os._exit(0)
time.sleep(0.2)
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0) * 2.0
'''


@torch_missing
def test_a_daemon_started_at_load_is_stopped_and_named(tmp_path):
    """Still in the worker's tree (its PID namespace), the daemon is stopped while the reference
    is timed (no CPU then), and the threads check names it: it works while the kernel is idle."""
    res = _run(DAEMON, tmp_path, trials=60)
    assert res["status"] == "completed", res.get("failure")
    st = res["timing"]["candidate_stopped"]
    assert st["processes"] >= 3 and st["cpu_seconds"] <= 0.02 + 0.1 * st["seconds"], st
    c = _check(res, "threads_left_running")
    assert c["ok"] is False and "1 process the kernel's code started keeps working" in c["detail"], c


# ---- issue 26: probes on what the kernel is given -----------------------------------------------

LINEAR_REF = '''
import torch, torch.nn as nn
B, IN, OUT = 16, 32, 24
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(IN, OUT)
    def forward(self, x):
        return self.lin(x)
def get_inputs():
    return [torch.randn(popcorn_pri.jitter_int(B), IN)]
def get_init_inputs():
    return []
'''

HONEST_LINEAR = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 24)
    def forward(self, x):
        return x @ self.lin.weight.t() + self.lin.bias
'''


@torch_missing
def test_honest_kernel_passes_the_input_probes(tmp_path):
    res = _run(HONEST_LINEAR, tmp_path, reference=LINEAR_REF)
    assert res["status"] == "completed", res.get("failure")
    for name in ("input_distributions", "repeated_calls", "parameter_update"):
        c = _check(res, name)
        assert c["ok"] is True, c


@torch_missing
def test_input_probes_catch_their_hacks(tmp_path):
    # right only when the input looks like randn (mean ~0, std ~1): otherwise a cheap wrong answer
    randn_only = HONEST_LINEAR.replace("        return x @ self.lin.weight.t() + self.lin.bias", '''
        m, s = float(x.mean()), float(x.std())
        if abs(m) > 0.3 or abs(s - 1.0) > 0.3:
            return torch.zeros(x.shape[0], 24)
        return x @ self.lin.weight.t() + self.lin.bias''')
    # a weight-only product computed once, at construction (kept as a plain attribute)
    precomputed = HONEST_LINEAR.replace('''        self.lin = nn.Linear(32, 24)''', '''        self.lin = nn.Linear(32, 24)
        self._wt = None''').replace("        return x @ self.lin.weight.t() + self.lin.bias", '''
        if self._wt is None:
            self._wt = (self.lin.weight.t().clone(), self.lin.bias.clone())
        return x @ self._wt[0] + self._wt[1]''')
    # from the third identical call on the same buffer, a copy of the previous output
    third_call = HONEST_LINEAR.replace("        return x @ self.lin.weight.t() + self.lin.bias", '''
        key = x.data_ptr()
        st = self.__dict__.setdefault("_st", {"k": None, "n": 0, "o": None})
        st["n"] = st["n"] + 1 if st["k"] == key else 1
        st["k"] = key
        if st["n"] >= 3 and st["o"] is not None:
            return st["o"].clone()
        st["o"] = x @ self.lin.weight.t() + self.lin.bias
        return st["o"]''')
    for code, name in ((randn_only, "input_distributions"), (precomputed, "parameter_update"),
                       (third_call, "repeated_calls")):
        res = _run(code, tmp_path, reference=LINEAR_REF)
        assert res["status"] == "completed", (name, res.get("failure"))
        c = _check(res, name)
        assert c["ok"] is False, (name, c)


TWO_SIZES_REF = '''
import torch, torch.nn as nn
batch = 8
width = 48
class Model(nn.Module):
    def forward(self, x):
        return x.cumsum(dim=1)
def get_inputs():
    return [torch.randn(batch, width)]
def get_init_inputs():
    return []
'''


@torch_missing
def test_every_dimension_is_changed_one_at_a_time(tmp_path):
    # right whatever the batch, but written for width 48 only (the second size the reference reads)
    fixed_width = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], 48)
        out[:, :min(48, x.shape[1])] = x[:, :48].cumsum(dim=1)
        return out
'''
    c = _check(_run(fixed_width, tmp_path, reference=TWO_SIZES_REF), "shape_jitter")
    assert c["ok"] is False and "width" in c["detail"], c
    honest = fixed_width.replace("out = torch.empty(x.shape[0], 48)\n        out[:, :min(48, x.shape[1])] = "
                                 "x[:, :48].cumsum(dim=1)\n        return out", "return x.cumsum(dim=1)")
    c = _check(_run(honest, tmp_path, reference=TWO_SIZES_REF), "shape_jitter")
    assert c["ok"] is True and "more dimension" in c["detail"], c


def test_a_constant_the_reference_model_reads_is_its_configuration_not_a_size():
    # a quantization group or a head count that Model.forward reads: the reference is written for it,
    # so shape_jitter must not change it (honest Harbor kernels were "hard-coded shapes" at GROUP
    # 128 -> 256 on an H200); the sizes only get_inputs reads stay candidates
    import types

    from ktui.engine.probes.shapes import model_constants, size_constants

    src = '''
import torch
GROUP = 128
H, DH = 16, 128
M, K = 16, 1024
class Base(torch.nn.Module):
    def _heads(self):
        return H
class Model(Base):
    def forward(self, x, s):
        g = x.shape[1] // GROUP
        return x.reshape(x.shape[0], g, GROUP).sum(-1) * s + self._heads()
def get_inputs():
    return [torch.randn(M, K), torch.randn(K // GROUP) + DH * 0]
'''
    mod = types.ModuleType("ref_cfg")
    exec(compile(src, "ref_cfg.py", "exec"), mod.__dict__)
    assert {"GROUP", "H"} <= model_constants(mod.Model)
    assert [n for n, _ in size_constants(mod)] == ["M", "K", "DH"]
    assert model_constants(None) == set()


# a sum over K (module-level size, as KernelBench's L1 problem 6 with K = 524,288)
REF_SUM_K = '''
import torch, torch.nn as nn
M, K = 8, 4096
class Model(nn.Module):
    def forward(self, x):
        return x.sum(dim=1)
def get_inputs():
    return [torch.rand(M, K)]
def get_init_inputs():
    return []
'''


@torch_missing
def test_shape_jitter_tells_an_accuracy_limit_from_a_hard_coded_size(tmp_path):
    # honest, with an error that grows with K (as float32 summed in one long sequence): inside
    # rtol 1e-4 at the usual K (0.9e-4), outside at a larger K; the same kind of error: not a flag
    grows = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        k = x.shape[1] / 4096.0
        return x.sum(dim=1) * (1.0 + 0.9e-4 * k * k)
'''
    res = _run(grows, tmp_path, reference=REF_SUM_K)
    assert res["correctness"]["passed"], res["correctness"]
    c = _check(res, "shape_jitter")
    assert c["ok"] is None and "not judged" in c["detail"] and "accuracy" in c["detail"], c
    assert "K: 4096 ->" in c["detail"], c
    # a hard-coded K: the terms past it are never summed, an error of the order of the values
    hard = '''
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x[:, :4096].sum(dim=1)
'''
    c = _check(_run(hard, tmp_path / "h", reference=REF_SUM_K), "shape_jitter")
    assert c["ok"] is False and "hard-coded shapes" in c["detail"], c
    # an error far past the kernel's own at the usual size is a hard-coded size too, even if small
    from ktui.engine.probes.shapes import accuracy_miss, scaled_error

    assert accuracy_miss(1e-6, 5e-4) is None  # 500x its usual error
    assert accuracy_miss(5e-5, 2e-3) is None  # over the cap
    assert accuracy_miss(5e-5, 1.2e-4) is not None
    assert accuracy_miss(None, 1e-5) is None
    torch = pytest.importorskip("torch")
    r = torch.tensor([100.0, 200.0])
    assert scaled_error(r, r * 1.001) == pytest.approx(1e-3, rel=1e-3)
    assert scaled_error(r, torch.tensor([100.0, float("nan")])) is None
    assert scaled_error(r, torch.ones(3)) is None
    assert scaled_error((r, 3), (r, 4)) is None


@torch_missing
def test_a_kernel_that_crashes_at_another_size_is_a_finding_not_a_failed_judgement(tmp_path):
    # a real Popcorn kernel cached a permutation of the first size it saw and read past it at
    # another size: an illegal address on a GPU (a fatal CUDA error), a SIGSEGV here
    crashes = HONEST.replace("return torch.clamp", "import ctypes\n        if x.shape[0] != 8:\n"
                             "            ctypes.string_at(0)  # a read at address 0\n        return torch.clamp")
    res = _run(crashes, tmp_path)
    assert res["status"] == "completed", res.get("failure")
    assert res["correctness"]["passed"]
    c = _check(res, "shape_jitter")
    assert c["ok"] is False and "hard-coded shapes" in c["detail"] and "crashes" in c["detail"], c
    # every other check ran before it (it is the last probe)
    names = [x["name"] for x in res["checks"]]
    assert names[-1] == "shape_jitter" and "input_distributions" in names and "repeated_calls" in names, names
