"""Fresh output: every call returns a new, materialized plain tensor of its own.

In the candidate worker the kernel runs on one set of inputs, the inputs are refilled in place
with new values (same buffers, same pointers) and it runs again while the first output is still
held. Reported: an output that is not exactly ``torch.Tensor`` or has no real storage (meta,
fake, functional), that shares storage with an input (unless the reference's own output does:
a view problem), or two calls with different inputs that returned the same storage (a buffer or
result kept between calls, keyed on pointers or not). The worker only measures pointers; the
judge believes a problem it reports, and checks both outputs' values against the reference
itself (a worker saying "fresh" never makes a stale answer pass).
"""

from __future__ import annotations

from . import judge_probe, worker_probe

FRESH_SEED = 7919 + 30


def storage_ranges(tensors):
    """(start, end) byte ranges of the storages of ``tensors`` (meta and storage-less skipped)."""
    import torch

    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            try:
                st = t.untyped_storage()
                out.append((st.data_ptr(), st.data_ptr() + st.nbytes()))
            except (RuntimeError, NotImplementedError, TypeError):
                continue
    return out


def overlaps(a, b):
    return any(x0 < y1 and y0 < x1 for x0, x1 in a for y0, y1 in b if x1 > x0 and y1 > y0)


def _tensors(obj):
    from ..compare import flatten
    from ..values import plain as _plain

    return list(flatten(_plain(obj)))


def not_materialized(t):
    """Why tensor ``t`` is not a plain materialized tensor, or None."""
    import torch

    if type(t) is not torch.Tensor:
        return f"an output is a {type(t).__module__}.{type(t).__qualname__}, not a plain torch.Tensor"
    if t.device.type == "meta":
        return "an output is a meta tensor (never materialized)"
    if t.layout != torch.strided:
        return f"an output has layout {t.layout}"
    try:
        t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return "an output has no storage (a fake or functional tensor)"
    return None


@worker_probe("alias", role="reference")
def reference_alias(wctx, args, fds, out_fds):
    """Whether the reference's own output shares storage with its inputs (a view problem)."""
    import torch

    from ..errors import guarded

    inputs = wctx.slots[str(args["slot"])]
    with torch.no_grad():
        out = guarded("checks", wctx.model, *inputs, what="reference")
    return {"findings": [], "data": {"aliases": overlaps(storage_ranges(_tensors(out)), storage_ranges(inputs))}}


@worker_probe("fresh_output")
def fresh_output_worker(wctx, args, fds, out_fds):
    import torch

    from .. import shm
    from ..errors import guarded
    from ..values import clone as _clone
    from ..values import plain as _plain

    slot = str(args["slot"])
    inputs = wctx.slots[slot]
    cuda = wctx.device is not None and wctx.device.type == "cuda"

    def forward():
        with torch.no_grad():
            out = guarded("checks", wctx.model, *inputs, what="kernel")
        if cuda:
            torch.cuda.synchronize(wctx.device)
        return out

    problems = []
    first = forward()
    ta = [t for t in _tensors(first) if isinstance(t, torch.Tensor)]
    for t in ta:
        why = not_materialized(t)
        if why:
            problems.append(why)
    in_ranges = storage_ranges(inputs)
    a_ranges = storage_ranges(ta)
    if overlaps(a_ranges, in_ranges):
        problems.append("the output shares storage with an input")
    # the first output as it was, before anything else runs (a kernel may overwrite it later)
    with torch._C.DisableTorchFunctionSubclass():
        enc_a = shm.encode_value(_plain(_clone(_plain(first))), out_fds)
    new = wctx.server._value(args["inputs"], fds)
    with torch.no_grad():
        for a, b in zip(inputs, new, strict=False):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
                a.copy_(b)
    if cuda:
        torch.cuda.synchronize(wctx.device)
    second = forward()
    tb = [t for t in _tensors(second) if isinstance(t, torch.Tensor)]
    if overlaps(a_ranges, storage_ranges(tb)):
        problems.append("two calls with different inputs returned the same storage (an output kept between calls)")
    with torch._C.DisableTorchFunctionSubclass():
        enc_b = shm.encode_value(_plain(second), out_fds)
    del first
    return {"findings": [], "data": {"problems": sorted(set(problems))[:8], "first": enc_a, "second": enc_b}}


@judge_probe("fresh_output")
def fresh_output(ctx):
    ctx.trial(1, 1, "fresh_output")
    seed = int(ctx.input_seed) + FRESH_SEED
    a_in, a_ref = ctx.reference_io(seed, "p-fresh-a")
    b_in, b_ref = ctx.reference_io(seed + 1, "p-fresh-b")
    rdata, _ = ctx.reference.call("probe", {"name": "alias", "args": {"slot": "p-fresh-a"}})
    ref_aliases = bool((rdata.get("data") or {}).get("aliases"))
    v, f = a_in.send_args()
    ctx.candidate.call("put_inputs", {"slot": "p-fresh", "inputs": v}, f)
    v, f = b_in.send_args()
    data, ofd = ctx.candidate.call("probe", {"name": "fresh_output", "args": {"slot": "p-fresh", "inputs": v}}, f)
    d = data.get("data") or {}
    held = ctx.hold([d.get("first"), d.get("second")], ofd)
    problems = [str(p)[:160] for p in (d.get("problems") or []) if isinstance(p, str)] \
        if isinstance(d.get("problems"), list) else []
    if ref_aliases:  # the reference returns a view of its input too: sharing is the problem's, not a hack
        problems = [p for p in problems if "shares storage" not in p and "same storage" not in p]
    if d.get("first") is None or d.get("second") is None:
        problems.append("the worker returned no outputs")
    else:
        out_a, out_b = held.decoded()
        for label, ref, out in (("first", a_ref, out_a), ("second", b_ref, out_b)):
            cmp = ctx.compare(ref.decoded(), out)
            if not cmp["passed"]:
                problems.append(f"the {label} call's output is wrong ({cmp['reason']})")
    if problems:
        ctx.add_check("fresh_output", False, "reused, aliased or fake output: " + "; ".join(problems[:3]))
    else:
        ctx.add_check("fresh_output", True, "a new, materialized plain tensor per call, correct both times")
