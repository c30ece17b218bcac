# ---- ktui repro harness: a worker's input slots (made, received, refilled, dropped) ------------
# Mixed into roles.Server. MIT license, part of ktui.
import re

from . import shm
from .compare import make_inputs_on, to_device
from .errors import StageFailure, guarded

# what torch says when code asks for a CUDA tensor on a machine without one
_CUDA_MISSING = re.compile(r"Torch not compiled with CUDA|no CUDA GPUs are available|Found no NVIDIA driver|"
                           r"CUDA driver initialization failed|invalid device ordinal|CUDA unavailable", re.I)


class SlotOps:
    """The worker ops on its input slots: ``self.slots`` maps a slot name to an input list (on
    the worker's device). Needs the Server's ``_dev``, ``_value``, ``_sync``, ``_truth_call``,
    ``_outputs`` and ``module``."""

    def op_make_inputs(self, args, fds, out):
        dev = self._dev()
        try:
            made = make_inputs_on(dev, int(args["seed"]), self.module.get_inputs, "correctness", guarded)
        except StageFailure as f:  # inputs made on a GPU this machine lacks: not tested here
            if dev.type == "cpu" and _CUDA_MISSING.search(str(f.message)):
                raise StageFailure("reference", "unsupported",
                                   "the reference's get_inputs creates its tensors on a CUDA GPU (device is cpu)"
                                   ) from None
            raise
        inputs = to_device(made, dev)  # tensors get_inputs made on the GPU itself stay there
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self.slots[str(args["slot"])] = inputs
        enc = shm.encode_value(inputs, out)
        fwd = None
        if args.get("forward"):  # the reference's output on them, in the same round trip
            outv = self._truth_call(str(args["slot"]), "correctness", args.get("trial"))
            fwd = self._outputs(outv, out)
        return {"inputs": enc, "forward": fwd}

    def op_drop(self, args, fds, out):
        """Let go of input slots the judge is done with: named ones, or every slot whose name
        starts with ``prefix`` (a probe's). Each slot holds a whole input set on the device; a
        sweep of real KernelBench sizes (1 GB an input set) ran out of GPU memory with every
        trial's and every probe's slot kept."""
        names = [str(x) for x in (args.get("slots") or [])]
        prefix = args.get("prefix")
        if isinstance(prefix, str) and prefix:
            names += [k for k in self.slots if k.startswith(prefix)]
        n = 0
        for k in set(names):
            if self.slots.pop(k, None) is not None:
                n += 1
        return {"dropped": n}

    def op_put_inputs(self, args, fds, out):
        v = self._value(args["inputs"], fds)
        self.slots[str(args["slot"])] = list(v) if isinstance(v, (list, tuple)) else [v]
        return {"slot": 0}

    def op_refill(self, args, fds, out):
        """New values into the slot's existing tensors, in place (same storage, same pointers)."""
        import torch

        new = self._value(args["inputs"], fds)
        old = self.slots[str(args["slot"])]
        with torch.no_grad():
            for a, b in zip(old, new, strict=False):
                if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
                    a.copy_(b)
        self._sync()
        return {"slot": 0}
