"""The trace domain: model, readers, segmentation, kernel versions, sanity flags.

Imports nothing from Textual and nothing from torch.

    from ktui.trace import load
    run = load("traces/popcorn_l1_p27_grok-4.3.jsonl")
"""

from ktui.trace.model import (  # noqa: F401
    Actor,
    Event,
    Flag,
    KernelUse,
    KernelVersion,
    Metric,
    Metrics,
    Problem,
    Run,
    Terminal,
    ToolCall,
    ToolResult,
    TraceProblem,
    Turn,
)


def load(path, **kw):
    """Read a trace file into a :class:`Run` (never raises on bad input data)."""
    from ktui.trace.reader import load as _load

    return _load(path, **kw)
