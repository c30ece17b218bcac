"""Three outcomes, never two: a result is *judged* (the kernel passed or failed, with evidence),
*not judged here* (this machine could not judge it: no GPU, no reference, no toolchain, ktui's
own time budget ran out) or a *harness error* (the judge's side broke). Only judged results count
in pass rates, charts and "claims that do not hold"; the others are counted beside them and say
how to get the kernel judged.

:func:`unjudged` is the one place that decides it, for the verdict (:mod:`.judges`), the verify
report, the runs charts (:mod:`ktui.repro.reproduced`) and the cache (a result that says nothing
about the kernel is never cached as its failure). No torch, no Rich.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ktui.engine import claims
from ktui.engine.claims import OOM_OTHERS_SHARE, gpu_memory_held_by_others  # noqa: F401 - re-exported
from ktui.engine.defaults import FILE_SIZE_LIMIT_BYTES
from ktui.repro.judging.model import CANCELLED, HARNESS_ERROR, JUDGE_SIDE, NOT_JUDGED

#: why a result was not judged, in words, and how to get it judged
NO_GPU, NO_REFERENCE, NO_TOOLCHAIN, BUDGET, NO_CODE = "no GPU", "no reference", "no toolchain", "budget", "no code"
SIZE = "size limit"
GPU_MEMORY = "GPU memory"
HOST_MEMORY = "host memory"

_HOW = {
    NO_GPU: "run it on a machine with a CUDA GPU (ktui repro TRACE --device cuda, or ktui verify there)",
    NO_REFERENCE: "give the problem's reference: --reference FILE or --tasks DIR",
    NO_TOOLCHAIN: "install the toolchain it needs (nvcc / CUDA_HOME, a C++ compiler, triton) or run it where it exists",
    BUDGET: "run it again with a larger --timeout / --compile-timeout, or on a less loaded machine",
    NO_CODE: "the trace does not hold this version's code: nothing to run",
    GPU_MEMORY: ("run it again on an idle GPU, or with one kernel on the GPU at a time (ktui verify --no-pipeline, "
                 "--gpus with one slot)"),
    HOST_MEMORY: ("raise the workers' host-memory limit (KTUI_WORKER_MEMORY_GB=N, capped at three quarters of the "
                  "host's memory) and run it again on a machine with enough memory, or judge it at a smaller size "
                  "(a copy of the reference with smaller get_inputs, --reference FILE)"),
    SIZE: (f"its inputs or outputs are larger than a value the sandbox may pass ({FILE_SIZE_LIMIT_BYTES >> 30} GiB "
           "each): judge it at a smaller size (a copy of the reference with smaller get_inputs, --reference FILE)"),
}
#: a value the sandbox passes (a memfd) went over the per-file limit: the problem's size, not the kernel
_TOO_LARGE = re.compile(r"\[Errno 27\]|File too large|EFBIG")
#: failure kinds the judge gives what the kernel's own code raised: their message is the kernel's words, so
#: ktui's words for a problem too large to pass (above) are not taken from them (a wrong kernel raising
#: OSError(27, "File too large") was "not judged here")
_KERNEL_KINDS = {"runtime_error", "import_error", "compile_error", "cuda_error", "oom", "exit", "no_model"}
#: the reference's worker went over ktui's host-memory limit (the engine's words, workers.py): the problem's
#: size against ktui's limit, not a broken judge
_REFERENCE_OVER_LIMIT = re.compile(r"^the reference used [\d.]+ GiB of host memory \(limit [\d.]+ GiB")
#: who wrote a failure's message (the judge sets it, ktui.engine.pipeline): "kernel" once the kernel's code
#: ran in the candidate's worker: its words are a claim, read only through what the judge itself checked
#: (ktui.engine.claims); "reference" (the problem's own code: its words read as before), "judge"
KERNEL_WORDS = "kernel"


@dataclass(frozen=True, slots=True)
class Unjudged:
    verdict: str  # NOT_JUDGED | HARNESS_ERROR | CANCELLED
    why: str  # NO_GPU | NO_REFERENCE | NO_TOOLCHAIN | BUDGET | NO_CODE | SIZE | GPU_MEMORY | HOST_MEMORY | "judge" | "cancelled"
    message: str  # what happened, one line
    how: str  # how to get it judged

    @property
    def reason(self) -> str:
        if self.verdict == HARNESS_ERROR:
            return f"harness error (the judge's side broke, not the kernel): {self.message}"
        if self.verdict == CANCELLED:
            return self.message or "cancelled"
        return f"not judged here ({self.why}): {self.message}" + (f"; to judge it, {self.how}" if self.how else "")


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def has_gpu(result: dict[str, Any]) -> bool | None:
    """Whether the machine that produced ``result`` had a GPU (None: the result does not say)."""
    env = _dict(result.get("environment"))
    if not env:
        return None
    if env.get("gpu"):
        return True
    dev = str(env.get("device") or "")
    if not dev:
        return None
    return dev.startswith(("cuda", "hip"))


def unjudged(result: Any) -> Unjudged | None:
    """Why ``result`` says nothing about the kernel, or None when it is a judgement (completed,
    or failed because of the kernel itself)."""
    if not isinstance(result, dict):
        return None
    status = result.get("status")
    f = _dict(result.get("failure"))
    kind = str(f.get("kind") or "")
    msg = " ".join(str(f.get("message") or "").split())[:300]
    stage = str(f.get("stage") or "")
    if status == "cancelled" or kind == "cancelled":
        return Unjudged(CANCELLED, "cancelled", msg or "cancelled", "")
    if status == "completed" or not f:
        return None
    words = f.get("words")
    if words == KERNEL_WORDS:
        # the message is the kernel's words (its code ran in the worker): ktui's and torch's wordings in
        # it are claims; only what the judge itself confirmed (ktui.engine.claims.check) says the machine
        # could not judge it
        checked = _dict(f.get("checked"))
        why = checked.get("why")
        if kind not in JUDGE_SIDE and why in (NO_GPU, NO_TOOLCHAIN, GPU_MEMORY):
            return Unjudged(NOT_JUDGED, str(why), f"{msg} (checked by the judge: {checked.get('checked')})"[:400],
                            _HOW[str(why)])
    else:
        un = _judge_words(kind, msg, stage, f)
        if un is not None:
            return un
    if kind in JUDGE_SIDE:
        return Unjudged(HARNESS_ERROR, "judge", msg or kind, "run it again (--fresh); if it repeats, report it")
    if kind == "no_reference":
        return Unjudged(NOT_JUDGED, NO_REFERENCE, msg or "no reference for this problem", _HOW[NO_REFERENCE])
    if kind == "no_code":
        return Unjudged(NOT_JUDGED, NO_CODE, msg or "no code", _HOW[NO_CODE])
    if kind == "timeout":
        where = f" during {stage}" if stage else ""
        return Unjudged(NOT_JUDGED, BUDGET, f"ktui's time budget ran out{where} ({msg})" if msg else
                        f"ktui's time budget ran out{where}", _HOW[BUDGET])
    if kind in ("environment", "unsupported"):
        why = NO_GPU if (claims.NEEDS_GPU.search(msg) or "cuda" in msg.lower() or "gpu" in msg.lower()) else NO_TOOLCHAIN
        return Unjudged(NOT_JUDGED, why, msg or kind, _HOW[why])
    if words == KERNEL_WORDS:
        return None
    return _legacy_words(result, msg, stage)


def _judge_words(kind: str, msg: str, stage: str, f: dict[str, Any]) -> Unjudged | None:
    """The rules on ktui's own words (the judge's messages: a limit, a file too large to pass)."""
    if kind not in _KERNEL_KINDS and _TOO_LARGE.search(msg):
        return Unjudged(NOT_JUDGED, SIZE, f"a tensor of the problem is larger than the sandbox passes ({msg})",
                        _HOW[SIZE])
    if kind == "oom" or "out of memory" in msg.lower():
        others = gpu_memory_held_by_others(str(f.get("message") or ""))
        if others is not None:
            return Unjudged(NOT_JUDGED, GPU_MEMORY, f"{others} ({msg[:160]})", _HOW[GPU_MEMORY])
    if kind == "reference_error" and _REFERENCE_OVER_LIMIT.match(msg):
        return Unjudged(NOT_JUDGED, HOST_MEMORY, f"the problem's reference needs more host memory than ktui's workers "
                        f"may use ({msg})", _HOW[HOST_MEMORY])
    return None


def _legacy_words(result: dict[str, Any], msg: str, stage: str) -> Unjudged | None:
    """A result with no word of who wrote its message (before the judge said: cached results of
    earlier versions, the judge's own words): the message's wordings, as they were read."""
    # a build or run that failed because this machine has no GPU (a CUDA / Triton kernel on the CPU)
    gpu = has_gpu(result)
    if gpu is not True and claims.NEEDS_GPU.search(msg):
        return Unjudged(NOT_JUDGED, NO_GPU, msg, _HOW[NO_GPU])
    if claims.TRITON_STUB.search(msg):
        return Unjudged(NOT_JUDGED, NO_TOOLCHAIN, f"Triton's own launcher did not compile here ({msg})",
                        _HOW[NO_TOOLCHAIN])
    tv = claims.TOOLCHAIN_VERSION.search(msg)
    if tv is not None:
        what = tv.group(1) or f"{tv.group(2)} in {tv.group(3)}"
        pkg = (tv.group(1) or tv.group(3)).split(".")[0]
        return Unjudged(NOT_JUDGED, NO_TOOLCHAIN, f"this machine's {pkg} has no {what}: the "
                        f"kernel was written for another version of it ({msg})",
                        "run it with the Triton / torch version the run used (the trace's environment, where it "
                        "says), or where that version is installed")
    if stage in ("startup", "build") and (claims.NO_COMPILER.search(msg) or claims.NO_CUDA_TOOLKIT.search(msg)):
        return Unjudged(NOT_JUDGED, NO_TOOLCHAIN, msg, _HOW[NO_TOOLCHAIN])
    return None
