"""``ktui search PATH PATTERN``: every hit as a line (or a JSON object a line), as found.

The hits stream: each is printed the moment its trace has been searched, and progress (traces
searched of found, hits) goes to stderr on a terminal. A hit is raw trace text
(:mod:`ktui.trace.search`): it is cleaned here, once, with the view's :func:`~ktui.view.text.one_line`
(a line) or :func:`~ktui.view.text.json_text` (``--json``); on a terminal the match is shown in
bold (ktui's own escape codes around cleaned text).
"""

from __future__ import annotations

import sys
import time
from typing import IO

from ktui.trace.search import Hit, Matcher, PatternError, SearchStats, parse_fields, search
from ktui.trace.words import count
from ktui.view.text import json_text, one_line

BOLD, RESET = "\x1b[1;33m", "\x1b[0m"


def hit_line(h: Hit, *, color: bool = False) -> str:
    """``run  turn N  field[ (where)]  excerpt`` on one line, cleaned."""
    turn = f"turn {h.turn}" if h.turn is not None else "seed"
    where = f" ({one_line(h.where)})" if h.where else ""
    before, match, after = one_line(h.before), one_line(h.match), one_line(h.after)
    m = f"{BOLD}{match}{RESET}" if color else match
    return f"{one_line(h.run)}  {turn}  {one_line(h.field)}{where}  {before}{m}{after}"


def hit_json(h: Hit) -> str:
    """A hit as one JSON line (``--json``): every string cleaned, the match's offsets in the cleaned excerpt."""
    before, match, after = one_line(h.before), one_line(h.match), one_line(h.after)
    d = {**h.to_dict(), "excerpt": before + match + after, "match": [len(before), len(before) + len(match)]}
    return json_text(d, indent=None)


def search_command(path: str, pattern: str, *, regex: bool = False, fields: str | None = None,
                   as_json: bool = False, case_sensitive: bool | None = None, max_per_run: int = 50,
                   use_index: bool = True, out: IO[str] | None = None, err: IO[str] | None = None,
                   progress: bool | None = None) -> int:
    """0: hits found, 1: none, 2: a usage problem."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        matcher = Matcher(pattern, regex=regex, case_sensitive=case_sensitive)
        wanted = parse_fields(fields)
    except (PatternError, ValueError) as exc:
        err.write(f"ktui: {one_line(exc)}\n")
        return 2
    live = err.isatty() if progress is None else progress
    color = not as_json and out.isatty()
    st = SearchStats()
    last = [0.0]

    def on_progress(s: SearchStats) -> None:
        now = time.monotonic()
        if live and (s.done or now - last[0] > 0.1):
            last[0] = now
            err.write(f"\r\x1b[Ksearched {s.searched}/{count(s.files, 'trace')} · {count(s.hits, 'hit')} in {count(s.runs_hit, 'run')}")
            err.flush()

    try:
        for h in search(path, matcher, fields=wanted, max_per_run=max_per_run, use_index=use_index, stats=st,
                        on_progress=on_progress):
            if live:
                err.write("\r\x1b[K")
            out.write((hit_json(h) if as_json else hit_line(h, color=color)) + "\n")
            out.flush()
    except KeyboardInterrupt:
        err.write("\nktui: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    if live:
        err.write("\r\x1b[K")
    for s in st.skipped:
        err.write(f"ktui: skipped {one_line(s)}\n")
    more = f" (+{st.more} more past {max_per_run} per run: --max-per-run)" if st.more else ""
    err.write(f"{count(st.hits, 'hit')} in {st.runs_hit} of {count(st.files, 'run')}{more}; {st.parsed} parsed, "
              f"{st.searched - st.parsed} ruled out from their bytes\n")
    return 0 if st.hits else 1
