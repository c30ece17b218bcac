"""``ktui search PATH PATTERN``: every hit as a line (or a JSON object a line), as found.

The hits stream: each is printed the moment its trace has been searched, and progress (traces
searched of found, hits) goes to stderr on a terminal. Everything printed from a trace was
sanitized by :mod:`ktui.trace.search`; on a terminal the match is shown in bold (ktui's own
escape codes around already sanitized text).
"""

from __future__ import annotations

import json
import sys
import time
from typing import IO

from ktui.trace.search import Hit, Matcher, PatternError, SearchStats, parse_fields, search

BOLD, RESET = "\x1b[1;33m", "\x1b[0m"


def hit_line(h: Hit, *, color: bool = False) -> str:
    """``run  turn N  field[ (where)]  excerpt`` on one line."""
    turn = f"turn {h.turn}" if h.turn is not None else "seed"
    where = f" ({h.where})" if h.where else ""
    m = f"{BOLD}{h.match}{RESET}" if color else h.match
    return f"{h.run}  {turn}  {h.field}{where}  {h.before}{m}{h.after}"


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
        err.write(f"ktui: {exc}\n")
        return 2
    live = err.isatty() if progress is None else progress
    color = not as_json and out.isatty()
    st = SearchStats()
    last = [0.0]

    def on_progress(s: SearchStats) -> None:
        now = time.monotonic()
        if live and (s.done or now - last[0] > 0.1):
            last[0] = now
            err.write(f"\r\x1b[Ksearched {s.searched}/{s.files} traces · {s.hits} hits in {s.runs_hit} runs")
            err.flush()

    try:
        for h in search(path, matcher, fields=wanted, max_per_run=max_per_run, use_index=use_index, stats=st,
                        on_progress=on_progress):
            if live:
                err.write("\r\x1b[K")
            out.write((json.dumps(h.to_dict(), ensure_ascii=False) if as_json else hit_line(h, color=color)) + "\n")
            out.flush()
    except KeyboardInterrupt:
        err.write("\nktui: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    if live:
        err.write("\r\x1b[K")
    for s in st.skipped:
        err.write(f"ktui: skipped {s}\n")
    more = f" (+{st.more} more past {max_per_run} per run: --max-per-run)" if st.more else ""
    err.write(f"{st.hits} hits in {st.runs_hit} of {st.files} runs{more}; {st.parsed} parsed, "
              f"{st.searched - st.parsed} ruled out from their bytes\n")
    return 0 if st.hits else 1
