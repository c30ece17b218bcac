"""The sweep index: find every trace under a directory and summarise each one quickly.

``ktui runs DIR`` must show 10,000 traces (1 GB) progressively, so a run is not fully loaded
here (the full reader builds every turn, call and kernel: about 20 MB/s). Instead each file is
*skimmed* once, sequentially:

- every line's envelope (``ts_ms``, ``actor``, ``message_id``, ``payload.kind`` and, for tool
  events, ``id`` / ``name``) is read with one anchored regex on its first bytes, without decoding
  the rest of the line; a line the regex does not recognise is parsed with orjson instead;
- only the short or decisive lines are parsed in full: ``system`` notes, ``cost`` events,
  ``state_diff``s, ``fetch_problem`` / ``submit_kernel`` calls and results, and the harness's
  first ``user_message``;
- those parsed events are fed to the real :class:`~ktui.trace.builder.Builder`, so the problem,
  model, persona, max turns, scores, terminal notes, final metrics (with the ms-as-us unit fix),
  outcome and the submitted kernel's flags come from the same code as ``ktui show``;
- turns are counted from the envelope sequence with the builder's segmentation rules (section 5
  of the format doc), tokens are the sum of the token ``cost`` amounts, wall time is first to
  last ``ts_ms``; a dangling ``tool_call`` is found by pairing calls and results as the builder
  does.

The summary is cached per file, keyed by real path, size and mtime, in
``$KTUI_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ktui`` or ``~/.cache/ktui``).

Directory walking follows symbolic links, visits each real directory once (symlink loops are
reported, not followed), lists each real file once (a copy with the same content is a
duplicate too), skips ``runs.jsonl`` (records, not traces) and reads ``runs.jsonl`` /
``runs.json`` / ``meta.json`` records to fill in what a trace lacks. Nothing here raises on bad
input: unreadable files and directories, broken lines and empty trees become
:class:`ScanIssue` entries.

No Textual, no torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ktui.trace.builder import TOKEN_UNITS, Builder
from ktui.trace.model import INCOMPLETE, UNKNOWN, V0, V1, V2, V3, Event, Run, Terminal
from ktui.trace.notes import JSONError, loads, parse_note

SCHEMA = 3  # bump when RunSummary or the skim changes: invalidates cached entries
CHUNK = 4 << 20
RECORD_FILES = ("runs.jsonl", "runs.json", "meta.json")
# tool events read in full (their results carry the problem or the final metrics)
FULL_TOOLS = frozenset({"fetch_problem", "fetch_translation_problem", "submit_kernel"})
_TERMINAL_FORMS = frozenset({"grader", "final_score", "backend_error", "halt"})
_MESSAGE_KINDS = frozenset({"agent_message", "assistant_message", "message"})
_MAX_PROBLEMS = 20

# {"tick":N,"ts_ms":N,"actor":..,["message_id":..,]"payload":{"kind":"..."  (any whitespace)
_ENVELOPE = re.compile(
    rb'\s*\{\s*"tick"\s*:\s*-?\d+\s*,\s*"ts_ms"\s*:\s*(\d+)\s*,\s*"actor"\s*:\s*(null|"(?:[^"\\]|\\.)*")\s*,'
    rb'\s*(?:"message_id"\s*:\s*(null|"[^"\\]*")\s*,\s*)?"payload"\s*:\s*\{\s*"kind"\s*:\s*"([A-Za-z_]+)"'
)
# right after the kind of a tool event: [, "id": "..."], "name": "..."
_TOOL = re.compile(rb'(?:\s*,\s*"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|null))?\s*,\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ROLE = re.compile(rb'\s*,\s*"role"\s*:\s*"([a-z_]+)"')
_SEED_TRUE = re.compile(rb'"seed"\s*:\s*true')


# ---- the summary ---------------------------------------------------------------------------------
@dataclass(slots=True)
class RunSummary:
    """What the runs table shows about one trace, without loading it."""

    path: str  # as found under the scanned root (relative to it when possible)
    real: str = ""  # the real path: identity, cache key, what `replay` opens
    size: int = 0
    mtime_ns: int = 0
    variant: str = UNKNOWN
    problem: str = ""  # display title ("L1 P27 27_permutation_all_to_all.py")
    problem_key: str = ""  # what "same problem" compares
    model: str | None = None
    persona: str | None = None
    scenario: str | None = None
    outcome: str = INCOMPLETE
    terminal: str = "eof"
    turns: int = 0
    max_turns: int | None = None
    tool_calls: int = 0  # agent calls (seeded calls excluded)
    tokens: int | None = None  # tokens in + out + reasoning (None: the trace records none)
    started_ms: int | None = None
    ended_ms: int | None = None
    speedup: float | None = None
    runtime_us: float | None = None  # corrected to microseconds
    ref_runtime_us: float | None = None
    correct: bool | None = None
    final_score: float | None = None
    scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # flag codes (see ktui.trace.flags), deduplicated
    problems: list[str] = field(default_factory=list)  # "line N: message" for lines that did not parse
    incomplete: bool = False  # ends in a partial line (still being written)
    record: str | None = None  # status of a runs.jsonl record for this run ("ok", "failed", ...)
    fingerprint: str = ""
    record_sig: str = ""

    @property
    def wall_ms(self) -> int | None:
        """First to last ``ts_ms``; None when unknown or synthetic (V2)."""
        if self.variant == V2 or self.started_ms is None or self.ended_ms is None:
            return None
        return self.ended_ms - self.started_ms

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(slots=True)
class ScanIssue:
    path: str
    message: str
    severity: str = "warning"  # "error" | "warning" | "info"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(slots=True)
class TraceFile:
    path: str  # as found
    real: str
    size: int
    mtime_ns: int
    is_link: bool = False
    found: str = ""  # the path where it was found (records are looked up from there)


def problem_key(level: Any, problem_id: Any, name: str | None) -> str:
    if level is not None and problem_id is not None:
        return f"L{level}/P{problem_id}"
    if problem_id is not None:
        return str(problem_id)
    return (name or "").strip().lower()


def _dedupe(codes: list[str]) -> list[str]:
    out: list[str] = []
    for c in codes:
        if c not in out:
            out.append(c)
    return out


# ---- the skim --------------------------------------------------------------------------------------
class _Skim:
    """One pass over a trace's lines: envelope sniffing, selective parsing, builder feeding."""

    def __init__(self, path: str) -> None:
        self.b = Builder(path, keep_events=False)
        self.line_no = 0
        self.offset = 0
        self.started: int | None = None
        self.ended: int | None = None
        self.turns = 0
        self.calls = 0
        self.tokens: float | None = None
        self.evidence: set[str] = set()
        self.actors_seen: set[str | None] = set()
        self.problems: list[str] = []
        self.n_problems = 0
        self.incomplete = False
        self.n_events = 0
        # turn segmentation state (mirrors Builder)
        self._open: dict[str | None, bool] = {}  # actor -> the open turn has calls
        self._has_token_costs = False
        self._last_kind: str | None = None
        self._last_token_actor: str | None = None
        self._pending: list[tuple[str | None, str | None, bool]] = []  # (id, name, agent call)
        self._first_prompt = True

    # -- problems
    def problem(self, msg: str) -> None:
        self.n_problems += 1
        if self.n_problems <= _MAX_PROBLEMS:
            self.problems.append(f"line {self.line_no}: {msg}")

    # -- one line: buf[s:e] without its newline
    def line(self, buf: bytes, s: int, e: int, terminated: bool = True) -> None:
        self.line_no += 1
        line_no, offset = self.line_no, self.offset
        self.offset += e - s + (1 if terminated else 0)
        m = _ENVELOPE.match(buf, s, e)
        if m is None:
            if not buf[s:e].strip():
                return
            self._parse_line(buf, s, e, terminated, line_no, offset)
            return
        kind = m.group(4).decode()
        ts = int(m.group(1))
        raw_actor = m.group(2)
        if kind in ("system", "cost", "state_diff"):
            self._parse_line(buf, s, e, terminated, line_no, offset)
            return
        actor = None if raw_actor == b"null" else _jstr(raw_actor)
        self.n_events += 1
        mid = m.group(3)
        if mid is not None and mid.startswith(b'"msg-'):
            self.evidence.add(V1)
        if kind in ("tool_call", "tool_result"):
            t = _TOOL.match(buf, m.end(), min(e, m.end() + 600))
            if t is None:
                self.n_events -= 1
                self._parse_line(buf, s, e, terminated, line_no, offset)
                return
            name = _jstr(b'"' + t.group(2) + b'"')
            if name in FULL_TOOLS:
                self.n_events -= 1
                self._parse_line(buf, s, e, terminated, line_no, offset)
                return
            cid = _jstr(b'"' + t.group(1) + b'"') if t.group(1) is not None else None
            tail = buf[max(s, e - 160): e]
            if kind == "tool_call":
                seed = _SEED_TRUE.search(tail) is not None
                if b'"seed"' in tail:
                    self.evidence.add(V1)
                self._ts(ts)
                self._tool_call(actor, cid, name, seed)
            else:
                if b'"costs"' in tail:
                    self.evidence.add(V0)
                if b'"seed"' in tail:
                    self.evidence.add(V1)
                if cid is None and buf.find(b'"text"', t.end(), min(e, t.end() + 40)) >= 0:
                    self.evidence.add(V2)
                self._ts(ts)
                self._tool_result(cid, name)
            return
        if kind == "user_message" and self._first_prompt and actor == "harness":
            self._first_prompt = False
            self.n_events -= 1
            self._parse_line(buf, s, e, terminated, line_no, offset)
            return
        if kind == "message":
            r = _ROLE.match(buf, m.end(), min(e, m.end() + 80))
            self.evidence.add(V3)
            self._ts(ts)
            if r is None or r.group(1) == b"assistant":
                self._message(actor)
            self._last_kind = kind
            return
        if kind == "assistant_message":
            self.evidence.add(V2)
        self._ts(ts)
        if kind in _MESSAGE_KINDS:
            self._message(actor)
        self.actors_seen.add(actor)
        self._last_kind = kind

    def _ts(self, ts: int | None) -> None:
        if ts is None:
            return
        if self.started is None or ts < self.started:
            self.started = ts
        if self.ended is None or ts > self.ended:
            self.ended = ts

    def _parse_line(self, buf: bytes, s: int, e: int, terminated: bool, line_no: int, offset: int) -> None:
        raw = buf[s:e].rstrip(b"\r")
        try:
            obj = loads(raw)
        except JSONError:
            if not terminated:
                self.incomplete = True
                return
            self.problem("not valid JSON")
            return
        except Exception as exc:  # noqa: BLE001 - never raise on data
            self.problem(f"unreadable line ({type(exc).__name__})")
            return
        self.incomplete = False
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            self.problem("not an event object with a payload")
            return
        p = obj["payload"]
        kind = p.get("kind")
        if not isinstance(kind, str) or not kind:
            self.problem("'payload.kind' is missing or not a string")
            return
        self.n_events += 1
        ts = obj.get("ts_ms")
        ts = int(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
        actor = obj.get("actor") if isinstance(obj.get("actor"), str) else None
        mid = obj.get("message_id")
        if isinstance(mid, str) and mid.startswith("msg-"):
            self.evidence.add(V1)
        if "costs" in obj:
            self.evidence.add(V0)
        self._ts(ts)
        ev = Event(line=line_no, offset=offset, length=e - s, kind=kind, ts_ms=ts, actor=actor)
        feed = False
        if kind == "system":
            feed = True
            note = p.get("note")
            info = parse_note(note) if isinstance(note, str) else {"form": "text"}
            form = info["form"]
            if form in ("final_score", "header"):
                self.evidence.add(V2)
            if form == "json" and info.get("kind") in ("scenario", "score"):
                self.evidence.add(V3)
            if form in _TERMINAL_FORMS or (form == "json" and info.get("kind") == "score"):
                self._open.clear()
        elif kind == "cost":
            self.evidence.add(V1)
            unit, amount = p.get("unit"), p.get("amount")
            if isinstance(unit, str) and isinstance(amount, (int, float)) and not isinstance(amount, bool):
                if unit in TOKEN_UNITS and actor is not None:
                    self._has_token_costs = True
                    starts = not (self._last_kind == "cost" and self._last_token_actor == actor)
                    if actor not in self._open or starts:
                        self._new_turn(actor)
                    self._last_token_actor = actor
                    if unit != "usd":
                        self.tokens = (self.tokens or 0) + amount
                else:
                    self._last_token_actor = None
        elif kind == "state_diff":
            feed = True
        elif kind == "tool_call":
            name = p.get("name") if isinstance(p.get("name"), str) else None
            if "seed" in p:
                self.evidence.add(V1)
            cid = p.get("id") if isinstance(p.get("id"), str) else None
            if name is not None:
                self._tool_call(actor, cid, name, p.get("seed") is True)
                feed = name in FULL_TOOLS
        elif kind == "tool_result":
            name = p.get("name") if isinstance(p.get("name"), str) else None
            cid = p.get("id") if isinstance(p.get("id"), str) else None
            if "seed" in p:
                self.evidence.add(V1)
            if "text" in p and "result" not in p and cid is None:
                self.evidence.add(V2)
            self._tool_result(cid, name)
            feed = name in FULL_TOOLS
        elif kind == "user_message":
            feed = True
        elif kind in _MESSAGE_KINDS:
            if kind == "message":
                self.evidence.add(V3)
            elif kind == "assistant_message":
                self.evidence.add(V2)
            if kind != "message" or p.get("role", "assistant") == "assistant":
                self._message(actor)
        if feed:
            self.b.add(ev, p, obj)
        self.actors_seen.add(actor)
        self._last_kind = kind

    # -- turn segmentation (the builder's rules, on envelopes only)
    def _new_turn(self, actor: str | None) -> None:
        self.turns += 1
        self._open[actor] = False

    def _message(self, actor: str | None) -> None:
        if actor not in self._open or self._open[actor]:
            self._new_turn(actor)

    def _tool_call(self, actor: str | None, cid: str | None, name: str, seed: bool) -> None:
        self._pending.append((cid, name, not seed))
        if not seed:
            self.calls += 1
            if actor not in self._open or (
                self._last_kind in ("tool_result", "state_diff") and not self._has_token_costs
            ):
                self._new_turn(actor)
            self._open[actor] = True
        self._last_kind = "tool_call"
        self.actors_seen.add(actor)

    def _tool_result(self, cid: str | None, name: str | None) -> None:
        pend = self._pending
        hit = None
        if cid:
            hit = next((i for i, c in enumerate(pend) if c[0] == cid), None)
        if hit is None and name:
            hit = next((i for i, c in enumerate(pend) if c[1] == name), None)
        if hit is None and not name and pend:
            hit = 0
        if hit is not None:
            del pend[hit]
        self._last_kind = "tool_result"

    # -- the summary
    def summary(self, tf: TraceFile) -> RunSummary:
        run: Run = self.b.finish(final=True)
        dangling = any(agent for _, _, agent in self._pending)
        if dangling and not any(t.kind == "dangling_call" for t in run.terminal):
            run.terminal.append(Terminal("dangling_call", "a tool call has no result", 0))
        if not self.n_events and not self.problems:
            self.problems.append("empty file: no events")
        s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
        s.variant = self._variant()
        p = run.problem
        s.problem = p.title if (p.level is not None or p.problem_id is not None or p.name) else ""
        s.problem_key = problem_key(p.level, p.problem_id, p.name)
        s.model, s.persona, s.scenario = run.model, run.persona, run.scenario
        s.outcome, s.terminal = run.outcome, run.terminal_state
        s.turns, s.max_turns, s.tool_calls = self.turns, run.max_turns, self.calls
        s.tokens = int(self.tokens) if self.tokens is not None else None
        s.started_ms, s.ended_ms = self.started, self.ended
        if run.metrics is not None:
            s.speedup, s.runtime_us = run.metrics.speedup, run.metrics.runtime_us
            s.ref_runtime_us, s.correct = run.metrics.ref_runtime_us, run.metrics.correct
        s.final_score = run.final_score
        s.scores = dict(run.scores)
        codes = [f.code for f in run.flags]
        if run.scores.get("excessive_speedup_flagged", 0) >= 1 or run.scores.get("excessive_speedup", 0) >= 1:
            codes.append("speedup_excessive")
        if s.terminal in ("backend_error", "dangling_call"):
            codes.append(s.terminal)
        if self.incomplete:
            codes.append("still_writing")
        if self.n_problems:
            codes.append("bad_lines")
        s.flags = _dedupe(codes)
        s.problems = list(self.problems)
        if self.n_problems > _MAX_PROBLEMS:
            s.problems.append(f"... {self.n_problems - _MAX_PROBLEMS} more")
        s.incomplete = self.incomplete
        return s

    def _variant(self) -> str:
        ev = self.evidence
        if V3 in ev:
            return V3
        if V0 in ev and V1 not in ev:
            return V0
        if V1 in ev:
            return V1
        if V2 in ev:
            return V2
        if self.actors_seen and self.actors_seen <= {None, "assistant", "harness"} and "assistant" in self.actors_seen:
            return V2
        return UNKNOWN


def _jstr(raw: bytes) -> str:
    """Decode a JSON string token (with its quotes)."""
    if b"\\" not in raw:
        return raw[1:-1].decode("utf-8", "replace")
    try:
        v = json.loads(raw.decode("utf-8", "replace"))
        return v if isinstance(v, str) else str(v)
    except ValueError:
        return raw[1:-1].decode("utf-8", "replace")


def summarize(tf: TraceFile | str) -> RunSummary:
    """Skim one trace file into a :class:`RunSummary`. Never raises on bad data."""
    if isinstance(tf, str):
        st = os.stat(tf)
        tf = TraceFile(path=tf, real=os.path.realpath(tf), size=st.st_size, mtime_ns=st.st_mtime_ns)
    sk = _Skim(tf.path)
    head = hashlib.sha1()
    tail = b""
    try:
        with open(tf.real or tf.path, "rb") as f:
            carry = b""
            first = True
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                if first:
                    head.update(chunk[:4096])
                    first = False
                tail = (tail + chunk)[-4096:]
                buf = carry + chunk if carry else chunk
                pos, end = 0, len(buf)
                while True:
                    nl = buf.find(b"\n", pos)
                    if nl < 0:
                        break
                    sk.line(buf, pos, nl)
                    pos = nl + 1
                carry = buf[pos:] if pos < end else b""
            if carry:
                sk.line(carry, 0, len(carry), terminated=False)
    except OSError as exc:
        s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
        s.problems = [f"cannot read: {exc.strerror or exc}"]
        s.flags = ["unreadable"]
        return s
    except Exception as exc:  # noqa: BLE001 - the index never raises on data
        s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
        s.problems = [f"could not summarise ({type(exc).__name__}: {exc})"]
        s.flags = ["unreadable"]
        return s
    s = sk.summary(tf)
    head.update(b"|" + tail + b"|" + str(tf.size).encode())
    s.fingerprint = head.hexdigest()
    return s


# ---- records: runs.jsonl, runs.json, meta.json ----------------------------------------------------
@dataclass(slots=True)
class _Record:
    source: str  # "file:line"
    data: dict[str, Any]
    target: str  # real directory or file it applies to
    matched: bool = False


class Records:
    """Sweep records that describe runs: they fill in what a trace lacks, never replace it."""

    def __init__(self) -> None:
        self.by_target: dict[str, _Record] = {}

    def _put(self, target: str, rec: _Record) -> None:
        self.by_target[os.path.realpath(target)] = rec  # the last row for a target wins
        rec.target = os.path.realpath(target)

    def read(self, path: str, issues: list[ScanIssue], shown: str) -> None:
        name = os.path.basename(path)
        base = os.path.dirname(path)
        try:
            with open(path, "rb") as f:
                data = f.read(64 << 20)
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot read: {exc.strerror or exc}", "warning"))
            return
        if name == "runs.jsonl":
            bad = 0
            for i, raw in enumerate(data.split(b"\n"), 1):
                if not raw.strip():
                    continue
                try:
                    row = loads(raw)
                except JSONError:
                    bad += 1
                    continue
                if isinstance(row, dict):
                    self._row(row, base, f"{shown}:{i}")
            if bad:
                issues.append(ScanIssue(shown, f"{bad} record line(s) are not JSON", "warning"))
            return
        try:
            obj = loads(data)
        except JSONError:
            issues.append(ScanIssue(shown, "not valid JSON", "warning"))
            return
        if name == "runs.json" and isinstance(obj, dict) and isinstance(obj.get("runs"), list):
            for i, row in enumerate(obj["runs"]):
                if isinstance(row, dict) and isinstance(row.get("slug"), str):
                    slug = row["slug"]
                    target = os.path.join(base, slug)
                    if not os.path.exists(target):
                        target = os.path.join(base, *slug.split("__"))
                        if not os.path.exists(target) and os.path.exists(target + ".jsonl"):
                            target += ".jsonl"
                    self._put(target, _Record(f"{shown}#{i}", row, ""))
        elif name == "meta.json" and isinstance(obj, dict):
            self._put(base, _Record(shown, obj, ""))

    def _row(self, row: dict[str, Any], base: str, source: str) -> None:
        if isinstance(row.get("run_id"), str):  # ensemble per-run meta row in a cell
            self._put(os.path.join(base, row["run_id"]), _Record(source, row, ""))
            return
        slug = row.get("slug")
        if not isinstance(slug, str) or not slug:
            tp = row.get("trace_path")
            slug = os.path.basename(os.path.dirname(tp)) if isinstance(tp, str) else None
        if slug:
            self._put(os.path.join(base, slug), _Record(source, row, ""))

    def lookup(self, tf: TraceFile) -> list[_Record]:
        """Records that apply to a trace (by where it was found), outermost first."""
        out: list[_Record] = []
        found = tf.found or tf.real
        rec = self.by_target.get(os.path.join(os.path.realpath(os.path.dirname(found)), os.path.basename(found)))
        if rec is not None:
            out.append(rec)
        p = os.path.realpath(os.path.dirname(found))
        for _ in range(6):
            rec = self.by_target.get(p)
            if rec is not None:
                out.append(rec)
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        return out[::-1]

    def signature(self, recs: list[_Record]) -> str:
        if not recs:
            return ""
        h = hashlib.sha1()
        for r in recs:
            h.update(json.dumps(r.data, sort_keys=True, default=str).encode())
        return h.hexdigest()[:16]

    def apply(self, s: RunSummary, recs: list[_Record]) -> None:
        for rec in recs:
            rec.matched = True
            d = rec.data
            for key in ("model", "persona", "scenario"):
                v = d.get(key)
                if isinstance(v, str) and v:
                    if key == "model" and s.model:
                        continue  # the trace's own model wins
                    setattr(s, key, v)
            if not s.problem and d.get("problem_id") is not None:
                lvl = d.get("level")
                s.problem = (f"L{lvl} P{d['problem_id']}" if lvl is not None else str(d["problem_id"]))
                name = d.get("problem_name")
                if isinstance(name, str) and name:
                    s.problem += f" {name}"
                s.problem_key = problem_key(lvl, d.get("problem_id"), None)
            scores = d.get("scores")
            if not s.scores and isinstance(scores, dict):
                num = {k: float(v) for k, v in scores.items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
                if num:
                    s.scores = num
                    s.outcome = outcome_from_scores(num, s.outcome)
            status = d.get("status")
            if isinstance(status, str):
                s.record = status
                if status == "failed" and "runner_failed" not in s.flags:
                    s.flags.append("runner_failed")

    def unmatched(self) -> list[_Record]:
        return [r for r in self.by_target.values() if not r.matched]


_PASS_KEYS = ("submission_passed", "submit_passed", "correct")


def outcome_from_scores(scores: dict[str, float], fallback: str) -> str:
    """The publish script's outcome rules on grader scores (format doc, section 9)."""
    if any(scores.get(k, 0) >= 1 for k in _PASS_KEYS):
        return "passed"
    if "submitted" in scores and scores["submitted"] < 1:
        return "incomplete"
    if any(k in scores for k in _PASS_KEYS):
        return "failed"
    return fallback


# ---- walking ---------------------------------------------------------------------------------------
def _display(path: str, root: str) -> str:
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def discover(root: str | os.PathLike[str], issues: list[ScanIssue], records: Records | None = None,
             ) -> list[TraceFile]:
    """Every trace file under ``root`` once, in a stable order (subdirectories before files)."""
    root = os.fspath(root)
    out: list[TraceFile] = []
    by_real: dict[str, int] = {}
    try:
        st = os.stat(root)
    except OSError as exc:
        issues.append(ScanIssue(root, f"cannot read: {exc.strerror or exc}", "error"))
        return out
    if not os.path.isdir(root):
        real = os.path.realpath(root)
        out.append(TraceFile(root, real, st.st_size, st.st_mtime_ns, os.path.islink(root), root))
        return out
    seen_dirs: set[tuple[int, int]] = set()
    # stack items: ("dir", path) or ("files", [TraceFile...])
    stack: list[tuple[str, Any]] = [("dir", root)]
    while stack:
        what, item = stack.pop()
        if what == "files":
            for tf in item:
                prev = by_real.get(tf.real)
                if prev is None:
                    by_real[tf.real] = len(out)
                    out.append(tf)
                elif out[prev].is_link and not tf.is_link:
                    out[prev] = tf  # prefer the real path's name over a link to it
            continue
        d = item
        shown = _display(d, root)
        try:
            dst = os.stat(d)
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot read directory: {exc.strerror or exc}", "warning"))
            continue
        key = (dst.st_dev, dst.st_ino)
        if key in seen_dirs:
            if os.path.islink(d):
                issues.append(ScanIssue(shown, f"symlink to a directory already scanned ({os.readlink(d)}); "
                                        "not followed again", "info"))
            continue
        seen_dirs.add(key)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot list directory: {exc.strerror or exc}", "warning"))
            continue
        real_dir = os.path.realpath(d)
        files: list[TraceFile] = []
        subdirs: list[str] = []
        for e in entries:
            name = e.name
            try:
                is_link = e.is_symlink()
                if e.is_dir():
                    if not name.startswith(".") and name != "__pycache__":
                        subdirs.append(e.path)
                    continue
                if not e.is_file():
                    if is_link and (name.endswith(".jsonl") or "." not in name):
                        try:
                            os.stat(e.path)
                            reason = "not a regular file"
                        except OSError as exc:
                            reason = exc.strerror or str(exc)
                        issues.append(ScanIssue(_display(e.path, root), f"broken symlink ({reason})", "warning"))
                    continue
                if name in RECORD_FILES:
                    if records is not None:
                        records.read(e.path, issues, _display(e.path, root))
                    continue
                if not name.endswith(".jsonl"):
                    continue
                fst = e.stat()
                real = os.path.realpath(e.path) if is_link else os.path.join(real_dir, name)
                files.append(TraceFile(_display(e.path, root), real, fst.st_size, fst.st_mtime_ns, is_link, e.path))
            except OSError as exc:
                issues.append(ScanIssue(_display(e.path, root), f"cannot read: {exc.strerror or exc}", "warning"))
        stack.append(("files", files))
        for sd in reversed(subdirs):
            stack.append(("dir", sd))
    return out


# ---- the cache ---------------------------------------------------------------------------------------
def cache_dir() -> str:
    d = os.environ.get("KTUI_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ktui")


def cache_path(root: str) -> str:
    h = hashlib.sha1(os.path.realpath(root).encode("utf-8", "replace")).hexdigest()[:16]
    return os.path.join(cache_dir(), f"runs-index-{h}.json")


def _load_cache(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            obj = loads(f.read())
    except (OSError, *JSONError):
        return {}
    if not isinstance(obj, dict) or obj.get("schema") != SCHEMA or not isinstance(obj.get("entries"), dict):
        return {}
    return obj["entries"]


def _save_cache(path: str, root: str, entries: dict[str, dict[str, Any]]) -> str | None:
    """Write atomically; return an error message instead of raising."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        body = {"schema": SCHEMA, "root": os.path.realpath(root), "entries": entries}
        try:
            import orjson

            data = orjson.dumps(body)
        except ImportError:  # pragma: no cover
            data = json.dumps(body).encode()
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        return f"cannot write the index cache {path}: {exc.strerror or exc}"
    return None


# ---- the scan ----------------------------------------------------------------------------------------
class SweepIndex:
    """Scan a directory tree of traces. Iterate :meth:`summaries` for progressive results.

    ``files`` (after :meth:`discover`) is the list of trace files; ``issues`` collects what was
    wrong with the tree; ``cache_hits`` counts summaries served from the cache.
    """

    def __init__(self, root: str | os.PathLike[str], *, use_cache: bool = True) -> None:
        self.root = os.fspath(root)
        self.use_cache = use_cache
        self.issues: list[ScanIssue] = []
        self.records = Records()
        self.files: list[TraceFile] | None = None
        self.cache_hits = 0
        self.done = 0
        self.duplicates = 0

    def discover(self) -> list[TraceFile]:
        if self.files is None:
            self.files = discover(self.root, self.issues, self.records)
        return self.files

    def summaries(self) -> Iterator[RunSummary]:
        files = self.discover()
        cpath = cache_path(self.root)
        cached = _load_cache(cpath) if self.use_cache else {}
        fresh: dict[str, dict[str, Any]] = {}
        seen_fp: dict[str, str] = {}
        try:
            for tf in files:
                recs = self.records.lookup(tf)
                sig = self.records.signature(recs)
                ent = cached.get(tf.real)
                s: RunSummary | None = None
                if ent and ent.get("size") == tf.size and ent.get("mtime_ns") == tf.mtime_ns \
                        and ent.get("record_sig", "") == sig:
                    try:
                        s = RunSummary.from_dict(ent)
                        s.path = tf.path
                        self.cache_hits += 1
                    except TypeError:
                        s = None
                if s is None:
                    s = summarize(tf)
                    s.record_sig = sig
                    if recs:
                        self.records.apply(s, recs)
                else:
                    for r in recs:
                        r.matched = True
                fresh[tf.real] = s.to_dict()
                self.done += 1
                if s.fingerprint and s.fingerprint in seen_fp:
                    self.duplicates += 1
                    self.issues.append(ScanIssue(tf.path, f"same content as {seen_fp[s.fingerprint]}; "
                                                 "listed once", "info"))
                    continue
                if s.fingerprint:
                    seen_fp[s.fingerprint] = tf.path
                if s.problems:
                    sev = "error" if "unreadable" in s.flags or s.problems[0].startswith("empty") else "warning"
                    more = f" (+{len(s.problems) - 1} more)" if len(s.problems) > 1 else ""
                    self.issues.append(ScanIssue(tf.path, s.problems[0] + more, sev))
                yield s
        finally:
            if self.use_cache and fresh:
                # keep still-valid entries of files this (possibly interrupted) scan did not reach
                live = {tf.real for tf in files}
                merged = {k: v for k, v in cached.items() if k in live and k not in fresh}
                merged.update(fresh)
                err = _save_cache(cpath, self.root, merged)
                if err:
                    self.issues.append(ScanIssue(self.root, err, "info"))
        self._report_records()
        if not files:
            self.issues.append(ScanIssue(self.root, "no trace files (*.jsonl) found", "warning"))

    def _report_records(self) -> None:
        for rec in self.records.unmatched():
            status = rec.data.get("status")
            what = f" (status {status})" if isinstance(status, str) else ""
            slug = rec.data.get("slug") or rec.data.get("run_id") or "?"
            self.issues.append(ScanIssue(rec.source, f"record for {slug}{what} has no trace file", "info"))


def scan(root: str | os.PathLike[str], *, use_cache: bool = True) -> tuple[list[RunSummary], list[ScanIssue]]:
    """Every run under ``root`` (not progressive), with the tree's issues."""
    idx = SweepIndex(root, use_cache=use_cache)
    runs = list(idx.summaries())
    return runs, idx.issues
