"""Small stand-ins the tests share (they defined them again, file by file)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass
class KV:
    """A kernel version as the static findings read it (``ktui.trace.findings.run_findings``): its
    number, code, first turn and, for a version whose code is not in the trace, an attachment."""

    number: int
    code: str
    first_turn: int | None
    attachment: str | None = None


#: a PyTorch reference the judge tests run on the CPU (relu of a 64x64 input)
RELU_REFERENCE = textwrap.dedent("""
    import torch, torch.nn as nn
    class Model(nn.Module):
        def forward(self, x):
            return torch.relu(x)
    def get_inputs():
        return [torch.randn(64, 64)]
    def get_init_inputs():
        return []
""")
