"""Profiles kept in the repro cache: :func:`ktui.repro.profile.run.profile` (``ktui repro
--profile``, the app's profile panel) stores a completed profile (``run.keep``); :func:`latest`
reads a run's newest one back (``ktui report``), never running anything.

A profile is kept per kernel (sha1), reference (sha1), device kind and ncu settings, signed like a
result (:func:`ktui.repro.cache.store_profile`); what is read back is validated by
:meth:`~ktui.repro.profile.run.ProfileReport.from_dict` (a bad or other-schema entry is absent).
Only a completed profile is kept: an unavailable one (no ncu, no GPU) or a failed one says
nothing the next run could not say again.
"""

from __future__ import annotations

from typing import Any

from ktui.engine import sha1_text
from ktui.repro import cache
from ktui.repro.results import ResultError


def latest(run: Any, kv: Any) -> Any:
    """The newest kept profile of this kernel version judged against the trace's own reference
    (as the app's badge and ``ktui report``'s reproductions: another problem's reference says
    nothing here), as a ``ProfileReport`` with its ``created`` time; None when there is none."""
    from ktui.repro.profile.run import ProfileReport
    from ktui.repro.recorded import find_reference

    ref, _origin = find_reference(run)
    if not ref or not getattr(kv, "sha1", None):
        return None
    for e in cache.profiles_for(kv.sha1, sha1_text(ref)):
        try:
            rep = ProfileReport.from_dict(e["profile"])
        except ResultError:
            continue
        rep.created = str(e.get("created") or "")
        return rep
    return None
