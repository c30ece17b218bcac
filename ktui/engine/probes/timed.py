"""Timed outputs: distinct inputs back to back, the way a timed loop calls the kernel, every
output kept and checked by the judge against the reference. Defeats kernels that compute only
for the first calls (the correctness trials), replay an earlier output, or skip the work when
their call stack looks like a benchmark's."""

from __future__ import annotations

from . import judge_probe, worker_probe

TIMED_SEED = 7919 + 20
TIMED_CALLS = 6


def benchmark_timed_loop(model, slots, device):
    """Named (and shaped) like a timing loop on purpose: a kernel that inspects its callers for
    "time" / "bench" sees one."""
    import torch

    outs = []
    with torch.no_grad():
        for inputs in slots:
            outs.append(model(*inputs))
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)
    return outs


@worker_probe("timed_outputs")
def timed_outputs_worker(wctx, args, fds, out_fds):
    import torch

    from .. import shm
    from ..errors import guarded
    from ..values import plain as _plain

    slots = [wctx.slots[str(s)] for s in args["slots"]]
    outs = guarded("checks", benchmark_timed_loop, wctx.model, slots, wctx.device, what="kernel")
    enc = []
    with torch._C.DisableTorchFunctionSubclass():
        for o in outs:
            enc.append(shm.encode_value(_plain(o), out_fds))
    return {"findings": [], "data": {"outputs": enc}}


@judge_probe("timed_outputs", speed_only=True)
def timed_outputs(ctx):
    seed = int(ctx.input_seed) + TIMED_SEED
    refs, slots = [], []
    for i in range(TIMED_CALLS):
        ctx.trial(i + 1, TIMED_CALLS, "timed_outputs")
        inputs, ref = ctx.candidate_inputs(seed + i, f"p-t{i}")
        refs.append(ref)
        slots.append(f"p-t{i}")
    data, ofd = ctx.candidate.call("probe", {"name": "timed_outputs", "args": {"slots": slots}})
    outs = (data.get("data") or {}).get("outputs")
    if not isinstance(outs, list) or len(outs) != len(slots):
        ctx.add_check("timed_outputs", False, "the worker did not return one output per back-to-back call")
        return
    held = ctx.hold(outs, ofd)
    from .. import shm

    bad = []
    for i, (ref, o) in enumerate(zip(refs, held.value, strict=True)):
        cmp = ctx.compare(ref.decoded(), shm.decode_value(o, held.fds))
        if not cmp["passed"]:
            bad.append(f"call {i + 1}: {cmp['reason']}")
    if bad:
        ctx.add_check("timed_outputs", False,
                      f"{len(bad)} of {len(slots)} outputs wrong when called back to back with new inputs (as in a "
                      f"timed loop): it answers differently when timed ({bad[0]})")
    else:
        ctx.add_check("timed_outputs", True, f"{len(slots)} back-to-back calls with new inputs, every output correct")
