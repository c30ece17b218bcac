"""Host work named: a forward that copies its inputs (or its output) to the host, computes there
and copies back is "computes on the host", however its time was recorded. The candidate worker
runs one forward under a ``TorchFunctionMode`` that records every device-to-host transfer made
from Python (``.cpu()``, ``.to("cpu")``, ``.numpy()``, ``.tolist()``, ``copy_`` into a CPU tensor)
with its size; the judge compares the bytes moved with the inputs' and outputs' own. CUDA only
(on the CPU every tensor is already on the host).
"""

from __future__ import annotations

from ..words import count
from . import judge_probe, worker_probe

HOST_SEED = 7919 + 330
#: host-bound when the tensors copied to the host in one forward hold at least this share of the
#: bytes of its inputs and outputs (a scalar .item() or a small index list is not computing there)
HOST_SHARE = 0.25
MIN_HOST_BYTES = 64 << 10


def _nbytes(t):
    try:
        return int(t.numel()) * int(t.element_size())
    except Exception:  # noqa: BLE001 - not a plain tensor
        return 0


@worker_probe("host_copies")
def host_copies(wctx, args, fds, out_fds):
    """One forward on slot ``args['slot']``; every device-to-host transfer of a tensor, by kind and bytes."""
    import torch
    from torch.overrides import TorchFunctionMode

    from ..errors import guarded

    seen = []

    def to_host(func, a, kw):
        name = getattr(func, "__name__", "")
        self_t = a[0] if a and isinstance(a[0], torch.Tensor) else None
        if self_t is None or self_t.device.type == "cpu" and wctx.device is not None and wctx.device.type != "cpu":
            return None
        if name in ("cpu", "numpy", "tolist"):
            return name
        if name == "to":
            dev = kw.get("device", a[1] if len(a) > 1 else None)
            if isinstance(dev, (str, torch.device)) and torch.device(dev).type == "cpu":
                return "to(cpu)"
        if name == "copy_" and len(a) > 1 and isinstance(a[1], torch.Tensor) and a[0].device.type == "cpu" \
                and a[1].device.type != "cpu":
            return "copy_ to a host tensor"
        return None

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, a=(), kw=None):
            kw = kw or {}
            try:
                kind = to_host(func, a, kw)
            except Exception:  # noqa: BLE001 - never let the watch break the kernel's call
                kind = None
            if kind is not None:
                src = a[1] if kind.startswith("copy_") else a[0]
                seen.append((kind, _nbytes(src)))
            return func(*a, **kw)

    inputs = wctx.slots[str(args["slot"])]
    with torch.no_grad(), Watch():
        out = guarded("checks", wctx.model, *inputs, what="kernel")
    if wctx.device is not None and wctx.device.type == "cuda":
        torch.cuda.synchronize(wctx.device)
    from ..compare import flatten

    io = sum(_nbytes(t) for t in flatten(inputs) if isinstance(t, torch.Tensor))
    io += sum(_nbytes(t) for t in flatten(out) if isinstance(t, torch.Tensor))
    kinds = sorted({k for k, _ in seen})
    return {"findings": [], "data": {"copies": len(seen), "bytes": int(sum(b for _, b in seen)), "io_bytes": int(io),
                                     "kinds": kinds[:8]}}


def judge_copies(data, on_gpu):
    """(ok, detail) from the worker's reply; ok None when it does not apply."""
    if not on_gpu:
        return None, "needs a GPU (on the CPU every tensor is on the host)"
    n, moved, io = data.get("copies"), data.get("bytes"), data.get("io_bytes")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (n, moved, io)):
        return None, "the worker's count is not readable"
    kinds = ", ".join(str(k)[:24] for k in (data.get("kinds") or [])[:4] if isinstance(k, str))
    if moved >= MIN_HOST_BYTES and io and moved >= HOST_SHARE * io:
        return False, (f"computes on the host: one forward copies {moved / 2**20:.2f} MiB to the host ({count(n, 'transfer')}"
                       f": {kinds}), {moved / io:.0%} of its inputs and outputs")
    return True, f"{count(n, 'device-to-host transfer')} in a forward, {moved} bytes" if n else "no device-to-host transfer"


@judge_probe("host_copies", order=94)
def host_copies_check(ctx):
    on_gpu = str(ctx.result.get("device") or "").startswith("cuda")
    if not on_gpu:
        ctx.add_check("host_copies", None, "needs a GPU (on the CPU every tensor is on the host)")
        return
    ctx.trial(1, 1, "host_copies")
    ctx.candidate_inputs(int(ctx.input_seed) + HOST_SEED, "p-host", outputs=False)
    data, _ = ctx.candidate.call("probe", {"name": "host_copies", "args": {"slot": "p-host"}})
    d = data.get("data") if isinstance(data, dict) else None
    ok, detail = judge_copies(d if isinstance(d, dict) else {}, on_gpu)
    ctx.add_check("host_copies", ok, detail)
