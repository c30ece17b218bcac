"""Terminal styles of statuses and outcomes, by name (from :mod:`ktui.view.roles`).

The formatting functions live in :mod:`ktui.view.fmt` (one definition); ``secs`` and ``us`` are
re-exported here for the widgets that format with them.
"""

from __future__ import annotations

from ktui.view.fmt import secs, us  # noqa: F401
from ktui.view.roles import ROLE_STYLES, STATUS_ICON  # noqa: F401

STATUS_STYLE = {k[len("status."):]: v for k, v in ROLE_STYLES.items() if k.startswith("status.")}
OUTCOME_STYLE = {k[len("outcome."):]: v for k, v in ROLE_STYLES.items() if k.startswith("outcome.")}
