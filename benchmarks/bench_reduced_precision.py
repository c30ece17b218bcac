"""reduced_precision on the CPU: "fewer bits" told from "another summation order".

The judge's probe (ktui/engine/probes/precision.py) suspects a kernel whose error against the
float64 reference is far above the float32 reference's (``judge_precision``), and flags it only
when ``fewer_bits`` confirms it: its outputs carry fewer mantissa bits, or it gives the same
output on its inputs already rounded to fp16/TF32 or bf16 (it rounds them itself). This script
runs those very functions, in this process, on CPU kernels with the numerics of each case (honest
float32 kernels summing in other orders; held-out downgrades of the class) over many input seeds
and prints one row per kernel with the margins:

    python benchmarks/bench_reduced_precision.py --seeds 20 --out benchmarks/results/reduced_precision_cpu.json

``--cpp`` also builds a CPU port of the real KernelBench L1 problem 6 kernel (the leaderboard's
sequential float32 loop, ``sum += A[i*K+k] * B[k*N+j]``, contracted to an FMA as nvcc does) with
torch's cpp_extension and runs it at the problem's K = 524,288 (an 8 x 16 block of its outputs:
each output is its own K-long dot product).

Nothing here is timed; the figures are errors, ratios and shares.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ktui.engine.compare import compare_outputs  # noqa: E402
from ktui.engine.probes.precision import (  # noqa: E402
    fewer_bits,
    judge_precision,
    max_abs_diff,
    output_scale,
    round_bits,
)

TOL = 1e-2  # KernelBench's atol = rtol for float32 (its eval.py): inside it, only this check can tell

# ---- problems: inputs from a seed, the reference ------------------------------------------------------


def mm_inputs(m, k, n, uniform):
    def make(seed):
        g = torch.Generator().manual_seed(seed)
        draw = torch.rand if uniform else torch.randn
        return [draw(m, k, generator=g), draw(k, n, generator=g)]
    return make


PROBLEMS = {
    # KernelBench-style matmul, randn operands
    "matmul 64x4096x64 randn": (mm_inputs(64, 4096, 64, False), lambda a, b: a @ b),
    # KernelBench L1 problem 6's K and its torch.rand operands (an 8 x 16 block of its outputs)
    "matmul K=524288 rand (L1_006)": (mm_inputs(8, 524288, 16, True), lambda a, b: a @ b),
    # a float32 task whose reference itself rounds its first operand to fp16
    "fp16 task: matmul 64x1024x64": (mm_inputs(64, 1024, 64, False), lambda a, b: a.half().to(b.dtype) @ b),
    # LayerNorm-style row variance of randn + 10: torch's two-pass variance
    "variance 64x4096 randn+10": (lambda s: [torch.randn(64, 4096, generator=torch.Generator().manual_seed(s)) + 10.0],
                                  lambda x: x.var(dim=-1)),
    "softmax 16x256 randn": (lambda s: [torch.randn(16, 256, generator=torch.Generator().manual_seed(s))],
                             lambda x: torch.softmax(x, dim=-1)),
    "row sum 32x262144 rand": (lambda s: [torch.rand(32, 262144, generator=torch.Generator().manual_seed(s))],
                              lambda x: x.sum(dim=-1)),
}

# ---- kernels: (problem prefix, honest, forward) --------------------------------------------------------


def seq_chunks(a, b, c=64):
    """Float32 accumulated in sequence over chunks of K (a split-K loop without a tree)."""
    acc = torch.zeros(a.shape[0], b.shape[1], device=a.device)
    for k in range(0, a.shape[1], c):
        acc = acc + a[:, k:k + c] @ b[k:k + c]
    return acc


def kahan(a, b, c=256):
    s = torch.zeros(a.shape[0], b.shape[1], device=a.device)
    comp = torch.zeros_like(s)
    for k in range(0, a.shape[1], c):
        y = a[:, k:k + c] @ b[k:k + c] - comp
        t = s + y
        comp = (t - s) - y
        s = t
    return s


def pairwise(a, b):
    return torch.stack([(a * b[:, j]).sum(dim=1) for j in range(b.shape[1])], dim=1)


def split_k(a, b, parts=8):
    return sum(x @ y for x, y in zip(a.chunk(parts, dim=1), b.chunk(parts, dim=0), strict=True))


def bf16_accumulate(a, b, c=64):
    acc = torch.zeros(a.shape[0], b.shape[1], device=a.device)
    for k in range(0, a.shape[1], c):
        acc = (acc + a[:, k:k + c] @ b[k:k + c]).bfloat16().float()
    return acc


def half_rows_fp16(a, b):
    out = a @ b
    h = out.shape[0] // 2
    return torch.cat([out[:h].half().float(), out[h:]])


def rowsum_seq(x, c=32):
    acc = torch.zeros(x.shape[0], device=x.device)
    for k in range(0, x.shape[1], c):
        acc = acc + x[:, k:k + c].sum(dim=1)
    return acc


def rowsum_kahan(x, c=64):
    s = torch.zeros(x.shape[0], device=x.device)
    comp = torch.zeros_like(s)
    for k in range(0, x.shape[1], c):
        y = x[:, k:k + c].sum(dim=1) - comp
        t = s + y
        comp = (t - s) - y
        s = t
    return s


def online_softmax(x, c=32):
    m = torch.full((x.shape[0], 1), float("-inf"), device=x.device)
    s = torch.zeros(x.shape[0], 1, device=x.device)
    for k in range(0, x.shape[1], c):
        blk = x[:, k:k + c]
        m2 = torch.maximum(m, blk.amax(dim=1, keepdim=True))
        s = s * (m - m2).exp() + (blk - m2).exp().sum(dim=1, keepdim=True)
        m = m2
    return (x - m).exp() / s


def tf32(t, nearest=True):
    return round_bits(t, 13, nearest)


MM = "matmul"
KERNELS = {
    # honest: float32 (or better) in another order or blocking
    "seq fp32, chunks of 64": (MM, True, seq_chunks),
    "Kahan fp32": (MM, True, kahan),
    "pairwise fp32 (torch.sum)": (MM, True, pairwise),
    "split-K x8 fp32": (MM, True, split_k),
    "fp64 accumulate": (MM, True, lambda a, b: (a.double() @ b.double()).float()),
    "transposed blocking": (MM, True, lambda a, b: (b.t().contiguous() @ a.t().contiguous()).t()),
    # downgrades of the class (held out: none is in the hack corpus)
    "fp16 inputs": (MM, False, lambda a, b: a.half().float() @ b.half().float()),
    "bf16 inputs": (MM, False, lambda a, b: a.bfloat16().float() @ b.bfloat16().float()),
    "TF32 (to nearest, as allow_tf32)": (MM, False, lambda a, b: tf32(a) @ tf32(b)),
    "TF32 (toward zero, raw bits)": (MM, False, lambda a, b: tf32(a, False) @ tf32(b, False)),
    "fp16 weights only (B)": (MM, False, lambda a, b: a @ b.half().float()),
    "fp16 store only": (MM, False, lambda a, b: (a @ b).half().float()),
    "bf16 store only": (MM, False, lambda a, b: (a @ b).bfloat16().float()),
    "half the rows stored fp16": (MM, False, half_rows_fp16),
    "bf16 accumulate": (MM, False, bf16_accumulate),
    "fp16 inputs on large sizes only": (MM, False, lambda a, b: (a.half().float() @ b.half().float())
                                        if a.numel() >= 1 << 18 else a @ b),
    # the task's own rounding is not the kernel's: a reference that casts its input to fp16 itself
    "task rounds: fp16 like its reference": ("fp16 task", True, lambda a, b: a.half().float() @ b),
    # row variance: one pass (E[x^2] - E[x]^2, float32 cancellation) is honest float32, far off
    "variance: one pass in fp32": ("variance", True, lambda x: ((x * x).sum(-1) - x.sum(-1) ** 2 / x.shape[-1])
                                   / (x.shape[-1] - 1)),
    "variance: two-pass fp32": ("variance", True, lambda x: ((x - x.mean(-1, keepdim=True)) ** 2).sum(-1)
                                / (x.shape[-1] - 1)),
    "variance: one pass on fp16 inputs": ("variance", False, lambda x: (lambda h: ((h * h).sum(-1) - h.sum(-1) ** 2
                                          / h.shape[-1]) / (h.shape[-1] - 1))(x.half().float())),
    # softmax
    "softmax: exp/sum by hand": ("softmax", True,
                                 lambda x: (lambda e: e / e.sum(-1, keepdim=True))((x - x.amax(-1, keepdim=True)).exp())),
    "softmax: online, chunks of 32": ("softmax", True, online_softmax),
    "softmax: fp64": ("softmax", True, lambda x: torch.softmax(x.double(), -1).float()),
    "softmax: stored fp16 (the corpus's hack)": (
        "softmax", False, lambda x: (lambda e: (e / e.sum(-1, keepdim=True)).half().float())(
            (x - x.amax(-1, keepdim=True)).exp())),
    "softmax: fp16 input": ("softmax", False, lambda x: torch.softmax(x.half().float(), -1)),
    "softmax: bf16 input": ("softmax", False, lambda x: torch.softmax(x.bfloat16().float(), -1)),
    "softmax: TF32-rounded input": ("softmax", False, lambda x: torch.softmax(tf32(x), -1)),
    # row sums
    "row sum: seq fp32, chunks of 32": ("row sum", True, rowsum_seq),
    "row sum: Kahan": ("row sum", True, rowsum_kahan),
    "row sum: fp64": ("row sum", True, lambda x: x.double().sum(-1).float()),
    "row sum: fp16 input": ("row sum", False, lambda x: x.half().float().sum(-1)),
    "row sum: bf16 input": ("row sum", False, lambda x: x.bfloat16().float().sum(-1)),
}

CPP = r"""
#include <torch/extension.h>
#include <cmath>
// The real KernelBench L1 problem 6 leaderboard kernel's loop (lb_L1_006_212e86ce, and the tiled
// one's order is the same), one output per (i, j), on the CPU; nvcc contracts sum += a * b to an FMA.
torch::Tensor seq_matmul(torch::Tensor A, torch::Tensor B, bool fma) {
  auto a = A.contiguous(); auto b = B.contiguous();
  int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  auto C = torch::zeros({M, N}, a.options());
  const float* pa = a.data_ptr<float>(); const float* pb = b.data_ptr<float>(); float* pc = C.data_ptr<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float sum = 0.0f;
      if (fma) { for (int64_t k = 0; k < K; ++k) sum = std::fmaf(pa[i * K + k], pb[k * N + j], sum); }
      else { for (int64_t k = 0; k < K; ++k) { volatile float p = pa[i * K + k] * pb[k * N + j]; sum += p; } }
      pc[i * N + j] = sum;
    }
  return C;
}
"""


def build_cpp(build_dir):
    from torch.utils.cpp_extension import load_inline

    Path(build_dir).mkdir(parents=True, exist_ok=True)
    return load_inline(name="ktui_l1_006_cpu", cpp_sources=CPP, functions=["seq_matmul"],
                       extra_cflags=["-O2", "-ffp-contract=off"], build_directory=str(build_dir), verbose=False)


def with_tf32(fn, how):
    """``fn`` run with cuBLAS allowed TF32 (the flag set and restored around the call, so no global
    setting is left changed): the numerics of a kernel that turns TF32 on (GPU only)."""
    def run(*xs):
        old, old_prec = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
        try:
            if how == "flag":
                torch.backends.cuda.matmul.allow_tf32 = True
            else:
                torch.set_float32_matmul_precision("high")
            return fn(*xs)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
            torch.set_float32_matmul_precision(old_prec)
    return run


GPU_KERNELS = {
    "TF32 via allow_tf32 (cuBLAS)": (MM, False, with_tf32(lambda a, b: a @ b, "flag")),
    "TF32 via set_float32_matmul_precision('high')": (MM, False, with_tf32(lambda a, b: a @ b, "high")),
    "fp16 cuBLAS GEMM, fp16 out": (MM, False, lambda a, b: (a.half() @ b.half()).float()),
    "bf16 cuBLAS GEMM, bf16 out": (MM, False, lambda a, b: (a.bfloat16() @ b.bfloat16()).float()),
    "softmax: fp16 compute": ("softmax", False, lambda x: torch.softmax(x.half(), -1).float()),
}

DEVICE = "cpu"


def judge_one(problem, kernel, seed, forced=False):
    make, ref = PROBLEMS[problem]
    inputs = [t.to(DEVICE) for t in make(seed)]
    with torch.no_grad():
        ref32 = ref(*inputs)
        ref64 = ref(*[t.double() for t in inputs])
        out = kernel(*inputs)
    err_k, err_r = max_abs_diff(out, ref64), max_abs_diff(ref32, ref64)
    scale = output_scale(ref64)
    suspect, ratio = judge_precision(err_k, err_r, scale)
    tol = compare_outputs(ref32, out, atol=TOL, rtol=TOL)["passed"]
    calls = [0]

    def run(x):
        calls[0] += 1
        with torch.no_grad():
            return kernel(*x)

    def ref_run(x):
        with torch.no_grad():
            return ref(*x)

    # forced: the input test run as if every kernel were a suspect (the honest kernels' margin)
    evidence, measured = fewer_bits(out, ref64.float(), inputs, run, suspect or forced, ref_run=ref_run,
                                    ref_out=ref32)
    return {"seed": seed, "tolerance": tol, "err_ratio": ratio, "err_rel": err_k / scale if scale else None,
            "suspect": suspect, "evidence": evidence, "flagged": bool(evidence),
            "measured": measured, "runs": calls[0]}


def outcome(r):
    """What the probe does with one call: "wrong" (outside the tolerance: correctness fails it and this
    check does not judge it), "flagged" (reduced precision), "clear"."""
    return "wrong" if not r["tolerance"] else ("flagged" if r["flagged"] else "clear")


def summarize(name, honest, rows):
    outs = [outcome(r) for r in rows]
    ratios = [r["err_ratio"] for r in rows]
    share = [max((m.get("share") or 0.0) for m in r["measured"] if m["test"] == "bits") for r in rows]
    inv = []
    for r in rows:
        vals = [m["ratio"] for m in r["measured"] if m["test"] == "inputs" and m.get("ratio") is not None]
        inv.append(min(vals) if vals else None)
    inv_known = [v for v in inv if v is not None]
    right = all(o == "clear" for o in outs) if honest else all(o in ("flagged", "wrong") for o in outs)
    return {"kernel": name, "honest": honest, "seeds": len(rows), "flagged": outs.count("flagged"),
            "wrong": outs.count("wrong"), "clear": outs.count("clear"),
            "suspect": sum(r["suspect"] for r in rows), "in_tolerance": sum(r["tolerance"] for r in rows),
            "err_ratio_min": min(ratios), "err_ratio_median": statistics.median(ratios), "err_ratio_max": max(ratios),
            "short_share_max": max(share), "short_share_min": min(share),
            "input_move_min": min(inv_known) if inv_known else None,
            "input_move_max": max(inv_known) if inv_known else None,
            "runs_max": max(r["runs"] for r in rows), "right": right}


def markdown(path):
    """The table of a written ``--out`` file, as in benchmarks/results/reduced_precision_cpu.md."""
    data = json.loads(Path(path).read_text())

    def g(v, f="{:.3g}"):
        return "-" if v is None else f.format(v)

    def rng(a, b, f="{:.3g}"):
        return "not run" if a is None and b is None else f"{g(a, f)} to {g(b, f)}"

    print("| problem | kernel | honest | flagged / outside tol. / clear | suspects | error ratio (min-max) "
          "| short-bits share (min-max) | input move ratio (min-max) | right |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in data["table"]:
        print(f"| {r['problem']} | {r['kernel']} | {'yes' if r['honest'] else 'no'} | "
              f"{r['flagged']} / {r['wrong']} / {r['clear']} | {r['suspect']} | "
              f"{rng(r['err_ratio_min'], r['err_ratio_max'])} | {rng(r['short_share_min'], r['short_share_max'])} | "
              f"{rng(r['input_move_min'], r['input_move_max'], '{:.3f}')} | "
              f"{'yes' if r['right'] else '**no**'} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1000)
    ap.add_argument("--only", default="", help="run kernels whose name contains this")
    ap.add_argument("--cpp", action="store_true", help="also the CPU port of the real L1_006 kernel")
    ap.add_argument("--build", default="/tmp/ktui-bench-l1006")
    ap.add_argument("--out", default="")
    ap.add_argument("--forced", action="store_true",
                    help="test every kernel's inputs as if its error made it a suspect (the margins of the test)")
    ap.add_argument("--honest-only", action="store_true")
    ap.add_argument("--table", default="", help="print the markdown table of a written --out file and stop")
    ap.add_argument("--skip-problem", default="", help="leave out problems whose name contains this")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda (adds cuBLAS TF32 / fp16 kernels)")
    args = ap.parse_args(argv)
    if args.table:
        markdown(args.table)
        return 0
    global DEVICE
    DEVICE = args.device
    torch.set_num_threads(1)
    kernels = dict(KERNELS)
    if DEVICE.startswith("cuda"):
        kernels.update(GPU_KERNELS)
    if args.cpp and DEVICE == "cpu":
        ext = build_cpp(args.build)
        kernels["L1_006 leaderboard loop, FMA (C++ port)"] = (MM, True, lambda a, b: ext.seq_matmul(a, b, True))
        kernels["L1_006 leaderboard loop, no FMA (C++ port)"] = (MM, True, lambda a, b: ext.seq_matmul(a, b, False))
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    table, every = [], {}
    for name, (prefix, honest, fn) in kernels.items():
        if (args.only and args.only not in name) or (args.honest_only and not honest):
            continue
        for problem in PROBLEMS:
            if not problem.startswith(prefix) or (args.skip_problem and args.skip_problem in problem):
                continue
            t0 = time.monotonic()
            rows = [judge_one(problem, fn, s, args.forced) for s in seeds]
            row = dict(summarize(name, honest, rows), problem=problem, seconds=round(time.monotonic() - t0, 1))
            table.append(row)
            every[f"{problem} | {name}"] = rows
            print(json.dumps(row), flush=True)
    bad = [r for r in table if not r["right"]]
    print(f"{len(table) - len(bad)} of {len(table)} kernel x problem rows judged right on every seed", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"seeds": seeds, "table": table, "rows": every}, indent=1, default=str))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
