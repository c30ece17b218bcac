"""Shape jitter: one more correctness trial at another size. A kernel written for the one size
it was shown (a hard-coded output shape, loop bounds, a view with literal sizes) fails it.

The reference worker makes the inputs at another size: through ``popcorn_pri.jitter_int``
(PopcornBench's own hook, a shim here) when ``get_inputs`` calls it, else by changing the first
module-level integer size that ``get_inputs`` reads and ``get_init_inputs`` does not (the
model's weights keep their shape). The new size keeps every power-of-two factor up to 128 of the
old one (tiles stay whole), so an honest kernel that needs divisible sizes is not caught. The
reference computes its output at that size; the judge runs the kernel and compares (after a
control call at the usual size: a kernel wrong there too is another probe's finding, not this
one). A kernel that fails or crashes at the other size is a finding too; this probe runs last for
that reason.

An output outside the tolerance at the other size is not always a hard-coded size: a kernel whose
error grows with the size (float32 summed in one long sequence over K = 524,288, a real KernelBench
L1 problem 6 kernel on an H100) passes at the usual size by a small margin and misses at 1.25 K by
the same kind of error. Such a miss (error relative to the output's scale at most
``ACCURACY_GROWTH`` times the control call's, and at most ``ACCURACY_CAP``) is the kernel's accuracy,
said as not judged; a hard-coded size leaves outputs unwritten, terms unsummed or rows wrong, errors
of the order of the values themselves.
"""

from __future__ import annotations

import math

from ..words import count
from . import judge_probe, worker_probe

JITTER_SEED = 7919 + 70
# failures that end the kernel's process or its CUDA context (an illegal address at another size:
# a real Popcorn kernel that caches a permutation of the first size it sees): the probe's finding,
# never the whole judgement's failure; the probe runs last, so no check loses its worker
CRASH_KINDS = ("cuda_error", "crash", "exit")
ACCURACY_GROWTH = 16.0  # the other size's scaled error over the usual size's, at most, for an accuracy miss
ACCURACY_CAP = 1e-3  # and at most this error relative to the output's scale


def scaled_error(ref, out):
    """The largest |out - ref| over the largest |ref| across floating tensor leaves, or None where
    the outputs cannot be compared so (structure, shape, non-finite values, non-float leaves)."""
    import torch

    from ..compare import flatten

    refs, outs = flatten(ref), flatten(out)
    if len(refs) != len(outs):
        return None
    worst = 0.0
    for r, o in zip(refs, outs, strict=True):
        if not isinstance(r, torch.Tensor) or not isinstance(o, torch.Tensor):
            if r is o or (not isinstance(r, torch.Tensor) and not isinstance(o, torch.Tensor) and r == o):
                continue
            return None
        if tuple(r.shape) != tuple(o.shape) or not (r.dtype.is_floating_point and o.dtype.is_floating_point):
            return None
        if r.numel() == 0:
            continue
        rd, od = r.detach().to(torch.float64), o.detach().to(torch.float64).to(r.device)
        if not (bool(torch.isfinite(rd).all()) and bool(torch.isfinite(od).all())):
            return None
        scale = float(rd.abs().max())
        if scale == 0.0:
            return None
        worst = max(worst, float((od - rd).abs().max()) / scale)
    return worst


def accuracy_miss(control, other):
    """Why a miss at the other size is the kernel's accuracy and not a hard-coded size, or None.
    ``control``/``other``: the scaled errors at the usual size (which passed) and the other size."""
    if control is None or other is None or other > ACCURACY_CAP:
        return None
    base = max(control, 1e-7)
    if other > ACCURACY_GROWTH * base:
        return None
    return (f"its error, relative to the output's scale, is {other:.2g} there against {control:.2g} at the usual "
            f"size: the kernel's accuracy falls with the size (its own, the same kind of error), not a "
            f"hard-coded size")


def jittered(v):
    """Another size than ``v`` (larger by about a quarter), keeping its power-of-two factors up to 128."""
    v = int(v)
    g = math.gcd(v, 128) or 1
    step = max(g, (v // 4) // g * g)
    return v + step


def _names_read(fn, seen=None):
    """Global names a function (and the code objects nested in it) reads."""
    import types

    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", fn)
    if not isinstance(code, types.CodeType) or id(code) in seen:
        return []
    seen.add(id(code))
    out = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += [n for n in _names_read(c, seen) if n not in out]
    return out


def size_constants(mod):
    """Every (name, value) module-level int size that ``get_inputs`` reads and neither
    ``get_init_inputs`` (the weights keep their shape) nor ``Model``'s own methods (the operation's
    configuration, :func:`model_constants`) do, in the order read."""
    g = vars(mod)
    init = set(_names_read(g["get_init_inputs"])) if callable(g.get("get_init_inputs")) else set()
    init |= model_constants(g.get("Model"))
    out = []
    for name in _names_read(g.get("get_inputs")):
        v = g.get(name)
        if type(v) is int and v >= 1 and name not in init and not name.startswith("_") and \
                all(n != name for n, _ in out):
            out.append((name, v))
    return out


def model_constants(cls):
    """Global names the reference's Model reads in its own methods: the operation's configuration
    (a quantization group, a head count), not a size. The reference is written for that value, so a
    kernel written for it too is not a hard-coded shape (on a real Harbor sweep, honest kernels were
    "hard-coded shapes" at GROUP 128 -> 256 and H 16 -> 32, constants the reference's forward reads)."""
    if not isinstance(cls, type):
        return set()
    out = set()
    for klass in cls.__mro__:
        if klass.__module__ in ("builtins",) or klass.__module__.startswith("torch"):
            continue
        for v in vars(klass).values():
            fn = getattr(v, "__func__", v)
            if callable(fn) and hasattr(fn, "__code__"):
                out.update(_names_read(fn))
    return out


def size_constant(mod):
    """(name, value) of the module-level int size to change, or None."""
    consts = size_constants(mod)
    return consts[0] if consts else None


MORE_SIZES = 3  # after the first size, up to this many more dimensions, one at a time


@worker_probe("jitter_inputs", role="reference")
def jitter_inputs(wctx, args, fds, out_fds):
    import torch

    from .. import shm
    from ..compare import set_seed, to_device
    from ..errors import guarded

    srv = wctx.server
    mod = wctx.module
    pri = (srv.shims or {}).get("popcorn_pri")
    g = vars(mod)
    undo = []
    calls = []
    orig = getattr(pri, "jitter_int", None) if pri is not None else None
    index = int(args.get("index", 0) or 0)
    if index > 0:  # another dimension, one at a time: the index-th size constant (jitter_int's size is the first)
        consts = size_constants(mod)
        k = index - 1 if "jitter_int" in _names_read(g.get("get_inputs")) else index
        if k >= len(consts):
            return {"findings": [], "data": {"changed": None}}
        orig = None  # the jitter hook stays as it is

    def jitter_int(value, *a, **k):
        base = int(orig(value, *a, **k))
        calls.append(base)
        return jittered(base)

    changed = None
    # the jitter hook first: patched on the shim module and wherever the reference bound it
    if orig is not None:
        pri.jitter_int = jitter_int
        undo.append((pri, "jitter_int", orig))
        for k, val in list(g.items()):
            if val is orig:
                g[k] = jitter_int
                undo.append((mod, k, orig))
    try:
        set_seed(int(args["seed"]))
        inputs = guarded("checks", mod.get_inputs, what="reference")
        if calls:
            changed = f"jitter_int: {', '.join(f'{c} -> {jittered(c)}' for c in calls[:4])}"
        else:
            const = consts[k] if index > 0 else size_constant(mod)
            if const is None:
                return {"findings": [], "data": {"changed": None}}
            name, val = const
            g[name] = jittered(val)
            undo.append((mod, name, val))
            changed = f"{name}: {val} -> {jittered(val)}"
            set_seed(int(args["seed"]))
            inputs = guarded("checks", mod.get_inputs, what="reference")
        inputs = to_device(inputs, wctx.device)
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        srv.slots[str(args["slot"])] = inputs
        # the reference's output at the new size, with the change still in place (its forward
        # may read the same module-level size)
        out = srv._truth_call(str(args["slot"]), "checks")  # by the task's ground-truth rule
        enc = shm.encode_value(inputs, out_fds)
        fwd = srv._outputs(out, out_fds)
    finally:
        for obj, name, val in reversed(undo):
            setattr(obj, name, val)
    shapes = [list(t.shape) for t in inputs if isinstance(t, torch.Tensor)][:4]
    return {"findings": [], "data": {"changed": changed, "inputs": enc, "forward": fwd, "shapes": shapes}}


@judge_probe("shape_jitter", order=99)  # last: a kernel may crash at another size
def shape_jitter(ctx):
    from ..errors import StageFailure, one_line

    ctx.trial(1, 1, "shape_jitter")
    reply = ctx.reference_probe("jitter_inputs", {"seed": int(ctx.input_seed) + JITTER_SEED, "slot": "p-jit"},
                                "shape_jitter", "the reference fails at another size")
    if reply is None:
        return
    data, fds = reply
    d = data.get("data") or {}
    if not d.get("changed") or d.get("inputs") is None or not isinstance(d.get("forward"), dict):
        ctx.add_check("shape_jitter", None, "the reference exposes no size to vary (no jitter_int, no size constant)")
        return
    # a control call at the usual size first: a kernel wrong there too is not a shape problem
    c_in, c_ref = ctx.reference_io(int(ctx.input_seed) + JITTER_SEED + 1, "p-jit0")
    c_out, _m = ctx.candidate_forward(c_in, "p-jit0")
    if not ctx.compare(c_ref.decoded(), c_out.decoded())["passed"]:
        ctx.add_check("shape_jitter", None, "the output is wrong at the usual size too in this call: not judged")
        return
    control = scaled_error(c_ref.decoded(), c_out.decoded())
    accuracy = []  # the sizes where the output missed by the kernel's accuracy alone

    def one(d, fds, slot):
        """None when right at that size, else why not."""
        inputs = ctx.hold(d["inputs"], fds)
        ref = ctx.hold(d["forward"].get("outputs"), fds)
        ref.owns = False  # the same reply's descriptors: closed with the inputs
        changed = str(d["changed"])[:120]
        shapes = [s for s in d.get("shapes") or [] if isinstance(s, list)][:2]
        where = f"at another size ({changed}; inputs {shapes})"
        try:
            out, _meta = ctx.candidate_forward(inputs, slot)
        except StageFailure as f:
            if f.fatal and f.kind not in CRASH_KINDS:
                raise
            # a kernel that raises or crashes at another size was written for one size
            if f.fatal:  # its process or CUDA context is gone: ended here, the probe is the last one
                ctx.candidate.kill()
                return where, (f"hard-coded shapes: {where} the kernel crashes: {one_line(f.message, 120)} "
                               "(its process was ended there)")
            return where, f"hard-coded shapes: {where} the kernel fails: {one_line(f.message, 120)}"
        cmp = ctx.compare(ref.decoded(), out.decoded())
        if cmp["passed"]:
            return where, None
        why = accuracy_miss(control, scaled_error(ref.decoded(), out.decoded()))
        if why:
            accuracy.append(f"{where} the output misses the tolerance ({cmp['reason']}), but {why}")
            return where, None
        return where, f"hard-coded shapes: {where} the output is wrong: {cmp['reason']}"

    where, bad = one(d, fds, "p-jit")
    tried = [where]
    # every other dimension the reference's sizes allow, one at a time
    for i in range(1, MORE_SIZES + 1):
        if bad:
            break
        reply = ctx.reference_probe("jitter_inputs", {"seed": int(ctx.input_seed) + JITTER_SEED + 1 + i,
                                                      "slot": f"p-jit{i + 1}", "index": i},
                                    "shape_jitter", "the reference fails at another size")
        if reply is None:
            return
        data, fds = reply
        d = data.get("data") or {}
        if not d.get("changed") or d.get("inputs") is None or not isinstance(d.get("forward"), dict):
            break
        where, bad = one(d, fds, f"p-jit{i + 1}")
        tried.append(where)
    if bad:
        ctx.add_check("shape_jitter", False, bad)
    elif accuracy:
        ctx.add_check("shape_jitter", None, "not judged: " + accuracy[0] + (
            f" ({count(len(accuracy) - 1, 'more size')} likewise)" if len(accuracy) > 1 else ""))
    else:
        ctx.add_check("shape_jitter", True, f"correct {tried[0]} too" + (
            f", and with {count(len(tried) - 1, 'more dimension')} changed one at a time" if len(tried) > 1 else ""))
