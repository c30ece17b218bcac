"""The result documents of the view (:mod:`ktui.view.doc`) as HTML: ``ktui report DIR --verify
FILE`` adds a "Verification" section drawn from the verify report's view
(:func:`ktui.view.verify.verify_view`, read back with
:meth:`~ktui.repro.verify.record.VerifyReport.from_dict`); each run's detail holds its final
kernel's cached reproduction and kept profile (:func:`run_results`: cache lookups only, the
repro cache the CLI, the app and ``ktui verify`` share; "not reproduced yet" otherwise), drawn
from :func:`ktui.view.repro.repro_view` and :func:`ktui.view.profile.profile_view` as data
(:func:`doc_data`) that the page's script writes with ``textContent`` only.

The view's strings are clean already (no escapes, no controls); here they are also HTML-escaped,
once, and styled by role through CSS classes (``r-verdict-reproduced``...): no string from a trace
or a judge is ever written as markup, an attribute or script.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ktui.view.doc import RIGHT, Para, Part, Table
from ktui.view.model import Line

CSS = """
.doc p { margin:.2em 0; white-space:pre-wrap; overflow-wrap:anywhere; }
.doc p.nowrap { white-space:pre; overflow-x:auto; }
.doc table { border-collapse:collapse; margin:.4em 0; }
.doc th, .doc td { padding:.1em .8em .1em 0; text-align:left; vertical-align:top; overflow-wrap:anywhere; }
.doc td.num, .doc th.num { text-align:right; }
.doc td { white-space:normal; } .doc td.nw { white-space:nowrap; }
.r-strong, .r-title, .r-heading { font-weight:600; }
.r-aside, .r-muted, .r-check-none, .r-verdict-not-recorded, .r-verdict-shown-only { color:var(--muted); }
.r-failure, .r-check-failed, .r-finding, .r-verdict-not-reproducible, .r-verdict-correctness-disagrees,
.r-verdict-suspicious { color:#d33; font-weight:600; }
.r-check-ok, .r-verdict-reproduced, .r-verdict-reproduced-fails-the-same-way { color:#2a2; font-weight:600; }
.r-verdict-differs, .r-verdict-not-judged-here, .r-verdict-harness-error, .r-verdict-cancelled { color:#b80; }
.r-verdict-unit-error-suspected, .r-host, .r-callout, .r-callout-head { color:#a3a; }
.r-group { font-weight:600; text-decoration:underline; }
"""

_SLUG = re.compile(r"[^a-z0-9]+")


def role_class(role: str) -> str:
    """A role as a CSS class: ``verdict.reproduced: fails the same way`` -> ``r-verdict-reproduced-fails-the-same-way``."""
    return "r-" + _SLUG.sub("-", role.lower()).strip("-") if role else ""


def _cls(*roles: str) -> str:
    names = " ".join(c for c in (role_class(r) for r in roles) if c)
    return f' class="{names}"' if names else ""


def spans_html(spans: Line) -> str:
    return "".join(f"<span{_cls(s.role)}>{html.escape(s.text)}</span>" if s.role else html.escape(s.text)
                   for s in spans)


def table_html(t: Table) -> str:
    cols = [(i, c) for i, c in enumerate(t.columns)]
    num = {i for i, c in cols if c.justify == RIGHT}
    head = "".join(f'<th{" class=num" if i in num else ""}>{html.escape(c.header)}</th>' for i, c in cols)
    body = []
    for row in t.rows:
        tds = []
        for i, c in cols:
            cell = row[i]
            classes = " ".join(x for x in (role_class(c.role), role_class(cell.role), "num" if i in num else "",
                                           "" if c.wrap else "nw") if x)
            tds.append(f"<td{f' class={chr(34)}{classes}{chr(34)}' if classes else ''}>{spans_html(cell.spans)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    title = f"<caption>{html.escape(t.title)}</caption>" if t.title else ""
    return (f'<div class="tablewrap"><table class="doc-{role_class(t.key)[2:]}">{title}<thead><tr{_cls(t.header_role)}>'
            f'{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def doc_html(parts: tuple[Part, ...]) -> str:
    """A document as HTML (every string escaped here; roles as classes)."""
    out = ['<div class="doc">']
    for p in parts:
        if isinstance(p, Table):
            out.append(table_html(p))
        elif isinstance(p, Para) and p.spans:
            nowrap = " nowrap" if (p.crop or not p.wrap) else ""
            role = role_class(p.role)
            cls = " ".join(x for x in (role, nowrap.strip()) if x)
            out.append(f"<p{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>{spans_html(p.spans)}</p>")
    out.append("</div>")
    return "".join(out)


def verify_section(report: object, source: str = "") -> str:
    """The "Verification" section of ``ktui report`` (a typed ``VerifyReport``)."""
    from ktui.view.text import one_line
    from ktui.view.verify import verify_view

    v = verify_view(report)  # type: ignore[arg-type]
    where = f'<p class="muted">from {html.escape(one_line(source))}</p>' if source else ""
    return f'<section id="verify-section"><h2>Verification</h2><div class="card">{where}{doc_html(v.parts)}</div></section>'


# ---- a run's cached results, as data for the page's script -----------------------------------------
NOT_REPRODUCED = "not reproduced yet (ktui repro TRACE, ktui verify, or r in the app)"
NOT_PROFILED = "not profiled yet (ktui repro TRACE --profile, on a GPU with Nsight Compute)"


def _spans_data(spans: Line) -> list[list[str]]:
    return [[s.text, s.role] for s in spans]


def doc_data(parts: tuple[Part, ...]) -> list[list[Any]]:
    """A document as JSON-able data, what :func:`doc_html` writes, for the page's script:
    ``["p", role, nowrap, spans]`` and ``["t", key, title, header_role, columns, rows]`` (a column
    ``[header, numeric, role, nowrap]``, a row's cell ``[spans, role]``). The strings are the view's, clean."""
    out: list[list[Any]] = []
    for p in parts:
        if isinstance(p, Table):
            cols = [[c.header, c.justify == RIGHT, c.role, not c.wrap] for c in p.columns]
            rows = [[[_spans_data(c.spans), c.role] for c in row] for row in p.rows]
            out.append(["t", p.key, p.title, p.header_role, cols, rows])
        elif isinstance(p, Para) and p.spans:
            out.append(["p", p.role, bool(p.crop or not p.wrap), _spans_data(p.spans)])
    return out


def run_results(run: Any) -> dict[str, Any]:
    """A run's final kernel's newest cached reproduction and kept profile, judged against its own
    reference, as documents (:func:`doc_data`); a note in place of each one the cache lacks.
    Never runs anything; a cache that cannot be read is said, not raised."""
    from ktui.view.text import one_line

    kv = getattr(run, "final_kernel", None)
    if kv is None or not getattr(kv, "code", None):
        return {"kernel": None, "repro": None, "profile": None, "note": "no final kernel to reproduce"}
    out: dict[str, Any] = {"kernel": one_line(kv.label), "repro": None, "profile": None, "note": "",
                           "missing": [NOT_REPRODUCED, NOT_PROFILED]}
    try:
        from ktui.repro.api import latest_report
        from ktui.repro.profile.stored import latest
        from ktui.view.profile import profile_view
        from ktui.view.repro import repro_view

        rep = latest_report(run, kv)
        prof = latest(run, kv)
        out["repro"] = doc_data(repro_view(rep).parts) if rep is not None else None
        out["profile"] = doc_data(profile_view(prof).parts) if prof is not None else None
    except Exception as exc:  # noqa: BLE001 - a broken cache entry must not cost the run its detail
        out["note"] = f"cannot read the repro cache: {one_line(type(exc).__name__)}: {one_line(exc, 200)}"
    return out
