"""Style roles: what the view model says about a piece of text, and one Rich-style string per role.

The view model never names colours; it tags spans and blocks with a role. Renderers map roles
to their own styles: the terminal ones (``ktui show``, the app) use :data:`ROLE_STYLES` (plain
strings in Rich's style syntax: this module imports nothing), the HTML report its CSS classes.
"""

from __future__ import annotations

# identity and structure
TITLE = "title"
HEADING = "heading"
LABEL = "label"  # the key of a key/value pair
VALUE = "value"
STRONG = "strong"
MUTED = "muted"
FAINT = "faint"
ACTOR = "actor"
MODEL = "model"
KERNEL = "kernel"
FINAL = "final"
NOTE = "note"
WARN = "warn"
ERROR = "error"
GOOD = "good"
PROSE = "prose"
REASONING = "reasoning"
MESSAGE = "message"
OUTPUT = "output"
OUTPUT_ERROR = "output.error"
CODE = "code"
CALL = "call"
FOLD = "fold"  # the "… N more lines" line of a folded block


def status_role(status: str) -> str:
    """``status.ok`` / ``status.failed`` / ``status.error`` / ``status.missing`` / ``status.none``."""
    return f"status.{status}"


def outcome_role(outcome: str) -> str:
    return f"outcome.{outcome}"


def severity_role(severity: str) -> str:
    return f"severity.{severity}"


ROLE_STYLES: dict[str, str] = {
    TITLE: "bold",
    HEADING: "bold",
    LABEL: "grey62",
    VALUE: "",
    STRONG: "bold",
    MUTED: "grey62",
    FAINT: "grey50",
    ACTOR: "cyan",
    MODEL: "bold cyan",
    KERNEL: "bold magenta",
    FINAL: "bold magenta",
    NOTE: "grey62",
    WARN: "yellow",
    ERROR: "bold red",
    GOOD: "bold green",
    PROSE: "",
    REASONING: "italic",
    MESSAGE: "",
    OUTPUT: "",
    OUTPUT_ERROR: "bold red",
    CODE: "",
    CALL: "bold cyan",
    FOLD: "grey50 italic",
    "status.ok": "green",
    "status.failed": "red",
    "status.error": "bold red",
    "status.missing": "yellow",
    "status.none": "grey50",
    "outcome.passed": "bold green",
    "outcome.failed": "bold red",
    "outcome.incomplete": "yellow",
    "severity.error": "bold red",
    "severity.warning": "yellow",
    "severity.info": "cyan",
    "diff.added": "green",
    "diff.removed": "red",
}

# the colour of a heading rule, by the role of the heading
RULE_STYLES: dict[str, str] = {
    REASONING: "magenta",
    PROSE: "blue",
    MESSAGE: "blue",
    CALL: "cyan",
    "status.ok": "green",
    "status.failed": "red",
    "status.error": "red",
    "status.missing": "yellow",
    NOTE: "grey50",
    WARN: "yellow",
    ERROR: "red",
    KERNEL: "magenta",
}


def style(role: str) -> str:
    """The terminal style of a role ('' when it has none)."""
    return ROLE_STYLES.get(role, "")


STATUS_ICON = {"ok": "✓", "failed": "✗", "error": "!", "missing": "…", "none": "·"}
STATUS_LABEL = {"ok": "ok", "failed": "failed", "error": "error", "missing": "no result", "none": "no calls"}
OUTCOME_ICON = {"passed": "✓", "failed": "✗", "incomplete": "…"}
