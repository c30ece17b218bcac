"""Stream order: work the kernel runs on a stream it never orders after the caller's.

ktui times a kernel with events on the caller's stream. A kernel that launches its work on a
private stream and does not make that stream wait for the caller's (and the caller's for it) is
timed as if it did nothing, and it races with its own inputs and output (KernelBench's
non-default-stream attack). How the stream was made does not matter here (``torch.cuda.Stream``,
``cudaStreamCreateWithFlags`` in C++, a stream pool, a stream made under another name), nor
whether some unrelated synchronize appears in the source (which talks the static ``side_stream``
check past): this probe looks at the order the work ran in.

The candidate worker overwrites the floating-point inputs with other values (the inputs of
another seed). Then, on the caller's stream only, it queues a GPU sleep followed by the copy of
the real values, and calls forward at once without synchronizing; the output is copied on the
caller's stream right after forward returns. A kernel whose work is ordered after the caller's
stream (it runs on that stream, joins its side stream both ways, or synchronizes) reads the real
values, and its output is final when the caller's stream reads it. A kernel on an unjoined stream
has computed on the stale values (the judge recognises the reference's answer on them) or was
not finished writing.

The judge compares the copy with the reference. The run counts only when the forward returned
to the host before the caller's stream had finished its sleep (measured with events on that
stream, against the host's clock); otherwise it is repeated with a longer sleep, and if the
forward's host side is still slower, the check is "not judged", never a pass.
"""

from __future__ import annotations

from . import judge_probe, worker_probe

STREAM_SEED = 7919 + 130
CYCLES_PER_MS = 2_000_000  # an H200 SM at ~2 GHz; at lower clocks the sleep is only longer
SLEEP_MS = (20.0, 200.0, 1000.0)


def _tensors(v):
    import torch

    from ..compare import flatten

    return [t for t in flatten(v) if isinstance(t, torch.Tensor)]


def late_forward(wctx, inputs, stale, sleep_ms):
    """One forward whose inputs become ready on the caller's stream ``sleep_ms`` late: until
    then they hold the values of ``stale`` (other inputs of the same shapes). Returns (the
    output as copied on the caller's stream, host seconds from the sleep's launch to forward's
    return, the caller stream's milliseconds for the sleep and the copy)."""
    import torch

    from ..errors import guarded
    from ..values import clone as _clone
    from ..values import plain as _plain

    p = wctx.prims
    pairs = [(t, s) for t, s in zip(inputs, stale, strict=False)
             if isinstance(t, torch.Tensor) and isinstance(s, torch.Tensor) and t.is_cuda and t.is_floating_point()
             and t.numel() and s.shape == t.shape and s.dtype == t.dtype]
    late = [t for t, _s in pairs]
    with torch.no_grad():
        with p.stream_ctx(p.stream):
            real = [t.clone() for t in late]
            for t, s in pairs:
                t.copy_(s)
        p.sync_all()
        start, ready = p.event(), p.event()
        with p.stream_ctx(p.stream):
            p.record(start)
            t0 = p.perf()
            p.gpu_sleep(int(sleep_ms * CYCLES_PER_MS))
            for t, r in zip(late, real, strict=True):
                t.copy_(r)
            p.record(ready)
        out = guarded("checks", wctx.model, *inputs, what="kernel")
        host_s = p.perf() - t0
        with p.stream_ctx(p.stream), torch._C.DisableTorchFunctionSubclass():
            snap = _clone(_plain(out))
        p.sync_all()
        gpu_ms = p.ev_elapsed(start, ready)
    return snap, host_s, gpu_ms


@worker_probe("late_inputs")
def late_inputs(wctx, args, fds, out_fds):
    import torch

    from .. import shm
    from ..errors import StageFailure

    dev = wctx.device
    p = wctx.prims
    if dev is None or dev.type != "cuda" or getattr(p, "gpu_sleep", None) is None:
        raise StageFailure("checks", "unsupported", "needs CUDA (a GPU-side delay on the caller's stream)")
    inputs, stale = wctx.slots[str(args["slot"])], wctx.slots[str(args["stale"])]
    outputs, runs = [], []
    for ms in SLEEP_MS:
        snap, host_s, gpu_ms = late_forward(wctx, inputs, stale, ms)
        with torch._C.DisableTorchFunctionSubclass():
            outputs.append(shm.encode_value(snap, out_fds))
        runs.append({"host_ms": round(host_s * 1000.0, 3), "gpu_ms": round(float(gpu_ms), 3), "sleep_ms": ms})
        if host_s * 1000.0 < gpu_ms:
            break  # forward returned while the caller's stream still slept: conclusive
    # the outputs are a value tree (validated when held), the timings plain data beside them
    return {"findings": [], "data": {"outputs": outputs, "runs": runs}}


@judge_probe("stream_order", order=80, device="alone", speed_only=True)  # after the others: it may leave the worker in a racy state
def stream_order(ctx):
    from .. import shm

    if ctx.judge.device_kind != "cuda":
        ctx.add_check("stream_order", None, "needs CUDA")
        return
    ctx.trial(1, 1, "stream_order")
    inputs, ref = ctx.candidate_inputs(int(ctx.input_seed) + STREAM_SEED, "p-stream")
    if not any(t.is_floating_point() and t.numel() for t in _tensors(inputs.decoded())):
        ctx.add_check("stream_order", None, "no floating-point input to make ready late")
        return
    # what the inputs hold until they are ready: other inputs (and the reference's answer on them)
    _stale_in, stale_ref = ctx.candidate_inputs(int(ctx.input_seed) + STREAM_SEED + 1, "p-stream-stale")
    with ctx.alone("stream_order"):  # it times how late forward returns: the device alone
        data, ofd = ctx.candidate.call("probe", {"name": "late_inputs",
                                                 "args": {"slot": "p-stream", "stale": "p-stream-stale"}})
    reply = data.get("data") or {}
    runs, outs = reply.get("runs"), reply.get("outputs")
    held = ctx.hold(outs, ofd)
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs) \
            or not isinstance(held.value, list) or len(held.value) != len(runs):
        ctx.add_check("stream_order", None, "the worker returned no output")
        return

    def how(r):
        return (f"inputs ready {r['gpu_ms']:.1f} ms late on the caller's stream, forward returned after "
                f"{r['host_ms']:.1f} ms")

    for r, out in zip(runs, held.value, strict=True):
        if not isinstance(r.get("host_ms"), (int, float)) or not isinstance(r.get("gpu_ms"), (int, float)):
            ctx.add_check("stream_order", None, "the worker returned no timings")
            return
        got = shm.decode_value(out, held.fds)
        res = ctx.compare(ref.decoded(), got)
        if not res["passed"]:
            what = ("it computed on the values its inputs held before the caller's stream wrote them"
                    if ctx.compare(stale_ref.decoded(), got)["passed"]
                    else "it read its inputs before they were ready or its output before it was finished")
            ctx.add_check("stream_order", False,
                          "work on a stream not ordered after the caller's: with its inputs made ready late on the "
                          f"caller's stream, the output read there right after forward is wrong ({res['reason']}): "
                          f"{what}; work on a stream that is not joined is also outside what the caller's events "
                          "time")
            ctx.result["checks"][-1]["evidence"] = how(r)
            return
    last = runs[-1]
    if last["host_ms"] >= last["gpu_ms"]:
        ctx.add_check("stream_order", None,
                      "not judged: forward did not return before the caller's stream caught up (it waits for that "
                      "stream: a synchronize, .item() or a pageable host-to-device copy), so an unordered read "
                      f"cannot show ({how(last)})")
    else:
        ctx.add_check("stream_order", True,
                      f"its work is ordered after the caller's stream ({how(last)}: output correct)")
