"""The process Nsight Compute profiles: ``ncu ... python -m ktui.repro.profile.target``.

It speaks the repro worker's protocol (one JSON request on stdin, JSON events on the real
stdout, see :mod:`ktui.repro.worker`) and runs the harness pipeline (build, reference,
correctness) on the request's device. Once correctness passed it profiles ONE forward of the
requested side (``"profile": {"side": "kernel" | "reference", "warmup": 3}``):

    warm-up forwards (not profiled) -> synchronize -> cudaProfilerStart -> one forward
    (inside the NVTX range ``ktui/profile/<side>``) -> synchronize -> cudaProfilerStop

ncu runs with ``--profile-from-start off``, so only that forward's launches are counted. The
rest of the pipeline is cut to its cheapest (one timed trial, no memory / launches / checks
stages): its kernels run outside the profiled range. Needs a CUDA device: on a CPU it fails
at startup with one line.

Imports torch only inside the harness's functions (the harness itself is self-contained).
"""

from __future__ import annotations

import json
import os
import sys


def _profile_forward(pipeline, fn, inputs, side, warmup):
    import torch

    from ktui.repro import harness as H

    dev = pipeline.device
    pipeline.stage("profile")
    with torch.no_grad():
        for i in range(1, warmup + 1):
            pipeline.trial("profile", i, warmup + 1, what="warm-up")
            H.guarded("profile", fn, *inputs, what=side)
            torch.cuda.synchronize(dev)
        pipeline.trial("profile", warmup + 1, warmup + 1, what="profiled forward")
        torch.cuda.synchronize(dev)
        torch.cuda.profiler.start()
        try:
            torch.cuda.nvtx.range_push(f"ktui/profile/{side}")
            try:
                H.guarded("profile", fn, *inputs, what=side)
                torch.cuda.synchronize(dev)
            finally:
                torch.cuda.nvtx.range_pop()
        finally:
            torch.cuda.profiler.stop()
    return {"side": side, "warmup": warmup, "forwards_profiled": 1}


def _pipeline_class():
    from ktui.repro import harness as H

    class ProfilePipeline(H.Pipeline):
        """The harness pipeline with a profiled forward right after a passing correctness stage."""

        def _correctness(self, rmod, model, model_new, seed):
            corr = super()._correctness(rmod, model, model_new, seed)
            if not corr.get("passed"):
                return corr
            prof = self.req.get("profile") or {}
            side = prof.get("side", "kernel")
            fn = model_new if side == "kernel" else model
            H.set_seed(seed)
            inputs = H.to_device(H.guarded("profile", rmod.get_inputs, what="reference"), self.device)
            self.result["profile"] = _profile_forward(self, fn, inputs, side, int(prof.get("warmup", 3)))
            return corr

    return ProfilePipeline


def run_profile_request(request, emit=None, work_dir=None):
    """Run one profile request (always returns a result dict)."""
    from ktui.repro import harness as H

    req = dict(request)
    # what runs after the profiled forward is not measured: keep it short
    req.update({"trials": 1, "warmup": 0, "measure_memory": False, "measure_launches": False, "checks": False})
    dev = req.get("device")
    if dev == "cpu":
        return {"status": "failed", "failure": {"stage": "startup", "kind": "environment",
                                                "message": "Nsight Compute profiles CUDA kernels: device is cpu",
                                                "trial": None, "fatal": True}}
    pipe = _pipeline_class()(req, emit=emit, work_dir=work_dir)
    original = pipe._run

    def _run():
        import torch

        if not torch.cuda.is_available():
            raise H.StageFailure("startup", "environment", "no CUDA GPU here: nothing for Nsight Compute to profile",
                                 fatal=True)
        return original()

    pipe._run = _run
    return pipe.run()


def main() -> None:
    from ktui.repro.worker import _protocol_stream

    proto = _protocol_stream()

    def emit(ev: dict) -> None:
        try:
            proto.write(json.dumps(ev, default=str, allow_nan=False) + "\n")
        except ValueError:
            proto.write(json.dumps(json.loads(json.dumps(ev, default=str)), default=str) + "\n")
        proto.flush()

    emit({"event": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    line = sys.stdin.readline()
    code = 0
    try:
        req = json.loads(line)
    except ValueError as exc:
        emit({"event": "result", "status": "failed",
              "failure": {"stage": "startup", "kind": "worker_error", "message": f"bad request: {exc}",
                          "trial": None, "fatal": True}})
        code = 2
    else:
        result = run_profile_request(req, emit=emit, work_dir=req.get("work_dir") or os.getcwd())
        emit({"event": "result", **result})
    try:
        proto.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
