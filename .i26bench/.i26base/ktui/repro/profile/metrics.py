"""What `ktui repro --profile` asks Nsight Compute for, and how the run page's names map to it.

:data:`PAGE_METRICS` is THE mapping table: one row per metric a run page shows under "SOL",
"roofline / occupancy" and "warp stalls" (the trace's ``result.sol``, ``result.roofline`` and
``result.warp_stalls_pct``), with the ncu metric(s) it is computed from and how the
reproduced value is compared. Everything else in this package reads the table; nothing else
names a page field.

:data:`NCU_METRICS` is the explicit ``--metrics`` list the profiler collects (only these: no
sections, so the replay pass count stays small). Metrics a given ncu / GPU does not know are
dropped by the profiler and then shown as "n/a" (never invented).

No torch, no Textual, no Rich.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- what we collect ----------------------------------------------------------------------------

DURATION = "gpu__time_duration.sum"
SM_PCT = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEM_PCT = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_PCT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"  # ncu 2023+; older: dram__throughput
DRAM_PCT_OLD = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM_BYTES = "dram__bytes.sum"  # read back when present; ktui asks for read + write
DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DRAM_BPS = "dram__bytes.sum.per_second"
DRAM_PEAK_PER_CYCLE = "dram__bytes.sum.peak_sustained"
DRAM_HZ = "dram__cycles_elapsed.avg.per_second"
SM_HZ = "sm__cycles_elapsed.avg.per_second"
SMSP_CYCLES = "smsp__cycles_elapsed.avg"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
REGS = "launch__registers_per_thread"
SMEM = "launch__shared_mem_per_block"  # static + dynamic + the driver's reserved 1 KB (sm_80+)
SMEM_STATIC = "launch__shared_mem_per_block_static"
SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
BLOCK = "launch__block_size"
GRID = "launch__grid_size"
SM_COUNT = "device__attribute_multiprocessor_count"
L1_HIT = "l1tex__t_sector_hit_rate.pct"
L2_HIT = "lts__t_sector_hit_rate.pct"
LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
TENSOR_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
#: tensor-core operations (1 op = 1 FLOP: a 4096^3 bf16 matmul counts 2 x 4096^3) per source type
TENSOR_OPS = tuple(f"sm__ops_path_tensor_src_{t}.sum" for t in
                   ("fp16", "bf16_dst_fp32", "tf32_dst_fp32", "fp64", "fp8_sparsity_off", "fp8_sparsity_on"))
#: the dense FP16/BF16 tensor peak (ops/cycle over all SMs), Hopper's warpgroup MMA first
TENSOR_PEAKS = ("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
                "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained",
                "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained",
                "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum.peak_sustained")


def sass_op(prec: str, op: str) -> str:
    """Predicated-on thread instructions of one floating-point op (prec f/h/d, op add/mul/fma)."""
    return f"sm__sass_thread_inst_executed_op_{prec}{op}_pred_on.sum"


def sass_op_alternatives(prec: str, op: str) -> tuple[str, str, str]:
    """The same count as sm__ / smsp__ sums, or as a rate per elapsed cycle (what ncu's
    ``--set full`` collects: multiply by smsp__cycles_elapsed.avg)."""
    base = f"sass_thread_inst_executed_op_{prec}{op}_pred_on.sum"
    return f"sm__{base}", f"smsp__{base}", f"smsp__{base}.per_cycle_elapsed"


def sass_peak(prec: str) -> str:
    """FMA thread instructions per cycle the GPU can sustain (its compute roof, in FMAs)."""
    return f"sm__sass_thread_inst_executed_op_{prec}fma_pred_on.sum.peak_sustained"


PRECISIONS = {"fp32": "f", "fp16": "h", "fp64": "d"}

#: pipe utilisation, for "dominant pipe" (the busiest of these)
PIPES = {
    "fma": "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active",
    "alu": "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active",
    "lsu": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "fp64": "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active",
    "xu": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "tensor": TENSOR_PCT,
}

#: warp-stall reasons, as ncu 2025.3 names them on sm_90 (the two families spell two of them
#: differently; gmma / warpgroup_arrive exist on Hopper only)
PCSAMP_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instructions", "short_scoreboard", "sleeping",
    "tex_throttle", "wait",
)
PER_ISSUE_REASONS = tuple("no_instruction" if r == "no_instructions" else r for r in PCSAMP_REASONS)
HOPPER_PCSAMP = ("warpgroup_arrive",)
HOPPER_PER_ISSUE = ("gmma",)
#: not stalls: the warp issued, or was ready and another one was picked
NOT_STALLS = ("selected", "not_selected")
#: the families that carry stall reasons, best first: PC-sampling counts (a share of samples
#: is what the page claims to show), then the counter ratios ncu's WarpStateStats prints
STALL_PREFIXES = (
    ("smsp__pcsamp_warps_issue_stalled_", ""),
    ("smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"),
    ("smsp__warps_issue_stalled_", ".avg"),
)
PCSAMP = "smsp__pcsamp_warps_issue_stalled_{}"
PER_ISSUE = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"

#: what ktui asks ncu for on every GPU (names that exist since Volta)...
CORE_METRICS: list[str] = [
    DURATION, SM_PCT, MEM_PCT, DRAM_PCT, DRAM_READ, DRAM_WRITE, DRAM_BPS, DRAM_PEAK_PER_CYCLE, DRAM_HZ, SM_HZ,
    SMSP_CYCLES, OCCUPANCY, THEORETICAL_OCCUPANCY, REGS, SMEM, SMEM_STATIC, SMEM_DYNAMIC, BLOCK, GRID, SM_COUNT,
    L1_HIT, L2_HIT, LD_SECTORS, LD_REQUESTS, ST_SECTORS, ST_REQUESTS,
    *[sass_op_alternatives(p, op)[2] for p in ("f", "h", "d") for op in ("add", "mul", "fma")],
    *[sass_peak(p) for p in ("f", "h", "d")],
    *[m for m in PIPES.values()],
    *[PCSAMP.format(r) for r in PCSAMP_REASONS + NOT_STALLS],
    *[PER_ISSUE.format(r) for r in PER_ISSUE_REASONS],
    "smsp__pcsamp_sample_count",
]
#: ...and these on top where they exist (sm_90: tensor-core op counters, warpgroup stalls); when
#: ncu refuses the full list, the profile is retried with CORE_METRICS
EXTRA_METRICS: list[str] = [
    *TENSOR_OPS, *TENSOR_PEAKS,
    *[PCSAMP.format(r) for r in HOPPER_PCSAMP], *[PER_ISSUE.format(r) for r in HOPPER_PER_ISSUE],
]
NCU_METRICS: list[str] = CORE_METRICS + EXTRA_METRICS

# ---- the page's names ------------------------------------------------------------------------


@dataclass(frozen=True)
class PageMetric:
    """One row of a run page's hardware-counter sections, and how ktui re-measures it."""

    group: str  # sol | roofline | warp_stalls (the trace model's metric group)
    field: str  # the page's / trace's field name
    label: str  # as the page prints it
    value: str  # key of the reproduced value in a forward summary (see summary.py)
    ncu: str  # the ncu metric(s) it comes from, in words
    unit: str = ""
    compare: str = "rel"  # rel | pct | exact | text | peak
    tol: float = 0.10  # relative tolerance (rel, peak) or percentage points (pct)


def _pm(group: str, field: str, label: str, value: str, ncu: str, unit: str = "", compare: str = "rel",
        tol: float | None = None) -> PageMetric:
    if tol is None:
        tol = 5.0 if compare == "pct" else 0.10
    return PageMetric(group, field, label, value, ncu, unit, compare, tol)


# The seed page (../shared/seed/000_581c3f2f60c6fb9a.txt) and PopcornBench's result.sol /
# result.roofline / result.warp_stalls_pct use these names. Per-forward values: durations,
# bytes, FLOPs, sectors and requests are summed over the kernels of one forward; percentages
# and hit rates are duration-weighted means; launch configuration (registers, shared memory,
# block and grid size) is that of the forward's longest kernel.
PAGE_METRICS: tuple[PageMetric, ...] = (
    _pm("sol", "sol_score", "SOL score (0–1)", "sol_score",
        f"max({SM_PCT}, {MEM_PCT}) / 100", compare="rel", tol=0.15),
    _pm("sol", "dram_util_pct", "dram util %", "dram_pct", f"{DRAM_PCT} (older ncu: {DRAM_PCT_OLD})", "%", "pct"),
    _pm("sol", "compute_util_pct", "compute util %", "sm_pct", SM_PCT, "%", "pct"),
    _pm("sol", "bottleneck", "bottleneck", "bound", "memory / compute / latency, from the two above and "
        "occupancy (see roofline.classify)", compare="text"),
    _pm("sol", "dominant_pipe", "dominant pipe", "dominant_pipe",
        "the busiest of sm__inst_executed_pipe_*.avg.pct_of_peak_sustained_active", compare="text"),
    _pm("sol", "arithmetic_intensity", "arithmetic intensity", "ai_fp32",
        f"FP32 FLOP / DRAM bytes ({DRAM_READ} + {DRAM_WRITE})", "FLOP/B"),
    _pm("sol", "ridge_point", "ridge point", "ridge_fp32",
        f"peak FP32 FLOP/s / peak DRAM B/s (2 x {sass_peak('f')} x {SM_HZ} / "
        f"{DRAM_PEAK_PER_CYCLE} x {DRAM_HZ})", "FLOP/B", "peak"),
    _pm("roofline", "dram_bandwidth_gbs", "dram bandwidth", "dram_gbs",
        f"({DRAM_READ} + {DRAM_WRITE}) / {DURATION}", "GB/s"),
    _pm("roofline", "dram_util_pct", "dram util %", "dram_pct", f"{DRAM_PCT} (older ncu: {DRAM_PCT_OLD})", "%",
        "pct"),
    _pm("roofline", "fp32_tflops", "fp32 tflops", "fp32_tflops",
        f"FP32 FLOP / {DURATION}; FLOP = fadd + fmul + 2 x ffma thread instructions, each "
        f"{sass_op_alternatives('f', 'fma')[2]} x {SMSP_CYCLES}", "TFLOP/s"),
    _pm("roofline", "fp32_util_pct", "fp32 util %", "fp32_pct", "fp32 FLOP/s / peak FP32 FLOP/s", "%", "pct"),
    _pm("roofline", "fp16_tflops", "fp16 tflops", "fp16_tflops",
        f"2 x (hadd + hmul + 2 x hfma) / {DURATION} (half2 SASS instructions, 2 lanes each; tensor cores apart)",
        "TFLOP/s"),
    _pm("roofline", "occupancy_pct", "occupancy %", "occupancy_pct", OCCUPANCY + " (achieved)", "%", "pct"),
    _pm("roofline", "bottleneck", "bottleneck", "bound", "as sol.bottleneck", compare="text"),
    _pm("roofline", "dominant_pipe_pct", "dominant pipe %", "dominant_pipe_pct",
        "utilisation of the busiest pipe", "%", "pct"),
    _pm("roofline", "arithmetic_intensity", "arithmetic intensity", "ai_fp32", "as sol.arithmetic_intensity",
        "FLOP/B"),
    _pm("roofline", "ridge_point", "ridge point", "ridge_fp32", "as sol.ridge_point", "FLOP/B", "peak"),
    _pm("roofline", "l1_hit_pct", "L1 hit %", "l1_hit_pct", L1_HIT, "%", "pct"),
    _pm("roofline", "l2_hit_pct", "L2 hit %", "l2_hit_pct", L2_HIT, "%", "pct"),
    _pm("roofline", "ld_sectors_per_req", "ld sectors / req", "ld_sectors_per_req",
        f"{LD_SECTORS} / {LD_REQUESTS}", compare="rel"),
    _pm("roofline", "st_sectors_per_req", "st sectors / req", "st_sectors_per_req",
        f"{ST_SECTORS} / {ST_REQUESTS}", compare="rel"),
    _pm("roofline", "regs_per_thread", "regs / thread", "regs_per_thread", REGS, compare="exact"),
    _pm("roofline", "smem_per_block_bytes", "smem / block", "smem_per_block_bytes",
        f"{SMEM} (static + dynamic + driver-reserved; else {SMEM_STATIC} + {SMEM_DYNAMIC})", "B", "exact"),
    _pm("roofline", "block_size", "block size", "block_size", BLOCK, compare="exact"),
    _pm("roofline", "grid_size", "grid size", "grid_size", GRID, compare="exact"),
    _pm("roofline", "peak_bw_gbs", "peak bw", "peak_dram_gbs", f"{DRAM_PEAK_PER_CYCLE} x {DRAM_HZ}", "GB/s", "peak"),
    _pm("roofline", "peak_fp32_tflops", "peak fp32 tflops", "peak_fp32_tflops",
        f"2 x {sass_peak('f')} x {SM_HZ}", "TFLOP/s", "peak"),
    _pm("roofline", "peak_fp16_tflops", "peak fp16 tflops", "peak_fp16_tflops",
        f"4 x {sass_peak('h')} x {SM_HZ} (HFMA2: 2 lanes x 2 FLOP; non-tensor FP16)", "TFLOP/s", "peak"),
)

#: warp stalls: any reason the page names is compared with the measured share of all stall
#: samples (ncu's smsp__pcsamp_warps_issue_stalled_<reason>, "selected" excluded)
STALL_NCU = "smsp__pcsamp_warps_issue_stalled_<reason> / sum over all stall reasons"
STALL_TOL = 10.0  # percentage points


def page_metric(group: str, field: str) -> PageMetric | None:
    for pm in PAGE_METRICS:
        if pm.group == group and pm.field == field:
            return pm
    return None


#: what the profile adds to the "not re-measured" groups of a plain repro
PROFILED_GROUPS = ("sol", "roofline", "warp_stalls")
