"""Terminal styles of the view model's roles, for code that still wants them by status/outcome name.

The formatting functions live in :mod:`ktui.view.fmt` (one definition); this module only adds
the Rich style strings of statuses and outcomes (from :mod:`ktui.view.roles`).
"""

from __future__ import annotations

from ktui.view.fmt import iso, metric_value, num, ratio, secs, us  # noqa: F401
from ktui.view.roles import ROLE_STYLES, STATUS_ICON  # noqa: F401

STATUS_STYLE = {k[len("status."):]: v for k, v in ROLE_STYLES.items() if k.startswith("status.")}
OUTCOME_STYLE = {k[len("outcome."):]: v for k, v in ROLE_STYLES.items() if k.startswith("outcome.")}
from ktui.view.fmt import tokens_label, turn_timing_label  # noqa: E402,F401


def turns_label(run) -> str:
    from ktui.view.fmt import turns_label as _t

    return _t(len(run.turns), run.max_turns)


def wall_label(run) -> str:
    from ktui.view.fmt import wall_label as _w

    return _w(run.variant, run.wall_ms)
