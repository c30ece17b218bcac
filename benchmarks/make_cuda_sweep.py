"""Write a sweep of CUDA TEST TRACES for ``benchmarks/bench_verify.py`` (written by this script for
ktui's benchmark, not by an agent; each trace's first system note says so).

    python benchmarks/make_cuda_sweep.py OUTDIR [--honest N] [--triton N] [--no-corpus]

OUTDIR gets:

- ``honest/``: N (default 12) honest CUDA ``load_inline`` kernels of varied ops and shapes
  (elementwise unary and binary ops, 1-D to 2-D, 4M to 32M elements), each checked and submitted
  in its trace with a made-up timing (PopcornBench convention: milliseconds under ``runtime_us``);
  with ``--triton N``, honest Triton kernels of the first N ops too, each with the CUDA kernel's
  reference (the same problem: the reference's outputs and time are shared between them);
- links to the bundled seed run (``traces/popcorn_l1_p27_grok-4.3.jsonl``: four CUDA versions) and
  to every trace of the hack corpus (``tests/fixtures/hacks``) that has CUDA code, unless
  ``--no-corpus``.

Every kernel's code differs (the op, the shape and the extension name are in it), so each one is
a distinct build.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_ktui_repro_fixtures", REPO / "tests/fixtures/repro/make_fixtures.py")
W = importlib.util.module_from_spec(_spec)
assert _spec.loader is not None
_spec.loader.exec_module(W)

# name, CUDA expression of v (and w for binary ops), torch reference expression, shape
OPS = [
    ("relu", "fmaxf(v, 0.0f)", "torch.relu(x)", (4096, 4096)),
    ("scale_add", "2.0f * v + 1.0f", "2.0 * x + 1.0", (8192, 2048)),
    ("sigmoid", "1.0f / (1.0f + expf(-v))", "torch.sigmoid(x)", (2048, 8192)),
    ("tanh", "tanhf(v)", "torch.tanh(x)", (16384, 1024)),
    ("square", "v * v", "x * x", (1 << 24,)),
    ("leaky_relu", "v > 0.0f ? v : 0.01f * v", "torch.nn.functional.leaky_relu(x, 0.01)", (4096, 2048)),
    ("abs", "fabsf(v)", "torch.abs(x)", (1024, 16384)),
    ("clamp", "fminf(fmaxf(v, -0.5f), 0.5f)", "torch.clamp(x, -0.5, 0.5)", (8192, 4096)),
    ("softplus", "log1pf(expf(v))", "torch.log1p(torch.exp(x))", (2048, 2048)),
    ("gelu_tanh", "0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))",
     "torch.nn.functional.gelu(x, approximate='tanh')", (4096, 4096)),
    ("add", "v + w", "x + y", (4096, 4096)),
    ("mul", "v * w", "x * y", (2048, 8192)),
    ("sub_scaled", "v - 0.5f * w", "x - 0.5 * y", (8192, 1024)),
    ("max2", "fmaxf(v, w)", "torch.maximum(x, y)", (1 << 23,)),
    ("hypot", "sqrtf(v * v + w * w)", "torch.sqrt(x * x + y * y)", (4096, 1024)),
    ("exp_neg", "expf(-fabsf(v))", "torch.exp(-torch.abs(x))", (32768, 1024)),
]

BINARY = {"add", "mul", "sub_scaled", "max2", "hypot"}  # ops of two inputs (x -> v, y -> w)

# the same ops in Triton (tl has no tanh / log1p everywhere: written with exp and log)
TRITON = {
    "relu": "tl.maximum(v, 0.0)",
    "scale_add": "2.0 * v + 1.0",
    "sigmoid": "1.0 / (1.0 + tl.exp(-v))",
    "tanh": "2.0 / (1.0 + tl.exp(-2.0 * v)) - 1.0",
    "square": "v * v",
    "leaky_relu": "tl.where(v > 0.0, v, 0.01 * v)",
    "abs": "tl.abs(v)",
    "clamp": "tl.minimum(tl.maximum(v, -0.5), 0.5)",
    "softplus": "tl.log(1.0 + tl.exp(v))",
    "gelu_tanh": "0.5 * v * (2.0 / (1.0 + tl.exp(-2.0 * (0.7978845608 * (v + 0.044715 * v * v * v)))))",
    "add": "v + w",
    "mul": "v * w",
    "sub_scaled": "v - 0.5 * w",
    "max2": "tl.maximum(v, w)",
    "hypot": "tl.sqrt(v * v + w * w)",
    "exp_neg": "tl.exp(-tl.abs(v))",
}


def triton_kernel(name: str, shape: tuple[int, ...], binary: bool) -> str:
    """An honest Triton elementwise kernel of the op (a second kernel of the CUDA kernel's problem)."""
    args = "x_ptr, y_ptr, out_ptr, n" if binary else "x_ptr, out_ptr, n"
    load_w = "\n    w = tl.load(y_ptr + offs, mask=m)" if binary else ""
    fwd_args = "x, y" if binary else "x"
    launch = "xc, yc, out, n" if binary else "xc, out, n"
    prep = ("xc = x.contiguous()\n        yc = y.contiguous()" if binary else "xc = x.contiguous()")
    return f'''import torch
import torch.nn as nn
import triton
import triton.language as tl

# {name}: an elementwise Triton kernel (shape {shape})


@triton.jit
def {name}_kernel({args}, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m){load_w}
    tl.store(out_ptr + offs, {TRITON[name]}, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {fwd_args}):
        {prep}
        out = torch.empty_like(xc)
        n = xc.numel()
        {name}_kernel[(triton.cdiv(n, 1024),)]({launch}, BLOCK=1024)
        return out
'''


def reference(name: str, expr: str, shape: tuple[int, ...], binary: bool) -> str:
    dims = ", ".join(str(d) for d in shape)
    args = "x, y" if binary else "x"
    inputs = f"[torch.randn({dims}), torch.randn({dims})]" if binary else f"[torch.randn({dims})]"
    return f'''"""
TEST PROBLEM for ktui's verify benchmark: {name} on a float32 tensor of shape {shape}.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return {inputs}


def get_init_inputs():
    return []
'''


def kernel(name: str, expr: str, shape: tuple[int, ...], binary: bool) -> str:
    params = "const float* __restrict__ x, const float* __restrict__ y2, float* __restrict__ out, int64_t n" \
        if binary else "const float* __restrict__ x, float* __restrict__ out, int64_t n"
    load_w = " float w = y2[i];" if binary else ""
    sig = "torch::Tensor a, torch::Tensor b" if binary else "torch::Tensor a"
    checks = ('TORCH_CHECK(a.is_cuda() && b.is_cuda(), "CUDA tensors expected");\n'
              '    TORCH_CHECK(a.sizes() == b.sizes(), "same shapes expected");\n'
              '    auto ac = a.contiguous().to(torch::kFloat32);\n'
              '    auto bc = b.contiguous().to(torch::kFloat32);') if binary else (
        'TORCH_CHECK(a.is_cuda(), "a CUDA tensor expected");\n'
        '    auto ac = a.contiguous().to(torch::kFloat32);')
    launch_args = "ac.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), n" if binary else \
        "ac.data_ptr<float>(), out.data_ptr<float>(), n"
    fwd_args = "x, y" if binary else "x"
    elems = 1
    for d in shape:
        elems *= d
    return f'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# {name}: an elementwise CUDA kernel sized for {elems} elements (shape {shape})
cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void {name}_kernel({params}) {{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {{
        float v = x[i];{load_w}
        out[i] = {expr};
    }}
}}

torch::Tensor {name}_forward({sig}) {{
    {checks}
    auto out = torch::empty_like(ac);
    const int64_t n = ac.numel();
    const int threads = 256;
    const int64_t want = (n + threads - 1) / threads;
    const int blocks = (int)(want < 65536 ? want : 65536);
    {name}_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>({launch_args});
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}}
"""

cpp_source = "torch::Tensor {name}_forward({sig});"

ext = load_inline(
    name="verify_bench_{name}",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["{name}_forward"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {fwd_args}):
        return ext.{name}_forward({fwd_args})
'''


def honest_trace(out: Path, name: str, cuda_expr: str, torch_expr: str, shape: tuple[int, ...],
                 triton: bool = False) -> Path:
    binary = name in BINARY
    ref = reference(name, torch_expr, shape, binary)  # the same problem (reference) for both languages
    code = triton_kernel(name, shape, binary) if triton else kernel(name, cuda_expr, shape, binary)
    tag = f"{name}_triton" if triton else name
    w = W.Writer(f"honest_{tag}", "")
    for e in w.events:
        p = e["payload"]
        note = p.get("note") if p.get("kind") == "system" else None
        if isinstance(note, str) and note.startswith("TEST TRACE"):
            p["note"] = (f"TEST TRACE for ktui's verify benchmark (honest_{tag}): written by "
                         "benchmarks/make_cuda_sweep.py, not produced by an agent. An honest elementwise "
                         f"{'Triton' if triton else 'CUDA'} kernel ({name}, shape {shape}).")
        elif isinstance(note, str) and '"agent_spawned"' in note:
            d = json.loads(note)
            d["model"] = "bench-honest"
            p["note"] = json.dumps(d)
        r = p.get("result")
        if p.get("name") == "fetch_problem" and isinstance(r, dict):
            r.update(ref_arch_src=ref, ref_arch_chars=len(ref), name=f"9{len(name):02d}_{name}_test.py",
                     backend="triton" if triton else "cuda", precision="fp32")
    w.compile_ok(code)
    w.correctness_ok(code)
    elems = 1
    for d in shape:
        elems *= d
    ref_ms = round(elems * 4 * (3 if binary else 2) / 4.0e12 * 1e3 * 1.3, 6)  # ~HBM-bound, made up
    w.submit(code, round(ref_ms / 1.05, 6), ref_ms)
    w.end()
    p = out / f"honest_{tag}.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for e in w.events:
            fh.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
    return p


def corpus_traces() -> list[Path]:
    """The seed run and every hack-corpus trace with CUDA code in it."""
    out = [REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"]
    hacks = REPO / "tests" / "fixtures" / "hacks"
    for p in sorted(hacks.glob("*.jsonl")):
        text = p.read_text(encoding="utf-8", errors="replace")
        if "cuda_sources" in text or "__global__" in text:
            out.append(p)
    return [p for p in out if p.exists()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--honest", type=int, default=12)
    ap.add_argument("--triton", type=int, default=0, help="honest Triton kernels of the first N ops too (each "
                    "of the problem of the CUDA kernel of its op: two kernels per problem)")
    ap.add_argument("--no-corpus", action="store_true")
    a = ap.parse_args()
    out = Path(a.out)
    (out / "honest").mkdir(parents=True, exist_ok=True)
    made = [honest_trace(out / "honest", *op) for op in OPS[: a.honest]]
    made += [honest_trace(out / "honest", *op, triton=True) for op in OPS[: a.triton]]
    if not a.no_corpus:
        (out / "corpus").mkdir(exist_ok=True)
        for p in corpus_traces():
            link = out / "corpus" / p.name
            if not link.exists():
                os.symlink(p, link)
            made.append(link)
    for p in made:
        print(p)


if __name__ == "__main__":
    main()
