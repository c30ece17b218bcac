"""Tampering canaries: tensors the kernel was never given must not change while it runs.

The candidate worker holds copies of the kernel's own output and inputs (the kind of tensor a
harness keeps: an expected output, earlier inputs) as canaries, runs the kernel, and reports
which canaries changed. Only a change is believed: a hostile worker can always claim "none".
It runs when correctness failed too: a kernel that tampers and is wrong is named for both.
"""

from __future__ import annotations

from ..words import count, plural
from . import judge_probe, worker_probe

CANARY_SEED = 7919 + 40


def checksums(tensors):
    """Plain Python strings (nothing a tensor walk reaches) that change when a tensor changes;
    NaN-safe (a NaN sum prints as 'nan', unlike any finite one)."""
    import torch

    out = []
    for t in tensors:
        d = t.detach().to(torch.float64)
        out.append(repr((float(d.sum()), float(d.abs().sum()), float((d * d).sum()))))
    return out


@worker_probe("canary")
def canary_worker(wctx, args, fds, out_fds):
    import torch

    from ..compare import flatten
    from ..errors import guarded

    inputs = wctx.slots[str(args["slot"])]
    with torch.no_grad():
        first = guarded("checks", wctx.model, *inputs, what="kernel")
    keep = [t.detach().clone() for t in flatten(first) + list(inputs)
            if isinstance(t, torch.Tensor) and t.numel() and t.device.type != "meta"]
    del first
    before = checksums(keep)
    with torch.no_grad():
        guarded("checks", wctx.model, *inputs, what="kernel")
    if wctx.device is not None and wctx.device.type == "cuda":
        torch.cuda.synchronize(wctx.device)
    after = checksums(keep)
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    return {"findings": [], "data": {"canaries": len(keep), "changed": changed[:16]}}


@judge_probe("tampering", on_failure=True)
def tampering(ctx):
    ctx.trial(1, 1, "tampering")
    inputs, _none = ctx.candidate_inputs(int(ctx.input_seed) + CANARY_SEED, "p-canary", outputs=False)
    data, _fds = ctx.candidate.call("probe", {"name": "canary", "args": {"slot": "p-canary"}})
    d = data.get("data") or {}
    n = d.get("canaries") if isinstance(d.get("canaries"), int) else 0
    changed = [i for i in (d.get("changed") or []) if isinstance(i, int)] if isinstance(d.get("changed"), list) else []
    if changed:
        ctx.add_check("tampering", False,
                      f"the kernel changed {len(changed)} of {count(n, 'tensor')} it was never given (copies of its output "
                      "and inputs held beside it): it tampers with other tensors")
    else:
        ctx.add_check("tampering", True if n else None,
                      f"{count(n, 'tensor')} it was not given {plural(n, 'is', 'are')} untouched" if n else "no tensor to hold as a canary")
