"""Physical floors from the work itself: the reference forward's FLOPs (FlopCounterMode, counted
in the reference worker) at the GPU's peak for its dtype. A time below what the GPU can compute is
a named class on every path (the check becomes a finding in the verdict). CPU-testable with a fake
device table entry."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ktui.engine.probes import floor  # noqa: E402

FAKE = "Fake Accelerator X1"
N = 2048
GEMM_FLOPS = 2 * N * N * N  # 17.2 GFLOP


@pytest.fixture
def fake_gpu(monkeypatch):
    table = dict(floor.PEAK_TFLOPS)
    table["Accelerator X1"] = {"fp64": 10.0, "fp32": 67.0, "tf32": 495.0, "fp16": 990.0, "fp8": 1980.0}
    monkeypatch.setattr(floor, "PEAK_TFLOPS", table)
    monkeypatch.setitem(floor.PEAK_DRAM_GBS, "Accelerator X1", 4800.0)
    return FAKE


def test_matmul_faster_than_the_gpu_can_compute(fake_gpu):
    bad, why = floor.compute_floor(GEMM_FLOPS, "torch.float32", fake_gpu, 16.0)  # ~1.07 PFLOP/s
    assert bad is True
    assert "1.1 PFLOP/s needed" in why and "fp32 peak 67 TFLOP/s" in why and "TF32 tensor cores 495" in why
    # an honest tensor-core kernel at 400 TFLOP/s (43 μs) is possible; so is one at fp32 speed
    assert floor.compute_floor(GEMM_FLOPS, "torch.float32", fake_gpu, 43.0)[0] is False
    assert floor.compute_floor(GEMM_FLOPS, "torch.float32", fake_gpu, 300.0)[0] is False
    # half precision: the fp16 peak is the floor
    assert floor.compute_floor(GEMM_FLOPS, "torch.bfloat16", fake_gpu, 12.0)[0] is True  # 1.4 PFLOP/s
    assert floor.compute_floor(GEMM_FLOPS, "torch.bfloat16", fake_gpu, 19.0)[0] is False


def test_not_judged_without_work_or_a_known_part(fake_gpu):
    assert floor.compute_floor(0, "torch.float32", fake_gpu, 1.0)[0] is None  # elementwise: no counted FLOPs
    bad, why = floor.compute_floor(GEMM_FLOPS, "torch.float32", "Unknown GPU 9000", 1.0)
    assert bad is None and "not known" in why
    assert floor.compute_floor(2 * 64**3, "torch.float32", fake_gpu, 0.01)[0] is None  # floor below launch latency


def test_table_covers_the_datacenter_parts():
    for name, fp32 in (("NVIDIA H200", 67.0), ("NVIDIA H100 80GB HBM3", 67.0), ("NVIDIA H100 PCIe", 51.0),
                       ("NVIDIA A100-SXM4-80GB", 19.5), ("NVIDIA L40S", 91.6), ("AMD Instinct MI300X", 163.4)):
        fastest, quoted, key = floor.peak_tflops(name, "torch.float32")
        assert quoted == fp32 and fastest >= quoted, (name, key)


class _W:
    """What a worker-side probe sees (ktui.engine.roles.Context)."""

    def __init__(self, model, inputs):
        self.model = model
        self.slots = {"p-floor": inputs}
        self.device = torch.device("cpu")


def test_reference_worker_counts_the_forward():
    class Model(torch.nn.Module):
        def forward(self, a, b):
            return torch.relu(a @ b)

    a, b = torch.randn(64, 32), torch.randn(32, 16)
    res = floor.reference_work(_W(Model(), [a, b]), {"slot": "p-floor"}, [], [])
    assert res["data"]["flops"] == 2 * 64 * 32 * 16 and res["data"]["dtype"] == "torch.float32"
    conv = torch.nn.Conv2d(3, 8, 3).to(torch.float64)
    res = floor.reference_work(_W(conv, [torch.randn(1, 3, 10, 10, dtype=torch.float64)]), {"slot": "p-floor"}, [],
                               [])
    assert res["data"]["flops"] == 2 * 8 * 3 * 3 * 3 * 8 * 8 and res["data"]["dtype"] == "torch.float64"


class _Held:
    def __init__(self, v):
        self.v = v

    def decoded(self):
        return self.v


class _Ref:
    def __init__(self, flops, dtype):
        self.reply = {"findings": [], "data": {"flops": flops, "dtype": dtype}}

    def call(self, op, args):
        assert op == "probe" and args["name"] == "work"
        return self.reply, []


class _Ctx:
    def __init__(self, gpu, median_us, flops):
        self.result = {"device": "cuda:0", "environment": {"gpu": gpu}, "checks": [],
                       "timing": {"method_used": "cuda_event", "kernel": {"median_us": median_us}}}
        self.input_seed = 1
        self.reference = _Ref(flops, "torch.float32")

    def add_check(self, name, ok, detail):
        self.result["checks"].append({"name": name, "ok": ok, "detail": detail})

    def trial(self, *a):
        pass

    def reference_io(self, seed, slot):
        return _Held([torch.empty(N, N), torch.empty(N, N)]), _Held(torch.empty(N, N))


def test_probe_names_the_class_and_the_verdict_leads_with_it(fake_gpu):
    ctx = _Ctx(fake_gpu, 16.0, GEMM_FLOPS)
    floor.physical_floor(ctx)
    checks = {c["name"]: c for c in ctx.result["checks"]}
    assert checks["physical_floor"]["ok"] is True  # 48 MiB at 4.8 TB/s is ~10 μs: the memory allows it
    cf = checks["compute_floor"]
    assert cf["ok"] is False and cf["detail"].startswith("faster than the GPU can compute: 1.1 PFLOP/s needed")
    assert ctx.result["timing"]["reference_flops"] == GEMM_FLOPS
    # an honest time: the check passes
    ok = _Ctx(fake_gpu, 60.0, GEMM_FLOPS)
    floor.physical_floor(ok)
    assert {c["name"]: c["ok"] for c in ok.result["checks"]}["compute_floor"] is True
    # a hostile reply from the reference worker is not trusted
    bad = _Ctx(fake_gpu, 16.0, GEMM_FLOPS)
    bad.reference.reply = {"findings": [], "data": {"flops": "lots", "dtype": 7}}
    floor.physical_floor(bad)
    assert {c["name"]: c["ok"] for c in bad.result["checks"]}["compute_floor"] is None


def test_compute_floor_check_is_a_finding_in_every_verdict():
    from ktui.repro.judging.judges import CHECK_TITLES, Evidence, judge_honesty

    class Rec:
        metrics: list = []

    res = {"status": "completed", "checks": [{"name": "compute_floor", "ok": False,
                                               "detail": "faster than the GPU can compute: 1.1 PFLOP/s needed"}]}
    j = judge_honesty(Evidence(Rec(), res, []))
    assert [f.cls for f in j.findings] == ["compute_floor"]
    assert j.findings[0].title == CHECK_TITLES["compute_floor"] == "faster than the GPU can compute"


def test_the_floor_counts_the_work_a_faster_algorithm_cannot_skip():
    """KernelBench L1 P12 (``torch.diag(A) @ B``): FlopCounterMode counts an N x N x M product; the
    real work is N x M multiplications, and a real Triton kernel that scales B's rows was called
    "faster than the GPU can compute" on an H200. The essential count scales each op by its
    sparsest operand and the total by the nonzero share of the output; a dense product keeps its count."""

    class Diag(torch.nn.Module):
        def forward(self, a, b):
            return torch.diag(a) @ b

    n, m = 512, 256
    a, b = torch.randn(n), torch.randn(n, m)
    res = floor.reference_work(_W(Diag(), [a, b]), {"slot": "p-floor"}, [], [])["data"]
    assert res["dense_flops"] == 2 * n * n * m
    assert res["flops"] <= 2 * 2 * n * m  # about 2 N M: the diagonal's zeros are not work

    class Triu(torch.nn.Module):
        def forward(self, a, b):
            return torch.triu(a @ b)

    x, y = torch.randn(256, 256), torch.randn(256, 256)
    res = floor.reference_work(_W(Triu(), [x, y]), {"slot": "p-floor"}, [], [])["data"]
    assert res["dense_flops"] == 2 * 256 ** 3 and 0.45 * res["dense_flops"] < res["flops"] < 0.55 * res["dense_flops"]

    class Dense(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    res = floor.reference_work(_W(Dense(), [x, y]), {"slot": "p-floor"}, [], [])["data"]
    assert res["flops"] == res["dense_flops"] == 2 * 256 ** 3
