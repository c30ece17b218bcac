"""Precision flags: global numerics / speed settings the kernel changed when it loaded (TF32,
reduced-precision reductions, cuDNN benchmark, thread count, default dtype...). The reference
runs in its own process, so it is measured with the settings as they were; the finding says the
kernel's numbers come from changed settings."""

from __future__ import annotations

from . import judge_probe, worker_probe

PRECISION_FLAGS = (
    ("torch.backends.cuda.matmul.allow_tf32", lambda t: t.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     lambda t: t.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
    ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
     lambda t: t.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    ("torch.backends.cudnn.allow_tf32", lambda t: t.backends.cudnn.allow_tf32),
    ("torch.backends.cudnn.benchmark", lambda t: t.backends.cudnn.benchmark),
    ("torch.backends.cudnn.deterministic", lambda t: t.backends.cudnn.deterministic),
    ("torch.backends.cudnn.enabled", lambda t: t.backends.cudnn.enabled),
    ("torch.backends.mkldnn.enabled", lambda t: t.backends.mkldnn.enabled),
    ("torch.get_float32_matmul_precision()", lambda t: t.get_float32_matmul_precision()),
    ("torch.get_num_threads()", lambda t: t.get_num_threads()),
    ("torch.get_default_dtype()", lambda t: str(t.get_default_dtype())),
    ("torch.are_deterministic_algorithms_enabled()", lambda t: t.are_deterministic_algorithms_enabled()),
)


def precision_flags():
    """The global settings a kernel can change for everyone in its process (str values)."""
    import torch

    out = {}
    for name, get in PRECISION_FLAGS:
        try:
            out[name] = repr(get(torch))
        except (AttributeError, RuntimeError):
            out[name] = None
    return out


@worker_probe("precision_flags")
def precision_flags_worker(wctx, args, fds, out_fds):
    before = wctx.server.flags_before_build or {}
    now = precision_flags()
    changed = {k: [before.get(k), v] for k, v in now.items() if before and v != before.get(k)}
    return {"findings": [], "data": {"known": bool(before), "changed": changed}}


@judge_probe("precision_flags", device="none", new_inputs=False)  # asks the worker, runs nothing
def precision_flags_probe(ctx):
    data, _fds = ctx.candidate.call("probe", {"name": "precision_flags", "args": {}})
    d = data.get("data") or {}
    changed = d.get("changed") if isinstance(d.get("changed"), dict) else {}
    if changed:
        ev = "; ".join(f"{str(k)[:80]}: {str((v or [None, None])[0])[:20]} -> {str((v or [None, None])[-1])[:20]}"
                       for k, v in list(changed.items())[:6] if isinstance(v, list))
        ctx.add_check("precision_flags", False,
                      "loading the kernel changed global settings that also change numerics or speed "
                      f"({ev}); the reference is measured with them as they were")
    else:
        ctx.add_check("precision_flags", True if d.get("known") else None,
                      "no global precision setting changed" if d.get("known") else "settings before the load unknown")
