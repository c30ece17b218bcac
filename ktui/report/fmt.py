"""Terminal styles of the view model's roles, for code that still wants them by status/outcome name.

The formatting functions live in :mod:`ktui.view.fmt` (one definition); this module only adds
the Rich style strings of statuses and outcomes (from :mod:`ktui.view.roles`).
"""

from __future__ import annotations

from ktui.view.fmt import iso, metric_value, num, ratio, secs, us  # noqa: F401
from ktui.view.roles import ROLE_STYLES, STATUS_ICON  # noqa: F401

STATUS_STYLE = {k[len("status."):]: v for k, v in ROLE_STYLES.items() if k.startswith("status.")}
OUTCOME_STYLE = {k[len("outcome."):]: v for k, v in ROLE_STYLES.items() if k.startswith("outcome.")}
