"""Parse ``ncu --csv --page raw`` output into one record per profiled kernel launch.

The raw page is a CSV table: a header row (``"ID","Process ID",...,"Kernel Name",...,metric
names``), a units row, then one row per launch. ncu may print its own ``==PROF==`` /
``==WARNING==`` lines around it (when the CSV goes to stdout): everything before the header
row is skipped. Values are normalised to base units (seconds, bytes, bytes/s, hertz, %):
ncu scales units by default (``usecond``, ``Mbyte``, ``Gbyte/second``, ``cycle/nsecond``)
unless ``--print-units base``; both are read.

Missing metrics stay missing (``None``): a metric ncu did not collect (unknown on this GPU,
``n/a`` in the table) is never replaced by a guess. Kernel names come from model-written
code: they are kept as text, and sanitised where they are shown (not here).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

#: base-unit factor per ncu unit word (decimal prefixes, as ncu prints them)
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "Ki": 2.0**10, "Mi": 2.0**20,
           "Gi": 2.0**30, "Ti": 2.0**40}
_TIME = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3,
         "s": 1.0}
_UNIT_RE = re.compile(r"^(K|M|G|T|P|Ki|Mi|Gi|Ti)?(byte|cycle|inst|warp|sector|request|thread|block|register|"
                      r"sample|flop)s?$")
HEADER_FIELDS = ("ID", "Kernel Name")
MAX_ROWS = 100_000  # a hostile report cannot make the parser hold more than this many launches


class NcuParseError(ValueError):
    """The text holds no ncu raw-page CSV table."""


@dataclass
class Launch:
    """One profiled kernel launch: its identity and its metrics in base units."""

    id: int
    name: str
    metrics: dict[str, float | str | None] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)  # as ncu printed them
    block: str = ""
    grid: str = ""
    stream: str = ""
    device: str = ""
    nvtx: str = ""

    def num(self, metric: str) -> float | None:
        v = self.metrics.get(metric)
        return v if isinstance(v, float) else None

    def text(self, metric: str) -> str | None:
        v = self.metrics.get(metric)
        return v if isinstance(v, str) else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "block": self.block, "grid": self.grid, "stream": self.stream,
                "device": self.device, "nvtx": self.nvtx, "metrics": dict(self.metrics)}


def unit_factor(unit: str) -> float | None:
    """Base-unit factor of an ncu unit ("usecond" -> 1e-6, "Gbyte/second" -> 1e9, "%" -> 1), or
    None when the unit is unknown (the value is then kept as printed)."""
    u = (unit or "").strip()
    if u in ("", "%", "register/thread", "ratio"):
        return 1.0
    if "/" in u:
        num, den = u.split("/", 1)
        fn = unit_factor(num)
        if den in _TIME:
            fd = _TIME[den]
        else:
            fd = unit_factor(den)
        if fn is None or fd is None or fd == 0:
            return None
        return fn / fd
    if u in _TIME:
        return _TIME[u]
    if u in ("hz", "Hz"):
        return 1.0
    m = re.match(r"^(K|M|G|T)?hz$", u, re.IGNORECASE)
    if m:
        return _PREFIX[(m.group(1) or "").upper()]
    m = _UNIT_RE.match(u)
    if m:
        return _PREFIX[m.group(1) or ""]
    return None


def to_number(text: str) -> float | None:
    """ncu's printed value as a float, or None ("n/a", "", text). Thousands separators go."""
    s = (text or "").strip()
    if not s or s.lower() in ("n/a", "nan", "-", "--"):
        return None
    s2 = s.replace(",", "") if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?", s) else s
    try:
        v = float(s2)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _header_index(rows: list[list[str]]) -> int:
    for i, row in enumerate(rows):
        if len(row) >= 2 and all(h in row for h in HEADER_FIELDS):
            return i
    raise NcuParseError("no ncu CSV table (no header row with \"ID\" and \"Kernel Name\")")


def parse_raw_csv(text: str) -> list[Launch]:
    """Every launch in an ``ncu --csv --page raw`` text, in profiling order."""
    lines = [ln for ln in (text or "").splitlines() if not ln.startswith("==")]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
    except csv.Error as exc:
        raise NcuParseError(f"not a CSV table: {exc}") from None
    h = _header_index(rows)
    header = [c.strip() for c in rows[h]]
    body = rows[h + 1:]
    units_row: list[str] = []
    if body and _looks_like_units(header, body[0]):
        units_row, body = body[0], body[1:]
    col = {name: i for i, name in enumerate(header)}
    meta = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC", "Section Name", "Kernel Time", "Metric Name", "Metric Unit",
            "Metric Value", "Estimated Speedup", "Estimated Speedup Type"}
    metric_cols = [(i, name) for i, name in enumerate(header) if name not in meta and "__" in name]
    nvtx_cols = [i for i, name in enumerate(header) if name.lower().startswith(("thread domain", "nvtx"))]
    out: list[Launch] = []
    for row in body:
        if len(row) < len(header) // 2 or not any(c.strip() for c in row):
            continue
        if len(out) >= MAX_ROWS:
            break

        def cell(name: str, _row: list[str] = row) -> str:
            i = col.get(name)
            return _row[i].strip() if i is not None and i < len(_row) else ""

        ident = to_number(cell("ID"))
        launch = Launch(id=int(ident) if ident is not None else len(out), name=cell("Kernel Name"),
                        block=cell("Block Size"), grid=cell("Grid Size"), stream=cell("Stream"),
                        device=cell("Device"),
                        nvtx=" ".join(row[i].strip() for i in nvtx_cols if i < len(row) and row[i].strip()))
        for i, name in metric_cols:
            raw = row[i].strip() if i < len(row) else ""
            unit = units_row[i].strip() if i < len(units_row) else ""
            launch.units[name] = unit
            n = to_number(raw)
            if n is None:
                launch.metrics[name] = raw if raw and raw.lower() != "n/a" and not _numeric_like(raw) else None
                continue
            f = unit_factor(unit)
            launch.metrics[name] = n * f if f is not None else n
        out.append(launch)
    return out


def _numeric_like(s: str) -> bool:
    return bool(re.fullmatch(r"[+-]?[\d.,eE+-]+", s))


def _looks_like_units(header: list[str], row: list[str]) -> bool:
    """The row after the header is the units row: no ID, and unit words (or blanks)."""
    try:
        i = header.index("ID")
    except ValueError:
        return False
    if i < len(row) and row[i].strip():
        return False
    return True


_PROF_START = "==PROF== Profiling \""
# the tail of a launch's line: `" - ID[ (K/N)]: <progress> - P passes`; the name before it may hold
# anything (templates, commas, parentheses, quotes), so the tail is matched from the right
_PASS_TAIL = re.compile(r"\"\s*(?:-\s*(\d+)\s*)?(?:\(\s*\d+\s*/\s*\d+\s*\)\s*)?:.*?-\s*(\d+)\s+pass(?:es)?\b[^\"]*$")
_PASS_ONLY = re.compile(r"-\s*(\d+)\s+pass(?:es)?\b")


def parse_passes(log: str) -> dict[str, int]:
    """Replay passes per launch from ncu's log lines, keyed by launch index (ncu's ID, else the
    order seen). ncu writes ``==PROF== Profiling "name" - 0: 0%....50%....100% - 9 passes``, and
    with ``--launch-count N`` ``... "name" - 0 (1/N): ...``; a name may hold templates, commas,
    parentheses or quotes, and the pass count may land on a later line when the progress is split."""
    out: dict[str, int] = {}
    pending: str | None = None  # a launch whose line had no pass count yet
    for line in (log or "").splitlines():
        at = line.find(_PROF_START)
        if at < 0:
            if pending is not None:
                m = _PASS_ONLY.search(line)
                if m:
                    out[pending] = int(m.group(1))
                    pending = None
                elif line.startswith("=="):
                    pending = None
            continue
        pending = None
        rest = line[at + len(_PROF_START):]
        m = _PASS_TAIL.search(rest)
        if m:
            key = m.group(1) if m.group(1) is not None else str(len(out))
            out[key] = int(m.group(2))
            continue
        ids = re.findall(r"\"\s*-\s*(\d+)\s*(?:\(\s*\d+\s*/\s*\d+\s*\)\s*)?:", rest)
        pending = ids[-1] if ids else str(len(out))
    return out


def ncu_errors(log: str) -> list[str]:
    """ncu's ``==ERROR==`` lines (without the prefix), in order."""
    return [ln.split("==ERROR==", 1)[1].strip() for ln in (log or "").splitlines() if "==ERROR==" in ln]
