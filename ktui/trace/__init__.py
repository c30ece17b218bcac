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
from ktui.trace.reader import Follower, load, load_bytes  # noqa: F401
