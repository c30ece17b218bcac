"""The physical floors: no kernel moves its data faster than the GPU's DRAM, nor computes faster
than its arithmetic units. The bytes the
reference reads and writes (its inputs and outputs; timing flushes the L2 before every trial)
divided by the GPU's peak DRAM bandwidth is a time no honest kernel beats; one timed at less
than PHYSICAL_FRACTION of it did not do the work it was timed for (or was not timed doing it).
The empty-op timer floor (measured in the reference worker before any trace code loaded) is
judged with the timing (``below_timer_floor``); both are in this probe's detail.

The compute floor: the reference forward's floating-point operations, counted once per problem
in the reference worker (``torch.utils.flop_counter.FlopCounterMode``: matmuls, convolutions,
attention), each op's count times the density of its sparsest operand and the total times the
share of nonzero output elements (the work a faster algorithm cannot skip: a KernelBench
``diag(A) @ B`` reference counts an N x N x M product, the honest kernel scales rows, and was
"faster than the GPU can compute" on the H200), divided by the GPU's dense peak for the reference's dtype. For float32 the peak used
is the TF32 tensor cores' (the fastest any fp32-input kernel can go, far above the fp32 FMA
peak), so an honest kernel that uses tensor cores is never below it; one timed below
COMPUTE_FRACTION of it returned a product it did not compute in the timed call.

GPU only: the bandwidth and the peaks come from tables of known parts by name (said so when the
GPU is not in them); on the CPU the probe says it does not apply (a host timer has no such floor).
"""

from __future__ import annotations

from . import judge_probe, worker_probe

FLOOR_SEED = 7919 + 80
PHYSICAL_FRACTION = 0.5  # a median below half the DRAM floor is impossible (L2 effects stay well inside)
MIN_FLOOR_US = 1.0  # below this the floor is lost in launch latency: not judged

# peak DRAM bandwidth in GB/s by (a substring of) the GPU's name; the longest match wins; where a
# name covers several parts the fastest is used (a lower floor: never a false finding)
PEAK_DRAM_GBS = {
    "H200": 4800.0, "GH200": 4900.0, "H100 PCIe": 2000.0, "H100 NVL": 3900.0, "H100": 3900.0,
    "H800": 3350.0, "H20": 4000.0, "B200": 8000.0, "GB200": 8000.0, "B100": 8000.0,
    "A100-PCIE-40GB": 1555.0, "A100-SXM4-40GB": 1555.0, "A100": 2039.0, "A800": 2039.0, "A30": 933.0,
    "A10G": 600.0, "A10": 600.0, "L40S": 864.0, "L40": 864.0, "L4": 300.0, "V100": 900.0, "T4": 320.0,
    "RTX 4090": 1008.0, "RTX 5090": 1792.0, "RTX 3090": 936.0, "RTX 6000 Ada": 960.0, "MI300X": 5300.0,
}


COMPUTE_FRACTION = 0.8  # peaks are theoretical maxima (dense, boost clock): 80 % of one is already generous
MIN_COMPUTE_US = 2.0  # a floor below this is lost in launch latency: not judged

# dense peak TFLOP/s (no 2:4 sparsity) by (a substring of) the GPU's name, per dtype of the work:
# "fp32" the FMA peak, "tf32" the tensor-core peak for fp32 inputs, "fp16" (= bf16), "fp8", "fp64".
# Vendor datasheets: NVIDIA H200 (nvidia.com/en-us/data-center/h200), H100 (H100 datasheet,
# SXM / PCIe / NVL columns), A100 (A100 datasheet, SXM and PCIe), L40S, L40, L4, B200 (HGX B200,
# per GPU), V100, T4; AMD Instinct MI300X (amd.com MI300X data sheet, matrix peaks). Sparse
# figures on the sheets are halved here.
PEAK_TFLOPS = {
    "H200": {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.5, "fp8": 1979.0},
    "GH200": {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.5, "fp8": 1979.0},
    "H100 PCIe": {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.5, "fp8": 1513.0},
    "H100 NVL": {"fp64": 60.0, "fp32": 60.0, "tf32": 417.5, "fp16": 835.5, "fp8": 1670.5},
    "H100": {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.5, "fp8": 1979.0},
    "H800": {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.5, "fp8": 1979.0},
    "B200": {"fp64": 40.0, "fp32": 80.0, "tf32": 1100.0, "fp16": 2250.0, "fp8": 4500.0},
    "A100": {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "fp8": 312.0},
    "A800": {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "fp8": 312.0},
    "L40S": {"fp64": 1.4, "fp32": 91.6, "tf32": 183.0, "fp16": 362.1, "fp8": 733.0},
    "L40": {"fp64": 1.4, "fp32": 90.5, "tf32": 90.5, "fp16": 181.0, "fp8": 362.0},
    "L4": {"fp64": 0.5, "fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "fp8": 242.5},
    "V100": {"fp64": 7.8, "fp32": 15.7, "tf32": 15.7, "fp16": 125.0, "fp8": 125.0},
    "T4": {"fp64": 0.25, "fp32": 8.1, "tf32": 8.1, "fp16": 65.0, "fp8": 65.0},
    "MI300X": {"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "fp8": 2614.9},
}
# the fastest way each dtype of the reference's work can be done (a lower floor: never a false finding)
_FASTEST = {"fp32": "tf32", "fp64": "fp64", "fp16": "fp16", "bf16": "fp16", "fp8": "fp8"}


def dtype_family(dtype):
    d = str(dtype or "").replace("torch.", "").lower()
    if "float8" in d:
        return "fp8"
    if d in ("float16", "half"):
        return "fp16"
    if d == "bfloat16":
        return "bf16"
    if d in ("float64", "double"):
        return "fp64"
    return "fp32"


def peak_tflops(gpu_name, dtype):
    """(TFLOP/s the work can at best be done at, the fp32-style peak to quote, the table key) for
    a GPU name and the reference's dtype, or (None, None, None) when the part is not known."""
    name = str(gpu_name or "")
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key.lower() in name.lower():
            fam = dtype_family(dtype)
            row = PEAK_TFLOPS[key]
            quoted = row["fp16" if fam == "bf16" else fam]
            return row[_FASTEST[fam]], quoted, key
    return None, None, None


def compute_floor(flops, dtype, gpu_name, median_us):
    """(impossible, detail) for a kernel timed at ``median_us`` doing the reference's ``flops`` on
    this GPU; (None, reason) when it cannot be judged."""
    if not isinstance(flops, (int, float)) or isinstance(flops, bool) or flops <= 0:
        return None, "the reference does no counted floating-point work (no matmul, convolution or attention)"
    fastest, quoted, key = peak_tflops(gpu_name, dtype)
    if fastest is None:
        return None, f"the peak FLOP/s of this GPU ({str(gpu_name)[:60]}) is not known to ktui: no compute floor"
    fam = dtype_family(dtype)
    floor = flops / (fastest * 1e12) * 1e6  # μs
    needed = flops / (median_us * 1e-6) if median_us and median_us > 0 else float("inf")
    fast_txt = f", {_FASTEST[fam].upper()} tensor cores {fastest:,.0f}" if _FASTEST[fam] != fam and fastest != quoted \
        else ""
    detail = (f"{_rate(needed)} needed ({flops / 1e9:,.1f} GFLOP in {median_us:.3g} μs), {fam} peak "
              f"{quoted:,.0f} TFLOP/s{fast_txt} ({key}); at best {floor:.3g} μs")
    if floor < MIN_COMPUTE_US:
        return None, detail + ": too short to judge"
    return median_us < COMPUTE_FRACTION * floor, detail


def _rate(flops_per_s):
    if flops_per_s >= 1e15:
        return f"{flops_per_s / 1e15:.1f} PFLOP/s"
    return f"{flops_per_s / 1e12:,.0f} TFLOP/s"


MIN_DENSITY_NUMEL = 4096  # operands smaller than this count as dense (their zeros save nothing measurable)


def _density(t):
    """The fraction of nonzero elements of a floating-point operand (1.0 for small or other ones)."""
    import torch

    if not isinstance(t, torch.Tensor) or t.numel() < MIN_DENSITY_NUMEL or not (t.is_floating_point()
                                                                                 or t.is_complex()):
        return 1.0
    try:
        return float(torch.count_nonzero(t)) / t.numel()
    except Exception:  # noqa: BLE001 - a tensor subclass or a device that cannot count: dense
        return 1.0


def _essential_counter():
    """A FlopCounterMode that also sums each counted op's FLOPs times the density of its sparsest
    tensor operand: the work the op's result needs (``diag(a) @ b`` is an N x N x M product by the
    count, N x M multiplications of real work; a kernel that scales the rows is not faster than the
    GPU can compute). (counter, the essential-FLOPs box) or (counter, None) where this torch's
    counter has no per-op hook (then the dense count alone, and the floor is not judged)."""
    from torch.utils.flop_counter import FlopCounterMode

    box = [0.0]

    class _Essential(FlopCounterMode):
        def _count_flops(self, func_packet, out, args, kwargs):
            before = self.get_total_flops()
            got = super()._count_flops(func_packet, out, args, kwargs)
            added = self.get_total_flops() - before
            if added > 0:
                dens = [_density(a) for a in list(args) + list((kwargs or {}).values())]
                box[0] += added * min(dens + [1.0])
            return got

    if not callable(getattr(FlopCounterMode, "_count_flops", None)):
        return FlopCounterMode(display=False), None
    return _Essential(display=False), box


@worker_probe("work", role="reference")
def reference_work(wctx, args, fds, out_fds):
    """The floating-point operations of one reference forward on slot ``args['slot']``
    (FlopCounterMode), the essential part of them (each op's count times the density of its
    sparsest operand, times the share of the forward's output elements that are not zero: a
    reference that multiplies by a diagonal or triangular matrix, or masks the product, counts
    work a faster algorithm need not do), and the dtype of its floating-point inputs (or
    parameters). ``flops`` is the essential count, the one the floor is judged by."""
    import torch

    from ..compare import flatten
    from ..errors import guarded

    inputs = wctx.slots[str(args["slot"])]
    try:
        counter, box = _essential_counter()
    except ImportError:
        return {"findings": [], "data": {"flops": 0, "dtype": "", "error": "no FlopCounterMode in this torch"}}
    with torch.no_grad(), counter:
        out = guarded("checks", wctx.model, *inputs, what="reference")
    if wctx.device is not None and wctx.device.type == "cuda":
        torch.cuda.synchronize(wctx.device)
    floats = [t for t in flatten(inputs) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not floats and hasattr(wctx.model, "parameters"):
        floats = [p for p in wctx.model.parameters() if p.is_floating_point()][:1]
    dtype = str(max(floats, key=lambda t: t.numel()).dtype) if floats else ""
    dense = int(counter.get_total_flops())
    if box is None:
        return {"findings": [], "data": {"flops": 0, "dense_flops": dense, "dtype": dtype,
                                         "error": "this torch's FlopCounterMode counts no op alone: the work's "
                                                  "density is unknown"}}
    outs = [t for t in flatten(out) if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]
    total = sum(t.numel() for t in outs)
    out_share = (sum(_density(t) * t.numel() for t in outs) / total) if total else 1.0
    essential = int(min(float(dense), box[0] * out_share))
    return {"findings": [], "data": {"flops": essential, "dense_flops": dense, "dtype": dtype}}


def peak_dram_gbs(gpu_name):
    """(GB/s, the table key) for a GPU name, or (None, None) when the part is not known."""
    name = str(gpu_name or "")
    for key in sorted(PEAK_DRAM_GBS, key=len, reverse=True):
        if key.lower() in name.lower():
            return PEAK_DRAM_GBS[key], key
    return None, None


def tensor_bytes(obj):
    import torch

    from ..compare import flatten

    return sum(t.numel() * t.element_size() for t in flatten(obj) if isinstance(t, torch.Tensor))


def floor_us(nbytes, gbs):
    return nbytes / (gbs * 1e9) * 1e6


@judge_probe("physical_floor", speed_only=True)
def physical_floor(ctx):
    t = ctx.result.get("timing") or {}
    # the kernel's own timer's median (when ktui's clock disagreed, the reported time is ktui's:
    # the claim judged here is still the one the timer made)
    k = (t.get("kernel_own") or t.get("kernel") or {}).get("median_us")
    if t.get("method_used") in (None, "host") or not str(ctx.result.get("device") or "").startswith("cuda") or not k:
        ctx.add_check("physical_floor", None, "needs CUDA timing (the floor is a GPU's DRAM bandwidth)")
        return
    gpu = (ctx.result.get("environment") or {}).get("gpu")
    bw, key = peak_dram_gbs(gpu)
    if bw is None:
        ctx.add_check("physical_floor", None, f"the peak DRAM bandwidth of this GPU ({str(gpu)[:60]}) is not known "
                      "to ktui: no physical floor")
        return
    ctx.trial(1, 1, "physical_floor")
    inputs, outputs = ctx.reference_io(int(ctx.input_seed) + FLOOR_SEED, "p-floor")
    nbytes = tensor_bytes(inputs.decoded()) + tensor_bytes(outputs.decoded())
    fl = floor_us(nbytes, bw)
    t["physical_floor_us"] = round(fl, 3)
    timer = (t.get("floor") or {}).get("busy_queue_us")
    extra = f"; empty-op timer floor {float(timer):.2f} μs" if isinstance(timer, (int, float)) else ""
    detail = (f"median {k:.2f} μs; moving the {nbytes / 2**20:.2f} MiB of inputs and outputs takes at least "
              f"{fl:.2f} μs at {bw:,.0f} GB/s ({key} peak DRAM bandwidth){extra}")
    if fl >= MIN_FLOOR_US and k < PHYSICAL_FRACTION * fl:
        ctx.add_check("physical_floor", False, f"faster than the memory allows: {detail}: impossible, the timed "
                      "call does not do the work")
        ctx.result["checks"][-1]["evidence"] = f"median {k:.3g} μs, DRAM floor {fl:.3g} μs"
    else:
        ctx.add_check("physical_floor", True, detail)
    # the compute floor: the reference's FLOPs at the GPU's peak for its dtype (counted once per problem)
    data, _fds = ctx.reference.call("probe", {"name": "work", "args": {"slot": "p-floor"}})
    work = data.get("data") if isinstance(data, dict) else None
    work = work if isinstance(work, dict) else {}
    flops, dtype, dense = work.get("flops"), work.get("dtype"), work.get("dense_flops")
    flops = flops if isinstance(flops, int) and not isinstance(flops, bool) and 0 <= flops < 10**21 else None
    t["reference_flops"] = flops
    impossible, why = compute_floor(flops, dtype if isinstance(dtype, str) else "", gpu, k)
    if isinstance(dense, int) and not isinstance(dense, bool) and flops is not None and dense > 1.05 * flops:
        why += (f" (the reference's {dense / 1e9:,.1f} GFLOP counted, {flops / 1e9:,.3g} of them on nonzero "
                "operands and outputs: the floor counts only those)")
    if impossible is None:
        ctx.add_check("compute_floor", None, why)
    elif impossible:
        ctx.add_check("compute_floor", False, f"faster than the GPU can compute: {why}: impossible, the timed call "
                      "does not do the work")
        ctx.result["checks"][-1]["evidence"] = why
    else:
        ctx.add_check("compute_floor", True, why)
