"""Unwritten output: a kernel that returns ``torch.empty`` memory it never wrote passes whenever
the allocator hands back a block that happens to hold the answer (KernelBench's result-reuse
attack: the reference's freed output).

Just before a forward, the candidate worker fills freed blocks of the output's size with a
sentinel byte (allocated, filled, released: the allocator's next block of that size is one of
them) and runs the kernel; this is repeated a few times. On the CPU glibc does not always hand
the same block back, so there every heap allocation made during these forwards starts out as
the sentinel (``mallopt(M_PERTURB)``), which does not depend on the allocator's choice of block.
The judge looks at the output bytes it received itself: elements made of nothing but the
sentinel are memory the kernel returned without writing. The worker only
prepares the memory; what is found is found in the judge.
"""

from __future__ import annotations

from . import judge_probe, worker_probe

UNWRITTEN_SEED = 7919 + 90
SENTINEL = 0x5A  # 0x5A5A5A5A is 1.5e16 as a float32: no kernel computes it
BLOCKS = 8  # poisoned blocks per output size
ATTEMPTS = 6
FRACTION = 0.10  # this share of an output's elements holding the sentinel: unwritten
MAX_POISON_BYTES = 1 << 30


M_PERTURB = -6  # glibc mallopt: fill every (non-calloc) allocation with ~value's low byte


def perturb_allocations(on):
    """glibc: every heap allocation starts out holding the sentinel (M_PERTURB with its
    complement), so memory a kernel returns unwritten is the sentinel however the allocator
    picks its blocks. Only for the poisoned forwards; False where it cannot be set."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        return bool(libc.mallopt(M_PERTURB, (~SENTINEL & 0xFF) if on else 0))
    except (OSError, AttributeError):
        return False


def keep_freed_blocks():
    """glibc: freed blocks stay in the heap (no trimming, no mmap for them) so that the next
    allocation of their size reuses one, as the CUDA caching allocator always does. The
    candidate worker is thrown away after the probes; nothing else runs in it afterwards."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD (its maximum on 64-bit)
        return bool(libc.mallopt(-1, 1 << 30)) and bool(libc.mallopt(-3, 1 << 25))
    except (OSError, AttributeError):
        return False  # not glibc: the repeated attempts still often land on a poisoned block


def output_nbytes(ref):
    """The byte sizes of the reference's output tensors (each once): the blocks to prepare."""
    import torch

    from ..compare import flatten

    leaves = [t for t in flatten(ref.decoded()) if isinstance(t, torch.Tensor) and t.numel()]
    return sorted({t.numel() * t.element_size() for t in leaves})


def preparable(nbytes):
    return sum(nbytes) * BLOCKS <= MAX_POISON_BYTES


def poisoned_forwards(wctx, args, inputs, out_fds, attempts):
    """The kernel's outputs of ``attempts`` forwards on prepared memory (``args['nbytes']``: the
    sizes to poison), the allocator tuned on the CPU for the time of them. Returns (encoded
    outputs, whether malloc was tuned, whether allocations were perturbed)."""
    sizes = [int(n) for n in args.get("nbytes") or [] if isinstance(n, int) and n > 0][:16]
    cuda = wctx.device is not None and wctx.device.type == "cuda"
    tuned = keep_freed_blocks() if not cuda else None
    perturbed = perturb_allocations(True) if not cuda else None
    try:
        return poisoned_runs(wctx, inputs, sizes, cuda, out_fds, attempts), tuned, perturbed
    finally:
        if perturbed:
            perturb_allocations(False)


@worker_probe("poisoned_forward")
def poisoned_forward(wctx, args, fds, out_fds):
    outs, tuned, perturbed = poisoned_forwards(wctx, args, wctx.slots[str(args["slot"])], out_fds,
                                               int(args.get("attempts", ATTEMPTS)))
    return {"findings": [], "data": {"outputs": outs, "malloc_tuned": tuned, "malloc_perturbed": perturbed}}


def poisoned_runs(wctx, inputs, sizes, cuda, out_fds, attempts=ATTEMPTS):
    """``attempts`` forwards, each just after freed blocks of ``sizes`` bytes were filled with
    the sentinel; their outputs, encoded. (Also the ghost run's inert pass.)"""
    import torch

    from .. import shm
    from ..errors import guarded
    from ..values import plain as _plain

    outs = []
    for _ in range(int(attempts)):
        blocks = [torch.empty(n, dtype=torch.uint8, device=wctx.device) for n in sizes for _b in range(BLOCKS)]
        for b in blocks:
            b.fill_(SENTINEL)
        if cuda:
            torch.cuda.synchronize(wctx.device)
        del blocks
        with torch.no_grad():
            out = guarded("checks", wctx.model, *inputs, what="kernel")
        if cuda:
            torch.cuda.synchronize(wctx.device)
        with torch._C.DisableTorchFunctionSubclass():
            outs.append(shm.encode_value(_plain(out), out_fds))
        del out
    return outs


def sentinel_fraction(t):
    """Share of the elements of tensor ``t`` whose every byte is the sentinel."""
    import torch

    if not isinstance(t, torch.Tensor) or t.numel() == 0 or t.device.type == "meta":
        return 0.0
    b = t.detach().contiguous().reshape(-1).view(torch.uint8).reshape(t.numel(), t.element_size())
    return float((b == SENTINEL).all(dim=1).to(torch.float64).mean())


@judge_probe("unwritten_output", on_failure=True)
def unwritten_output(ctx):
    from .. import shm
    from ..compare import flatten

    ctx.trial(1, 1, "unwritten_output")
    inputs, ref = ctx.candidate_inputs(int(ctx.input_seed) + UNWRITTEN_SEED, "p-unwritten")
    nbytes = output_nbytes(ref)
    if not nbytes or not preparable(nbytes):
        ctx.add_check("unwritten_output", None, "no output to prepare memory for" if not nbytes
                      else "the outputs are too large to prepare memory for")
        return
    data, ofd = ctx.candidate.call("probe", {"name": "poisoned_forward",
                                             "args": {"slot": "p-unwritten", "nbytes": nbytes}})
    outs = (data.get("data") or {}).get("outputs")
    if not isinstance(outs, list) or not outs:
        ctx.add_check("unwritten_output", None, "the worker returned no outputs")
        return
    held = ctx.hold(outs, ofd)
    worst = 0.0
    for o in held.value:
        for t in flatten(shm.decode_value(o, held.fds)):
            worst = max(worst, sentinel_fraction(t))
    if worst >= FRACTION:
        ctx.add_check("unwritten_output", False,
                      f"unwritten output: {worst:.0%} of an output holds the bytes ktui wrote into freed memory just "
                      "before the call: the kernel returns memory it never wrote (torch.empty...)")
        ctx.result["checks"][-1]["evidence"] = f"{worst:.1%} of the elements are 0x{SENTINEL:02X} bytes"
    else:
        ctx.add_check("unwritten_output", True, f"the output is written by the kernel ({len(outs)} calls on prepared "
                      "memory)")
