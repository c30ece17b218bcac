"""The findings themselves: the classes (:data:`CLASSES`), the severities, a finding in one
source (:class:`SourceFinding`) and one placed in a run (:class:`Finding`).
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARNING, INFO = "error", "warning", "info"

#: every class a finding can have, with the words the verdict and the tables use for it
CLASSES: dict[str, str] = {
    "no_gpu_code": "no custom GPU code",
    "torch_fallback": "torch computes it",
    "dummy_kernel": "marker kernel",
    "library_call": "library call in the extension",
    "library_behind_marker": "library call behind a marker kernel",
    "build_fallback": "try/except build fallback",
    "eq_override": "__eq__ override",
    "tensor_subclass": "tensor subclass",
    "tensor_method_override": "tensor/comparison method patch",
    "timer_patch": "timer/clock patch",
    "stats_patch": "timing-statistics patch",
    "monkey_patch": "library monkey-patch",
    "threads": "threads or processes",
    "side_stream": "unjoined side stream",
    "ptr_cache": "pointer/fingerprint-keyed cache",
    "result_cache": "stored result returned",
    "weight_precompute": "weights folded once (stale on a parameter change)",
    "call_counting": "call counting",
    "frame_introspection": "caller/frame introspection",
    "profiler_sniffing": "profiler detection",
    "timing_detection": "event/stream queries that detect timing",
    "extension_sniffing": "checks its extension is its own",
    "rng_seed": "random seed read or set",
    "gc_introspection": "gc object walk",
    "ctypes_memory": "raw memory access (ctypes)",
    "input_write": "writes into its inputs",
    "empty_output": "unwritten empty output",
    "input_passthrough": "returns its input",
    "backend_flags": "global precision/backend flag change",
    "precision_downgrade": "reduced precision",
    "triton_tf32_default": "TF32 by Triton's default",
    "hardcoded_shapes": "hard-coded shapes",
    "cuda_graph": "CUDA graph capture/replay",
    "env_file_access": "environment or file access",
    "fake_harness_output": "output imitating the harness",
    "dynamic_code": "dynamic code execution",
    "process_control": "signals, exit or atexit",
}

#: the end of a ``triton_tf32_default`` finding whose file has no narrower type in its Triton code: a
#: 10-bit mantissa measured at run time is then tl.dot's default (the verdict keeps it a fact)
TF32_ONLY = "; its Triton code names no type narrower than float32"

MAX_AST_CHARS = 2_000_000  # bigger sources get the textual checks only
_EVIDENCE_CHARS = 160


@dataclass(frozen=True, slots=True)
class SourceFinding:
    """One finding in one kernel source."""

    code: str  # a key of CLASSES
    severity: str  # "error" | "warning" | "info"
    what: str  # what the code does, one line
    line: int | None = None  # 1-based line in the kernel source
    evidence: str = ""  # that source line, on one line (raw: the view cleans it)

    @property
    def title(self) -> str:
        return CLASSES.get(self.code, self.code)


@dataclass(frozen=True, slots=True)
class Finding:
    """A :class:`SourceFinding` placed in a run: which version has it and where it came from."""

    code: str
    severity: str
    what: str
    kernel: int  # the version it is reported on
    since: int  # the version that introduced it (the first of an unbroken run of versions having it)
    turn: int | None  # the turn where that version first appears
    line: int | None = None
    evidence: str = ""

    @property
    def title(self) -> str:
        return CLASSES.get(self.code, self.code)

    def where(self) -> str:
        bits = []
        if self.line is not None:
            bits.append(f"line {self.line}")
        if self.turn is not None:
            bits.append(f"introduced at turn {self.turn}" + (f" in v{self.since}" if self.since != self.kernel else ""))
        elif self.since != self.kernel:
            bits.append(f"introduced in v{self.since}")
        return ", ".join(bits)


