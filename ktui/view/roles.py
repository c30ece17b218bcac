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
# results of re-execution (ktui.view.results): repro, profile, verify
ASIDE = "aside"  # a secondary line: environment, notes, timing
FAILURE = "failure"  # the tail of a kernel's error output
HOST = "host"  # the run is host-bound
GROUP = "group"  # a group heading row of a table
FINDING = "finding"  # an honesty finding's class
CALLOUT = "callout"  # a value the profile's page cannot have
CALLOUT_HEAD = "callout.head"
CHECK_OK, CHECK_FAILED, CHECK_NONE = "check.ok", "check.failed", "check.none"
VERDICT = "verdict"  # verdict_role(name): the verdict of a comparison


def verdict_role(verdict: str) -> str:
    """``verdict.reproduced``, ``verdict.not judged here``...: a verdict's role (its name as is)."""
    return f"{VERDICT}.{verdict}"


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
    ASIDE: "dim",
    FAILURE: "dim red",
    HOST: "magenta",
    GROUP: "bold underline",
    FINDING: "bold red",
    CALLOUT: "magenta",
    CALLOUT_HEAD: "bold magenta",
    CHECK_OK: "green",
    CHECK_FAILED: "bold red",
    CHECK_NONE: "dim",
}

# the verdicts' terminal styles (the names of ktui.repro.judging.names; a verdict not here: bold)
VERDICT_STYLES: dict[str, str] = {
    "reproduced": "bold green", "reproduced: fails the same way": "bold green", "differs": "bold yellow",
    "unit error suspected": "bold magenta", "correctness disagrees": "bold red", "not reproducible": "bold red",
    "suspicious": "bold red reverse", "not recorded": "dim", "shown only": "dim", "cancelled": "yellow",
    "not judged here": "bold yellow", "harness error": "bold yellow",
}
ROLE_STYLES.update({verdict_role(v): st for v, st in VERDICT_STYLES.items()})

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
