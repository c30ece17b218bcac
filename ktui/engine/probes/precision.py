"""Reduced precision: a kernel can pass the float32 tolerance while computing (or storing) in
float16, bfloat16 or TF32. The reference worker runs the reference once more in float64 (a deep
copy of its model, inputs widened; its own process, so with the precision settings it had before
any kernel loaded); the judge measures both the kernel's and the float32 reference's error
against it.

An error far above the float32 reference's (REDUCED_FACTOR times) makes a suspect, never a
verdict: float32 summed in another order has it too (a real KernelBench L1 matmul, K = 524,288,
summed in sequence: 113x cuBLAS's error). "Fewer bits" needs evidence of the bits themselves
(``fewer_bits``): outputs whose low mantissa bits are clear as an fp16/bf16 value's are, or an
output that does not move when an input is rounded to fp16/TF32/bf16 while it moves when the
input moves as much the other way (the reference moving both ways). A kernel not suspected gets
the second test too when its output does not change at all with one of its float32 inputs one
unit in the last place off (each input alone, one call each, up to three: a kernel may round only
one operand): a downgrade that costs no accuracy (fp16 operands over a long positive sum) still
rounds its inputs."""

from __future__ import annotations

from . import judge_probe, worker_probe

PRECISION_SEED = 7919 + 50
REDUCED_FACTOR = 10.0  # the kernel's error vs float64 over the float32 reference's own


def map_floats_any(obj, fn):
    """``obj`` (a value tree) with ``fn`` applied to each floating-point tensor (others kept)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj) if obj.is_floating_point() else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_floats_any(x, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: map_floats_any(v, fn) for k, v in obj.items()}
    return obj


def to_float64(obj):
    return map_floats_any(obj, lambda t: t.double())


def to_float32(obj):
    return map_floats_any(obj, lambda t: t.float())


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


# ---- "fewer bits" or "another summation order": evidence of the bits themselves ----------------------
# float32 has 23 mantissa bits; fp16 and TF32 keep 10 of them (13 dropped), bfloat16 7 (16 dropped)
FORMATS = ((13, "fp16/TF32 (10-bit mantissa)"), (16, "bf16 (7-bit mantissa)"))
BITS_SHARE = 0.1  # of the outputs whose float64 truth has low bits set: this share with those bits all zero
BITS_MIN = 32  # ...over at least this many outputs (an honest float32 value has them zero 1 time in 8,192)
INVARIANT_MAX = 0.1  # the kernel moves under an input rounded at most this much of its move under the mirror
# ...and the mirror moves at least this many outputs. An honest kernel moves about as much both ways
# (measured: 0.69-1.0 over 20 seeds, benchmarks/results/reduced_precision_cpu.md); its floor, 1/sqrt(2),
# is a kernel whose own rounding error dominates and vanishes on rounded inputs (one-pass variance):
# then the ratio is that of two such norms, below 0.1 over 16 outputs less than once in 4 million
# (a count, not all outputs: 30 of 32 row sums of an fp16-input kernel moved, two fell on the same value)
INVARIANT_MOVED = 16
SCREEN_SAME = 0.9  # a kernel not suspected: its outputs unchanged (bit for bit) on this share, inputs 1 ulp off
SEPARATE_INPUTS = 3  # the largest float inputs rounded one at a time (a kernel may round only its weights)
# the roundings a kernel may apply to its inputs, most common first: casts and TF32 conversion round to
# nearest; tensor cores fed raw float32 bits drop the low ones (toward zero)
ROUNDINGS = ((13, True), (16, True), (13, False), (16, False))


def round_bits(t, drop, nearest=True):
    """Float32 tensor ``t`` with its ``drop`` lowest mantissa bits cleared: rounded to nearest (ties
    to even, what a cast to fp16 / bf16 or a TF32 conversion does in range) or toward zero (what a
    tensor core fed raw float32 bits keeps). Non-finite values are kept as they are."""
    import torch

    i = t.detach().contiguous().view(torch.int32)
    if nearest:
        i = i + (((i >> drop) & 1) + ((1 << (drop - 1)) - 1))  # sign-magnitude: this grows |x| only
    r = (i & ~((1 << drop) - 1)).view(torch.float32)
    return torch.where(torch.isfinite(t), r, t)


def _f32_pairs(a, b):
    import torch

    from ..compare import flatten

    for x, y in zip(flatten(a), flatten(b), strict=False):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape and x.numel() \
                and x.is_floating_point() and y.is_floating_point():
            yield x.detach().cpu(), y.detach().cpu()


def short_outputs(out, truth, drop):
    """(hits, counted): over the outputs whose ``truth`` (the float64 reference, in float32) has some
    of its ``drop`` lowest mantissa bits set, how many of the kernel's own values have them all clear.
    An output stored in fp16 or bf16 has them clear everywhere; an honest float32 value by chance
    about once in 2**drop."""
    import torch

    mask = (1 << drop) - 1
    hits = counted = 0
    for k, t in _f32_pairs(out, truth):
        tt = t.to(torch.float32)
        kk = k.to(torch.float32).contiguous()
        live = torch.isfinite(tt) & ((tt.contiguous().view(torch.int32) & mask) != 0) & torch.isfinite(kk)
        counted += int(live.sum())
        # a kernel's exact zero is float32 cancellation as often as short bits: not counted as short
        hits += int((live & (kk != 0) & ((kk.view(torch.int32) & mask) == 0)).sum())
    return hits, counted


def map_floats(obj, fn, _seen=None):
    """``obj`` (a value tree) with ``fn(tensor, index)`` applied to each float32 tensor (others kept);
    ``index`` counts the float32 tensors in flatten order."""
    import torch

    seen = [0] if _seen is None else _seen
    if isinstance(obj, torch.Tensor):
        if obj.dtype != torch.float32:
            return obj
        seen[0] += 1
        return fn(obj, seen[0] - 1)
    if isinstance(obj, (list, tuple)):
        return type(obj)(map_floats(x, fn, seen) for x in obj)
    if isinstance(obj, dict):
        return {k: map_floats(v, fn, seen) for k, v in obj.items()}
    return obj


def float_inputs(inputs):
    """Indexes (map_floats order) of the float32 inputs worth rounding one at a time, largest first."""
    sizes = []
    map_floats(inputs, lambda t, i: sizes.append((-t.numel(), i)) or t)
    return [i for n, i in sorted(sizes) if n < 0][:SEPARATE_INPUTS]


def rounded_and_mirror(inputs, which, drop, nearest):
    """(rounded, mirror, changed): the inputs with float32 input ``which`` rounded to ``drop`` fewer
    mantissa bits, and the same input moved by the same amount the other way (x + (x - round(x)));
    ``changed`` says whether rounding changed any value at all. A kernel that rounds that input
    itself gives the same output on ``rounded`` as on the inputs, and moves on ``mirror``; an honest
    float32 kernel moves by about as much on both (to first order, exactly as much)."""
    changed = [False]

    def rnd(t, i):
        if i != which:
            return t
        r = round_bits(t, drop, nearest)
        changed[0] = not bool((r == t).all())
        return r

    def mir(t, i):
        return t + (t - round_bits(t, drop, nearest)) if i == which else t

    return map_floats(inputs, rnd), map_floats(inputs, mir), changed[0]


def flip_low_bit(t):
    """Float32 ``t`` moved by one unit in its last place (its lowest mantissa bit flipped), except
    where that could change how it rounds to fp16/TF32 or bf16 (next to a rounding tie), and
    zeros and non-finite values. A kernel that rounds it to fewer bits (to nearest or toward
    zero) sees the same values."""
    import torch

    i = t.detach().contiguous().view(torch.int32)
    lo13, lo16 = i & 0x1FFF, i & 0xFFFF
    near_tie = ((lo13 - 0x1000).abs() <= 1) | ((lo16 - 0x8000).abs() <= 1)
    keep = near_tie | ~torch.isfinite(t) | (t == 0)
    return torch.where(keep, t, (i ^ 1).view(torch.float32))


def same_share(a, b):
    """(same, total): how many of the float outputs of ``a`` and ``b`` are equal, bit for bit."""
    import torch

    from ..compare import flatten

    same = total = 0
    for x, y in zip(flatten(a), flatten(b), strict=False):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.is_floating_point():
            total += x.numel()
            if y.shape == x.shape and y.dtype == x.dtype:
                xc, yc = x.detach().cpu(), y.detach().cpu()
                same += int(((xc == yc) | (torch.isnan(xc) & torch.isnan(yc))).sum())
    return same, total


def moves(base, rounded, mirror):
    """(ratio, moved): the kernel's move on rounded inputs over its move on the mirror (L2 norms over
    its float outputs, in float64), and how many outputs the mirror moved. ratio is None when a
    move is not finite or the outputs do not match in structure (no evidence either way)."""
    import torch

    from ..compare import flatten

    num = den = 0.0
    moved = 0
    for b, r, m in zip(flatten(base), flatten(rounded), flatten(mirror), strict=False):
        if not all(isinstance(t, torch.Tensor) for t in (b, r, m)) or not b.is_floating_point():
            continue
        if not (b.shape == r.shape == m.shape):
            return None, 0
        b64, r64, m64 = (t.detach().cpu().to(torch.float64) for t in (b, r, m))
        dr, dm = r64 - b64, m64 - b64
        if not (bool(torch.isfinite(dr).all()) and bool(torch.isfinite(dm).all())):
            return None, 0
        num += float((dr * dr).sum())
        den += float((dm * dm).sum())
        moved += int((dm != 0).sum())
    if den <= 0.0:
        return None, moved
    return (num / den) ** 0.5, moved


def n_float_outputs(obj):
    import torch

    from ..compare import flatten

    return sum(t.numel() for t in flatten(obj) if isinstance(t, torch.Tensor) and t.is_floating_point())


def screen(out, inputs, which, run, measured):
    """The inputs test 2 runs on for a kernel that is not a suspect: the first of ``which`` (float32
    inputs, largest first) that leaves its output unchanged bit for bit (on SCREEN_SAME of the
    outputs) with that input alone one unit in the last place off; none when every one moves it.
    One call per input, stopping at the first: moved together, the other operand's move hid a
    kernel that rounds only one (fp16 weights over a long positive sum). An input that one-ulp
    moves leave as it is (zeros, next to ties) is not screened: its output could not move."""
    for i in which:
        unchanged: list[bool] = []

        def flip(t, j, i=i, unchanged=unchanged):
            if j != i:
                return t
            f = flip_low_bit(t)
            unchanged.append(bool((f == t).all()))
            return f

        flipped = map_floats(inputs, flip)
        if all(unchanged):
            measured.append({"test": "screen", "input": i, "note": "unchanged by one-ulp moves"})
            continue
        same, total = same_share(out, run(flipped))
        measured.append({"test": "screen", "input": i, "same": same, "total": total})
        if total and same >= SCREEN_SAME * total:
            return [i]
    return []


def fewer_bits(out, truth, inputs, run, suspect=True, ref_run=None, ref_out=None):
    """Whether a kernel computes or stores in fewer bits (the evidence, in words) or not (None:
    its float32 sums may still be in another order); and what was measured (dicts).

    ``out``: its output on ``inputs``; ``truth``: the float64 reference's output, in float32;
    ``run(inputs)``: the kernel's output on other inputs; ``suspect``: its error is far above the
    float32 reference's; ``ref_run`` / ``ref_out``: the reference's output on other inputs / on
    ``inputs`` (asked for only when the kernel shows it rounds an input: the task may round it too).

    1. Stored in fewer bits: most of its outputs have the low mantissa bits of fp16 / bf16 all
       clear where the truth's are not (no call).
    2. An input rounded inside it: on an input already rounded to fp16/TF32 or bf16 (to nearest,
       or toward zero) it gives (nearly) the same output as on the input itself, while the same
       move the other way (the mirror) moves it; the reference moves both ways. An honest float32
       kernel, whatever its summation order, moves about as much both ways (to first order,
       exactly as much): its error is another order's, not fewer bits. Two calls per input and
       rounding, stopping at the first that shows it. A kernel not suspected gets it only on an
       input whose one-ulp move alone leaves its output unchanged (``screen``: one call per
       float32 input, at most SEPARATE_INPUTS, stopping at the first that does)."""
    measured = []
    for drop, name in FORMATS:
        hits, counted = short_outputs(out, truth, drop)
        share = hits / counted if counted else None
        measured.append({"test": "bits", "format": name, "share": share, "counted": counted})
        if counted >= BITS_MIN and hits >= BITS_SHARE * counted:
            return (f"{hits:,} of {counted:,} outputs have the low {drop} mantissa bits all clear, as an "
                    f"{name} value does (the float64 truth's have them set): stored in fewer bits"), measured
    if n_float_outputs(out) < INVARIANT_MOVED:
        measured.append({"test": "inputs", "note": f"fewer than {INVARIANT_MOVED} outputs: moves not compared"})
        return None, measured
    which = float_inputs(inputs)
    several = len(which) > 1
    if not suspect:
        which = screen(out, inputs, which, run, measured)
    for drop, nearest in ROUNDINGS:
        name = dict(FORMATS)[drop].split(" ")[0]
        how = "to nearest" if nearest else "toward zero"
        for i in which:
            rounded, mirror, changed = rounded_and_mirror(inputs, i, drop, nearest)
            row = {"test": "inputs", "format": name, "how": how, "input": i, "ratio": None, "moved": 0}
            measured.append(row)
            if not changed:
                row["note"] = "already in this format"
                continue
            ratio, moved = moves(out, run(rounded), run(mirror))
            row["ratio"], row["moved"] = ratio, moved
            if ratio is None or moved < INVARIANT_MOVED or ratio > INVARIANT_MAX:
                continue
            if ref_run is not None and ref_out is not None:
                rratio, _rmoved = moves(ref_out, ref_run(rounded), ref_run(mirror))
                row["reference_ratio"] = rratio
                if rratio is None or rratio <= INVARIANT_MAX:
                    row["note"] = "the reference does not move either: the task rounds it"
                    continue
            what = f"input {i + 1}" if several else "its input"
            return (f"on {what} rounded to {name} ({how}) its output moves {ratio:.2g}x as much as on the "
                    f"same move the other way ({moved:,} outputs move there; the reference moves both ways): "
                    f"it rounds it to {name} itself"), measured
    return None, measured


def measured_words(measured):
    """One line of what ``fewer_bits`` measured."""
    parts = []
    for m in measured:
        if m["test"] == "bits" and m.get("share") is not None:
            parts.append(f"{m['format'].split(' ')[0]}-short outputs {m['share']:.2%}")
        elif m["test"] == "inputs" and m.get("ratio") is not None:
            parts.append(f"move on inputs rounded to {m['format']} {m['how']}: {m['ratio']:.2f}x the mirror's")
    return "; ".join(parts)


def judge_precision(err_kernel, err_ref, scale):
    """(suspect, ratio): the kernel's error against float64 vs the float32 reference's own. A suspect
    is only a suspect: float32 summed in another order (in sequence over a long K) reaches 100x
    the reference's error on a real kernel; ``fewer_bits`` says whether it is fewer bits."""
    base = max(err_ref, 1e-7 * scale)  # one float32 ulp or so at the largest output: never below
    ratio = err_kernel / base if base > 0 else (float("inf") if err_kernel > 0 else 0.0)
    return err_kernel > REDUCED_FACTOR * base, ratio


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
    suspect, ratio = judge_precision(err_k, err_r, scale)
    detail = (f"max error vs the float64 reference {err_k:.2e}, the float32 reference's own {err_r:.2e} "
              f"(largest |output| {scale:.3g})")
    evidence, measured = fewer_bits(out.decoded(), to_float32(ref64), inputs.decoded(),
                                     lambda x: _forward(ctx, ctx.candidate, x, "p-prec-k", "the kernel"),
                                     suspect, ref_run=lambda x: _forward(ctx, ctx.reference, x, "p-prec-r",
                                                                         "the reference"),
                                     ref_out=ref32.decoded())
    seen = measured_words(measured)
    if evidence:
        ctx.add_check("reduced_precision", False,
                      f"reduced precision: {evidence}; its error vs float64 is {err_k:.2e}, {ratio:,.1f}x the "
                      f"float32 reference's own ({err_r:.2e}; largest |output| {scale:.3g})")
        ctx.result["checks"][-1]["evidence"] = f"{evidence[:200]}; error {err_k:.3g} vs float64, float32 reference {err_r:.3g}"
    elif suspect:
        ctx.add_check("reduced_precision", True,
                      f"its error vs float64 ({err_k:.2e}) is {ratio:,.0f}x the float32 reference's own ({err_r:.2e}), "
                      "yet it keeps every float32 bit: its outputs are not short of bits and it moves with its "
                      "inputs' low bits as a float32 computation does (float32 summed in another order, not "
                      f"fewer bits){'; ' + seen if seen else ''}")
    else:
        ctx.add_check("reduced_precision", True, detail)


def _forward(ctx, worker, value, slot, what):
    """``worker``'s output on the input tree ``value`` (made here), in slot ``slot`` (replaced each
    call; the probe's slots are dropped after it): decoded, the judge's hold on it let go at once
    (the tensors keep their own mapping while they are used)."""
    from .. import shm
    from ..errors import StageFailure

    fds = []
    try:
        enc = shm.encode_value(value, fds)
    except BaseException:
        shm.close_fds(fds)
        raise
    held = ctx.hold(enc, fds)
    try:
        v, f = held.send_args()
        args = {"slot": slot, "inputs": v, "stage": "checks", "trial": getattr(ctx.judge, "cur_trial", None)}
        ov, ofd = worker.call("forward", args, f)
        if not isinstance(ov, dict) or "outputs" not in ov:
            raise StageFailure("checks", "protocol_error", f"{what}'s forward reply has no outputs", fatal=True)
        res = ctx.hold(ov["outputs"], ofd)
        try:
            return res.decoded()
        finally:
            ctx.judge.release(res)
    finally:
        ctx.judge.release(held)
