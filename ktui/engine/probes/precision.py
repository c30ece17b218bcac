"""Reduced precision: a kernel can pass the float32 tolerance while computing (or storing) in
float16, bfloat16 or TF32. The reference worker runs the reference once more in float64 (a deep
copy of its model, inputs widened; its own process, so with the precision settings it had before
any kernel loaded); the judge measures both the kernel's and the float32 reference's error
against it. An error far above what float32 arithmetic gives (REDUCED_FACTOR times the float32
reference's own, and above REL_FLOOR of the output's scale, which no float32 computation of a
well-conditioned output reaches) is "reduced precision" even inside the tolerance."""

from __future__ import annotations

from . import judge_probe, worker_probe

PRECISION_SEED = 7919 + 50
REDUCED_FACTOR = 10.0  # the kernel's error vs float64 over the float32 reference's own
REL_FLOOR = 1e-5  # ...and over this fraction of the largest |output| (fp16 rounding alone gives ~2.4e-4)


def to_float64(obj):
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.double() if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_float64(x) for x in obj)
    if isinstance(obj, dict):
        return {k: to_float64(v) for k, v in obj.items()}
    return obj


@worker_probe("forward64", role="reference")
def reference_float64(wctx, args, fds, out_fds):
    """The reference in float64 on slot ``args['slot']`` (its model deep-copied and widened once)."""
    import copy

    import torch

    from .. import shm
    from ..compare import flatten
    from ..errors import guarded
    from ..values import plain as _plain

    srv = wctx.server
    m64 = getattr(srv, "_model64", None)
    if m64 is None:
        m64 = guarded("checks", lambda: copy.deepcopy(wctx.model).double(), what="reference")
        srv._model64 = m64
    inputs = to_float64(wctx.slots[str(args["slot"])])
    with torch.no_grad():
        out = guarded("checks", m64, *inputs, what="reference")
    if wctx.device is not None and wctx.device.type == "cuda":
        torch.cuda.synchronize(wctx.device)
    dtypes = [str(t.dtype).replace("torch.", "") for t in flatten(out) if isinstance(t, torch.Tensor)]
    enc = shm.encode_value(_plain(out), out_fds)
    return {"findings": [], "data": {"outputs": enc, "dtypes": dtypes[:64]}}


def max_abs_diff(a, b):
    """Largest |a - b| over matching float tensors, in float64; positions where both are the same
    non-finite value match; any other non-finite difference is infinite."""
    import torch

    from ..compare import flatten

    worst = 0.0
    for x, y in zip(flatten(a), flatten(b), strict=False):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape and x.numel():
            xd, yd = x.detach().to(torch.float64).cpu(), y.detach().to(torch.float64).cpu()
            same = (xd == yd) | (torch.isnan(xd) & torch.isnan(yd))
            d = torch.where(same, torch.zeros_like(xd), (xd - yd).abs())
            d = torch.where(torch.isfinite(d), d, torch.full_like(d, float("inf")))
            worst = max(worst, float(d.max()))
    return worst


def output_scale(obj):
    import torch

    from ..compare import flatten

    best = 0.0
    for t in flatten(obj):
        if isinstance(t, torch.Tensor) and t.numel() and t.is_floating_point():
            a = t.detach().to(torch.float64).abs()
            a = a[torch.isfinite(a)]
            if a.numel():
                best = max(best, float(a.max()))
    return best


def judge_precision(err_kernel, err_ref, scale):
    """(reduced, ratio): the kernel's error against float64 vs the float32 reference's own."""
    base = max(err_ref, 1e-7 * scale)  # one float32 ulp or so at the largest output: never below
    ratio = err_kernel / base if base > 0 else (float("inf") if err_kernel > 0 else 0.0)
    return (err_kernel > REDUCED_FACTOR * base and err_kernel > REL_FLOOR * scale), ratio


@judge_probe("reduced_precision")
def reduced_precision(ctx):
    import torch

    from ..compare import flatten

    ctx.trial(1, 1, "reduced_precision")
    cosine = getattr(ctx.judge, "cosine", None)
    if cosine is not None:
        # the task's metric is cosine similarity: it accepts outputs that differ at a few positions by
        # design (a top-k choice resolved otherwise on a near tie, a quantized step), so the largest
        # error against float64 says nothing about the bits the kernel computes in
        ctx.add_check("reduced_precision", None, "the task judges by cosine similarity (a few positions may "
                      "differ by design): the largest error is not its measure")
        return
    inputs, ref32 = ctx.reference_io(int(ctx.input_seed) + PRECISION_SEED, "p-prec")
    r = [t for t in flatten(ref32.decoded()) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not r or any(t.dtype != torch.float32 for t in r):
        ctx.add_check("reduced_precision", None, "not a float32 problem")
        return
    # the task's own precision is its inputs': an fp16 task judged against an fp32 ground truth
    # (the reference on float32 copies) gets float32 outputs from the reference, yet a kernel that
    # computes in fp16 does what the task asks (an honest Harbor fp16 kernel was "reduced precision")
    narrow = sorted({str(t.dtype).replace("torch.", "") for t in flatten(inputs.decoded())
                     if isinstance(t, torch.Tensor) and t.is_floating_point()
                     and t.dtype not in (torch.float32, torch.float64)})
    if narrow:
        ctx.add_check("reduced_precision", None, f"not a float32 problem (its inputs are {', '.join(narrow)})")
        return
    out, _meta = ctx.candidate_forward(inputs, "p-prec")
    if not ctx.compare(ref32.decoded(), out.decoded())["passed"]:
        # outside the tolerance in this call: wrong, not a precision question (other probes name it)
        ctx.add_check("reduced_precision", None, "the output of this call is outside the tolerance: not judged")
        return
    reply = ctx.reference_probe("forward64", {"slot": "p-prec"}, "reduced_precision",
                                "the reference does not run in float64")
    if reply is None:
        return
    data, fds = reply
    d = data.get("data") or {}
    dtypes = d.get("dtypes") if isinstance(d.get("dtypes"), list) else []
    if d.get("outputs") is None or len(dtypes) != len(r) or any(x != "float64" for x in dtypes):
        ctx.add_check("reduced_precision", None, "the reference does not compute in float64 when widened "
                      f"(outputs {', '.join(str(x) for x in dtypes[:3]) or 'none'})")
        return
    ref64 = ctx.hold(d["outputs"], fds).decoded()
    err_k, err_r = max_abs_diff(out.decoded(), ref64), max_abs_diff(ref32.decoded(), ref64)
    scale = output_scale(ref64)
    reduced, ratio = judge_precision(err_k, err_r, scale)
    detail = (f"max error vs the float64 reference {err_k:.2e}, the float32 reference's own {err_r:.2e} "
              f"(largest |output| {scale:.3g})")
    if reduced:
        ctx.add_check("reduced_precision", False,
                      f"reduced precision: its error vs float64 ({err_k:.2e}) is {ratio:,.0f}x the float32 "
                      f"reference's own ({err_r:.2e}; largest |output| {scale:.3g}): it computes or stores in "
                      "fewer bits, even inside the tolerance")
        ctx.result["checks"][-1]["evidence"] = f"error {err_k:.3g} vs float64, float32 reference {err_r:.3g}"
    else:
        ctx.add_check("reduced_precision", True, detail)
