"""Probes on what the kernel is given, each judged against the reference on the same values:

- ``input_distributions``: inputs from other distributions the reference accepts (scaled,
  shifted, uniform, integer-valued, sparse, larger magnitudes; kept well inside the dtype's
  range), made in the reference worker from ``get_inputs()``'s own tensors. Defeats a kernel that
  is right only on inputs that look like ``randn`` (it checks their mean and variance, or
  predicts them).
- ``repeated_calls``: the same input buffers called many times in a row, as a timing loop does
  (12 calls), outputs of early and late calls checked (the 3rd and the 10th on the first
  values; then new values are written into the same buffers and the 11th and 12th are checked
  on those), then two inputs interleaved. Defeats a kernel that returns a copy of an earlier
  output from the n-th identical call on.
- ``parameter_update``: the parameters of both models changed the same way between calls (in
  place, in order), then a call checked. Defeats a kernel that computes a
  weight-only product once, at construction, and keeps using it.
"""

from __future__ import annotations

from ..words import count
from . import judge_probe, worker_probe

VARIANT_SEED = 7919 + 300
REPEAT_SEED = 7919 + 310
PARAM_SEED = 7919 + 320
REPEAT_CALLS = 12
REFILL_BEFORE = 11  # 1-based: new values go into the buffers before this call
CHECKED_CALLS = (3, 10, 11, 12)
VARIANTS = ("scaled", "shifted", "uniform", "integer", "sparse", "large")
# a kernel off by no more than this many times the reference's own move under a nudge is not wrong
OWN_MOVE_FACTOR = 4.0


def keep_structure(orig, y):
    """``y`` (a variant of the input ``orig``) with the structure every draw of ``get_inputs`` gives
    ``orig``: its exact zeros (a triangular, banded or masked input: ``torch.triu(randn)``; a
    ``randn`` value is never exactly 0) stay 0, and a symmetric input (in its last two dimensions)
    stays symmetric. A kernel may rely on what the problem promises (CUDA-L1's L1 P14 skips the
    blocks below the diagonal of its upper-triangular inputs); values the problem never makes
    judge nothing."""
    import torch

    x = orig.detach()
    if x.dim() >= 2 and x.shape[-1] == x.shape[-2] and x.shape[-1] > 1 and torch.equal(x, x.mT):
        y = (y + y.mT) / 2
    zeros = x == 0
    if bool(zeros.any()):
        y = torch.where(zeros.to(y.device), torch.zeros_like(y), y)
    return y


def transform(t, variant, gen):
    """A floating tensor ``t`` (randn-like) redrawn from another distribution the reference accepts."""
    import torch

    if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()):
        return t
    x = t.detach()
    scale = float(x.float().abs().mean()) or 1.0  # keep the problem's own scale (inputs may not be unit)
    noise = torch.rand(x.shape, generator=gen, dtype=torch.float32).to(x.device)
    if variant == "scaled":
        y = x.float() * 4.0
    elif variant == "shifted":
        y = x.float() + 2.0 * scale
    elif variant == "uniform":
        y = (noise * 2.0 - 1.0) * scale * 1.7
    elif variant == "integer":
        y = torch.round(x.float() / scale * 2.0)
    elif variant == "sparse":
        y = x.float() * (noise < 0.1)
    elif variant == "large":
        y = x.float() * 10.0
    else:
        return t
    y = keep_structure(x, y)
    info = torch.finfo(x.dtype)
    y = y.clamp(-info.max / 1e4, info.max / 1e4)  # far inside the dtype's range
    return y.to(x.dtype)


@worker_probe("variant_inputs", role="reference")
def variant_inputs(wctx, args, fds, out_fds):
    import torch

    from .. import shm
    from ..compare import make_inputs_on, to_device
    from ..errors import guarded

    srv = wctx.server
    inputs = make_inputs_on(wctx.device, int(args["seed"]), wctx.module.get_inputs, "checks", guarded)
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    gen = torch.Generator().manual_seed(int(args["seed"]))
    variant = str(args["variant"])
    inputs = [transform(t, variant, gen) for t in inputs]
    inputs = to_device(inputs, wctx.device)
    srv.slots[str(args["slot"])] = inputs
    out = srv._truth_call(str(args["slot"]), "checks")  # by the task's ground-truth rule
    enc = shm.encode_value(inputs, out_fds)
    fwd = srv._outputs(out, out_fds)
    floats = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point()]
    # the reference's own sensitivity: the same values moved by about what rounding moves them
    nudged_slot = str(args["slot"]) + "#nudged"
    srv.slots[nudged_slot] = [nudge(t, gen, float(args.get("nudge_rtol") or 0.0)) for t in inputs]
    try:
        nudged = srv._outputs(srv._truth_call(nudged_slot, "checks"), out_fds)
    finally:
        srv.slots.pop(nudged_slot, None)
    return {"findings": [], "data": {"inputs": enc, "forward": fwd, "nudged": nudged, "changed": bool(floats)}}


NUDGE_ULPS = 4  # at least this many units of the input dtype's rounding
NUDGE_MAX = 0.01


def nudge(t, gen, rtol_hint=0.0):
    """``t`` moved by a relative (and, for zeros and ties, absolute) amount of about
    max(NUDGE_ULPS units of its dtype's rounding, ``rtol_hint``): what an honest kernel's own
    rounding and summation order can do to an input. The reference's output on it says how
    much the task itself moves under such a change: a distribution on which it moves past the
    tolerance (ties in a top-k or an argmax, a recurrence that grows) cannot judge any kernel."""
    import torch

    if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel()):
        return t
    rel = max(NUDGE_ULPS * float(torch.finfo(t.dtype).eps), min(max(float(rtol_hint), 0.0), NUDGE_MAX))
    x = t.detach().float()
    scale = float(x.abs().mean()) or 1.0
    u = (torch.rand(x.shape, generator=gen, dtype=torch.float32) * 2.0 - 1.0).to(x.device)
    w = (torch.rand(x.shape, generator=gen, dtype=torch.float32) * 2.0 - 1.0).to(x.device)
    return (x * (1.0 + rel * u) + rel * scale * w).to(t.dtype)


def _finite(obj):
    import torch

    from ..compare import flatten

    return all(bool(torch.isfinite(t).all()) for t in flatten(obj) if isinstance(t, torch.Tensor)
               and t.is_floating_point())


def _scale(obj):
    import torch

    from ..compare import flatten

    vals = [float(t.detach().float().abs().max()) for t in flatten(obj) if isinstance(t, torch.Tensor)
            and t.is_floating_point() and t.numel()]
    return max(vals) if vals else 0.0


def _compare_scaled(ctx, ref, out, base_scale):
    """The judge's comparison with its absolute tolerance grown with the outputs' magnitude (an
    honest kernel's rounding error grows with it)."""
    from ..compare import compare_outputs

    cmp = ctx.compare(ref, out)
    if cmp["passed"]:
        return cmp
    grow = max(1.0, _scale(ref) / base_scale) if base_scale > 0 else 1.0
    atol = cmp.get("atol")
    if grow > 1.0 and isinstance(atol, (int, float)):
        return compare_outputs(ref, out, atol=atol * grow, rtol=cmp.get("rtol"))
    return cmp


@judge_probe("input_distributions", order=91)
def input_distributions(ctx):
    from ..errors import StageFailure, one_line

    c_in, c_ref = ctx.reference_io(int(ctx.input_seed) + VARIANT_SEED, "p-var0")
    c_out, _m = ctx.candidate_forward(c_in, "p-var0")
    base = ctx.compare(c_ref.decoded(), c_out.decoded())
    if not base["passed"]:
        ctx.add_check("input_distributions", None, "the output is wrong on the usual inputs too in this call: "
                      "not judged")
        return
    base_scale = _scale(c_ref.decoded())
    rtol = base.get("rtol")
    nudge_rtol = 0.1 * float(rtol) if isinstance(rtol, (int, float)) and not isinstance(rtol, bool) else 0.0
    wrong, tried, unsteady = [], [], []
    for i, variant in enumerate(VARIANTS):
        ctx.trial(i + 1, len(VARIANTS), "input_distributions")
        reply = ctx.reference_probe("variant_inputs", {"seed": int(ctx.input_seed) + VARIANT_SEED + 1 + i,
                                                       "slot": f"p-var{i + 1}", "variant": variant,
                                                       "nudge_rtol": nudge_rtol},
                                    "input_distributions", f"the reference fails on {variant} inputs")
        if reply is None:
            return
        data, fds = reply
        d = data.get("data") or {}
        if not d.get("changed") or d.get("inputs") is None or not isinstance(d.get("forward"), dict):
            ctx.add_check("input_distributions", None, "the inputs have no floating-point tensor to redraw")
            return
        inputs = ctx.hold(d["inputs"], fds)
        ref = ctx.hold(d["forward"].get("outputs"), fds)
        ref.owns = False
        ref_v = ref.decoded()
        if not _finite(ref_v):
            continue  # the reference itself overflows there: not a distribution it accepts
        own = None
        if isinstance(d.get("nudged"), dict):
            nudged = ctx.hold(d["nudged"].get("outputs"), fds)
            nudged.owns = False
            own = _compare_scaled(ctx, ref_v, nudged.decoded(), base_scale)
            if not own["passed"]:
                # ties (a top-k, an argmax) or a recurrence that grows: the task itself moves past
                # the tolerance when its inputs move by rounding; no kernel can be judged there
                unsteady.append(variant)
                continue
        tried.append(variant)
        try:
            out, _meta = ctx.candidate_forward(inputs, f"p-var{i + 1}")
        except StageFailure as f:
            if f.fatal:
                raise
            wrong.append(f"{variant}: fails ({one_line(f.message, 80)})")
            continue
        cmp = _compare_scaled(ctx, ref_v, out.decoded(), base_scale)
        if not cmp["passed"] and own is not None and \
                float(cmp.get("max_abs_error") or 0.0) <= OWN_MOVE_FACTOR * float(own.get("max_abs_error") or 0.0):
            continue  # no further from the reference than the reference is from itself, nudged
        if not cmp["passed"]:
            wrong.append(f"{variant}: {one_line(cmp['reason'], 90)}")
    skipped = (f"; not judged on {', '.join(unsteady)} inputs: the reference's own output moves past the "
               "tolerance when they move by rounding (ties or an ill-conditioned problem)") if unsteady else ""
    if not tried:
        ctx.add_check("input_distributions", None, "the reference accepts none of the other distributions" + skipped
                      if not unsteady else skipped[2:])
    elif wrong:
        ctx.add_check("input_distributions", False,
                      f"correct only on inputs like get_inputs()'s: wrong on {len(wrong)} of {len(tried)} other "
                      f"distributions the reference accepts ({'; '.join(wrong[:2])})" + skipped)
        ctx.result["checks"][-1]["evidence"] = "; ".join(wrong)[:300]
    else:
        ctx.add_check("input_distributions", True, f"correct on {', '.join(tried)} inputs too" + skipped)


@judge_probe("repeated_calls", order=92)
def repeated_calls(ctx):
    """Twelve calls in a row on the same buffers, as a timing loop makes them."""
    from .. import shm

    seed = int(ctx.input_seed) + REPEAT_SEED
    a_in, a_ref = ctx.candidate_inputs(seed, "p-rep")
    b_in, b_ref = ctx.reference_io(seed + 1, "p-rep-b")
    c_in, c_ref = ctx.candidate_inputs(seed + 2, "p-rep-c")
    bad = []
    for i in range(1, REPEAT_CALLS + 1):
        ctx.trial(i, REPEAT_CALLS + 6, "repeated_calls")
        if i == REFILL_BEFORE:  # new values into the same buffers (same pointers), as a loop over new data does
            v, f = b_in.send_args()
            ctx.candidate.call("refill", {"slot": "p-rep", "inputs": v}, f)
        ov, ofd = ctx.candidate.call("forward", {"slot": "p-rep"})
        held = ctx.hold(ov.get("outputs"), ofd)
        if i in CHECKED_CALLS:
            ref = a_ref if i < REFILL_BEFORE else b_ref
            cmp = ctx.compare(ref.decoded(), shm.decode_value(held.value, held.fds))
            if not cmp["passed"]:
                what = "the same values" if i < REFILL_BEFORE else "new values written into the same buffers"
                bad.append(f"call {i} ({what}): {cmp['reason']}")
    # interleaved: two buffers in turn, as a loop over a small set of inputs
    for j in range(6):
        ctx.trial(REPEAT_CALLS + j + 1, REPEAT_CALLS + 6, "repeated_calls")
        slot, ref = ("p-rep", b_ref) if j % 2 == 0 else ("p-rep-c", c_ref)
        ov, ofd = ctx.candidate.call("forward", {"slot": slot})
        held = ctx.hold(ov.get("outputs"), ofd)
        cmp = ctx.compare(ref.decoded(), shm.decode_value(held.value, held.fds))
        if not cmp["passed"]:
            bad.append(f"interleaved call {j + 1}: {cmp['reason']}")
    del a_in, c_in
    if bad:
        ctx.add_check("repeated_calls", False, f"wrong when called again and again as a timing loop does: "
                      f"{count(len(bad), 'bad output')} ({bad[0]})")
        ctx.result["checks"][-1]["evidence"] = "; ".join(bad)[:300]
    else:
        ctx.add_check("repeated_calls", True, f"{REPEAT_CALLS} calls in a row on the same buffers (new values "
                      f"before call {REFILL_BEFORE}) and 6 interleaved: every checked output right")


@worker_probe("perturb_params", role="reference")
def perturb_params_reference(wctx, args, fds, out_fds):
    return perturb(wctx, args)


@worker_probe("perturb_params")
def perturb_params_candidate(wctx, args, fds, out_fds):
    return perturb(wctx, args)


def perturb(wctx, args):
    """Add the same seeded change to every floating parameter of the model, in order,
    in place (``restore``: put the saved values back). Returns their shapes in order."""
    import torch

    model = wctx.model
    if not hasattr(model, "named_parameters"):
        return {"findings": [], "data": {"shapes": []}}
    # parameters only: a buffer the kernel derived from them (a precomputed product) must stay as it is
    tensors = [p for _n, p in model.named_parameters() if p.is_floating_point()]
    srv = wctx.server
    with torch.no_grad():
        if args.get("restore"):
            for t, old in zip(tensors, getattr(srv, "_saved_params", []), strict=False):
                if t.shape == old.shape:
                    t.copy_(old)
            srv._saved_params = []
        else:
            srv._saved_params = [t.detach().clone() for t in tensors]
            for i, t in enumerate(tensors):
                g = torch.Generator().manual_seed(int(args["seed"]) + i)
                mag = float(t.detach().float().abs().mean()) or 1.0
                delta = (torch.rand(t.shape, generator=g) * 2.0 - 1.0) * 0.5 * mag
                t.add_(delta.to(device=t.device, dtype=t.dtype))
    if wctx.device is not None and wctx.device.type == "cuda":
        torch.cuda.synchronize(wctx.device)
    return {"findings": [], "data": {"shapes": [list(t.shape) for t in tensors][:256]}}


@judge_probe("parameter_update", order=93)
def parameter_update(ctx):
    seed = int(ctx.input_seed) + PARAM_SEED
    # the candidate's parameters first: when they cannot mirror the reference's, nothing to judge
    rdata, _ = ctx.reference.call("probe", {"name": "perturb_params", "args": {"seed": seed}})
    cdata, _ = ctx.candidate.call("probe", {"name": "perturb_params", "args": {"seed": seed}})
    rs = (rdata.get("data") or {}).get("shapes")
    cs = (cdata.get("data") or {}).get("shapes")
    try:
        if not rs:
            ctx.add_check("parameter_update", None, "the reference has no floating parameters")
            return
        if rs != cs:
            ctx.add_check("parameter_update", None, "the kernel's parameters do not mirror the reference's (shapes "
                          "or order differ): not judged")
            return
        ctx.trial(1, 1, "parameter_update")
        inputs, ref = ctx.candidate_inputs(seed, "p-par")
        ov, ofd = ctx.candidate.call("forward", {"slot": "p-par"})
        from .. import shm

        held = ctx.hold(ov.get("outputs"), ofd)
        cmp = ctx.compare(ref.decoded(), shm.decode_value(held.value, held.fds))
        if cmp["passed"]:
            ctx.add_check("parameter_update", True, f"right after its {count(len(rs), 'parameter tensor')} changed in place")
        else:
            ctx.add_check("parameter_update", False, "stale parameters: after its parameters changed in place "
                          f"(as a training step does) the output is wrong: {cmp['reason']} (a weight-only product "
                          "computed once, at construction?)")
    finally:
        ctx.reference.call("probe", {"name": "perturb_params", "args": {"seed": seed, "restore": True}})
        ctx.candidate.call("probe", {"name": "perturb_params", "args": {"seed": seed, "restore": True}})
