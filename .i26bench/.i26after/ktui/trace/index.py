"""The sweep index: find every trace under a directory and summarise each one quickly.

``ktui runs DIR`` must show 10,000 traces (1 GB) progressively, so runs are summarised by a
background scan that keeps no turns, events or kernels in memory. Each file is read once and
every line goes to the one :class:`~ktui.trace.builder.Builder` (with ``keep_events=False``), so
problem, model, persona, turns, tool calls, tokens, wall time, terminal state, outcome, final
metrics (with the ms-as-us unit fix) and flags follow exactly the rules of ``ktui show``:

- a line of up to ``SHORT_LINE`` bytes goes through the reader's ``LineParser`` as it is;
- of a longer tool call, tool result or agent message (kernel code, long outputs) only the
  envelope is read with one anchored regex (``ts_ms``, ``actor``, ``message_id``, kind, and a
  tool event's ``id`` / ``name``), and the builder gets that event with an empty body; a line the
  regex does not recognise, and every ``fetch_problem`` / ``submit_kernel`` event, system note
  and message, is parsed in full.

The tests check that every field agrees with the full reader on every fixture, parsed or sniffed.
Many cold files are skimmed by helper processes too (:func:`default_jobs`).

The summary is cached per file, keyed by real path, size and mtime, in
``$KTUI_CACHE_DIR`` (default ``$XDG_CACHE_HOME/ktui`` or ``~/.cache/ktui``).

Directory walking follows symbolic links, visits each real directory once (symlink loops are
reported, not followed), lists each real file once (by device and inode, which is what the real
path names; a copy with the same content is a duplicate too), skips ``runs.jsonl`` (records,
not traces) and reads ``runs.jsonl`` / ``runs.json`` / ``meta.json`` records to fill in what a
trace lacks. Nothing here raises on bad
input: unreadable files and directories, broken lines and empty trees become
:class:`ScanIssue` entries.

No Textual, no torch.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import selectors
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import IO, Any, cast

from ktui import settings
from ktui.trace import facts
from ktui.trace.builder import Builder
from ktui.trace.labels import LabelStore, content_id, files_for
from ktui.trace.model import INCOMPLETE, OK, UNKNOWN, V2, Run
from ktui.trace.notes import JSONError, loads
from ktui.trace.reader import LineParser, file_problem, line_separator, max_line_bytes, open_regular

SCHEMA = 16  # bump when RunSummary, the skim, an importer's reading or the static findings change: invalidates
# cached entries (14: Codex refused patches, exit headers, formatters; Claude Code 2.x out-of-order, repeated
# and torn records; 15: one content fingerprint for every format, labels key on it; no_gpu_final;
# 16: the trace's reference sha1)
CHUNK = 4 << 20
SHORT_LINE = 16384  # bytes: lines up to this long are parsed (orjson: ~1 GB/s), longer ones sniffed
RECORD_FILES = ("runs.jsonl", "runs.json", "meta.json")
# files looked at as traces (which format a file is comes from its content, never its name)
TRACE_EXTS = (".jsonl", ".json", ".traj", ".eval")  # .eval: Inspect's zipped logs
# tool events read in full (their results carry the problem or the final metrics)
FULL_TOOLS = frozenset({"fetch_problem", "fetch_translation_problem", "submit_kernel"})
# tool results read in full (their status says whether a kernel compiled / was first correct)
FULL_RESULTS = frozenset({"compile_kernel", "run_correctness"})
_MAX_PROBLEMS = 20
# KernelBench run folders: one kernel file per sample (ktui.trace.results.kernelbench), a run each
_SAMPLE_FILE = re.compile(r"^(?:level_\d+_)?problem_\d+(?:_sample_\d+)?_kernel\.py$")

# {"tick":N,"ts_ms":N,"actor":..,["message_id":..,]"payload":{"kind":"..."  (any whitespace)
_ENVELOPE = re.compile(
    rb'\s*\{\s*"tick"\s*:\s*(?P<tick>-?\d+)\s*,\s*"ts_ms"\s*:\s*(?P<ts>\d+)\s*,'
    rb'\s*"actor"\s*:\s*(?P<actor>null|"(?:[^"\\]|\\.)*")\s*,'
    rb'\s*(?:"message_id"\s*:\s*(?P<mid>null|"[^"\\]*")\s*,\s*)?"payload"\s*:\s*\{\s*"kind"\s*:\s*"(?P<kind>[A-Za-z_]+)"'
)
# right after the kind of a tool event: [, "id": "..."], "name": "..."
_TOOL = re.compile(rb'(?:\s*,\s*"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|null))?\s*,\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_SEED_TRUE = re.compile(rb'"seed"\s*:\s*true')
_IS_ERROR_TRUE = re.compile(rb'"is_error"\s*:\s*true')


# ---- the summary ---------------------------------------------------------------------------------
@dataclass(slots=True)
class RunSummary:
    """What the runs table shows about one trace, without loading it."""

    path: str  # as found under the scanned root (relative to it when possible)
    real: str = ""  # the real path: identity, cache key, what `replay` opens
    size: int = 0
    mtime_ns: int = 0
    variant: str = UNKNOWN
    format: str = "ensemble"  # the importer that reads it; "none": a .json file that is not a trace
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
    failed_calls: int = 0  # of them, not ok (ktui.trace.facts.is_failed)
    not_trace: str = ""  # why the file is not a trace at all (ktui.trace.facts.not_a_trace); not listed then
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
    hacks: list[str] = field(default_factory=list)  # honesty classes of the final kernel (ktui.trace.findings)
    labels: list[str] = field(default_factory=list)  # the user's labels (ktui.trace.labels), set at every scan
    no_gpu_final: bool = False  # the final kernel has no custom GPU code (its speedup is not a kernel's)
    problems: list[str] = field(default_factory=list)  # "line N: message" for lines that did not parse
    incomplete: bool = False  # ends in a partial line (still being written)
    record: str | None = None  # status of a runs.jsonl record for this run ("ok", "failed", ...)
    compiled: bool = False  # some kernel of the run compiled (a compile or correctness check got that far)
    first_correct_turn: int | None = None  # Run.first_correct_turn (0-based)
    tokens_to_correct: int | None = None  # tokens of the turns up to and including that turn
    wall_ms_to_correct: int | None = None  # first ts_ms to the result of that first correct check
    final_sha1: str | None = None  # sha1 of the final kernel's code, when the trace holds it
    reference_sha1: str | None = None  # sha1 of the reference the trace holds (a reproduction must match it)
    result: str = ""  # the harness's result file the outcome comes from ("reward.json (harbor)")
    result_error: str = ""  # its error text, first line
    speedups: dict[str, float] = field(default_factory=dict)  # baseline ("eager", "torch.compile", ...) -> x
    speedup_base: str = ""  # the baseline of ``speedup`` when a result file gave it
    fingerprint: str = ""  # duplicate detection: the content's hash (KernelBench samples: with their path)
    content_key: str = ""  # labels' key when it is not "fp1:" + fingerprint (KernelBench samples)
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
        d = {name: getattr(self, name) for name in _FIELDS}
        d["scores"], d["flags"], d["problems"] = dict(self.scores), list(self.flags), list(self.problems)
        d["hacks"], d["speedups"], d["labels"] = list(self.hacks), dict(self.speedups), list(self.labels)
        return d

    @property
    def content_id(self) -> str:
        """The identity labels are keyed by (:func:`ktui.trace.labels.content_id`)."""
        if self.content_key:
            return self.content_key
        return f"fp1:{self.fingerprint}" if self.fingerprint else ""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSummary:
        """A summary from its cached form; ``TypeError`` when a field has the wrong type (a cache
        entry is data from disk: it is checked, never trusted)."""
        kw = {k: v for k, v in d.items() if k in _FIELD_SET}
        for k, v in kw.items():
            if not _TYPE_OK[k](v):
                raise TypeError(f"cache entry: {k} has the wrong type ({type(v).__name__})")
        if "path" not in kw:
            raise TypeError("cache entry: no path")
        return cls(**kw)


_FIELDS = tuple(f.name for f in fields(RunSummary))
_FIELD_SET = frozenset(_FIELDS)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and (not isinstance(v, float) or math.isfinite(v))


def _opt(check):
    return lambda v: v is None or check(v)


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _scores(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _is_num(x) for k, x in v.items())


def _type_check(name: str, annotation: str):
    if name in ("scores", "speedups"):
        return _scores
    if name in ("flags", "problems", "hacks", "labels"):
        return _str_list
    base = annotation.replace(" | None", "")
    check = {"str": lambda v: isinstance(v, str), "int": _is_int, "float": _is_num,
             "bool": lambda v: isinstance(v, bool)}[base]
    return _opt(check) if "None" in annotation else check


_TYPE_OK = {f.name: _type_check(f.name, str(f.type)) for f in fields(RunSummary)}


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


# ---- the skim --------------------------------------------------------------------------------------
class _Skim:
    """One pass over a trace's lines, all fed to the one :class:`Builder` (keeping no events).

    Short lines go through the reader's :class:`LineParser` as they are. Of a long tool call,
    tool result or agent message only the envelope is read, and the builder gets that envelope
    with an empty body: turns, pairing, variant and dangling calls then follow the builder's
    rules exactly, without decoding kernels and outputs the table never shows.
    """

    def __init__(self, path: str) -> None:
        self.b = Builder(path, keep_events=False)
        self.parser = LineParser(self.b)

    def line(self, buf: bytes, s: int, e: int, terminated: bool = True) -> None:
        """One line: buf[s:e], without its newline."""
        if e - s > SHORT_LINE and terminated:
            obj = _envelope_only(buf, s, e)
            if obj is not None:
                self.parser.feed_object(obj, e - s)
                return
        self.parser.feed_line(buf[s:e], terminated)

    def summary(self, tf: TraceFile) -> RunSummary:
        from ktui.trace.results import attach

        return summary_of_run(attach(self.b.finish(final=True)), tf)


def summary_of_run(run: Run, tf: TraceFile) -> RunSummary:
    """The runs-table row of a loaded (or skimmed) run."""
    s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
    s.variant = run.variant
    s.format = run.format
    p = run.problem
    s.problem = p.title if (p.level is not None or p.problem_id is not None or p.name) else ""
    s.problem_key = problem_key(p.level, p.problem_id, p.name)
    s.model, s.persona, s.scenario = run.model, run.persona, run.scenario
    s.outcome, s.terminal = run.outcome, run.terminal_state
    s.turns, s.max_turns, s.tool_calls = len(run.turns), run.max_turns, len(run.agent_calls)
    s.tokens = run.tokens_total or None
    s.started_ms, s.ended_ms = run.started_ms, run.ended_ms
    if run.metrics is not None:
        s.speedup, s.runtime_us = run.metrics.speedup, run.metrics.runtime_us
        s.ref_runtime_us, s.correct = run.metrics.ref_runtime_us, run.metrics.correct
    s.final_score = run.final_score
    s.scores = dict(run.scores)
    s.failed_calls = facts.failed_calls(run)
    s.not_trace = facts.not_a_trace(run) or ""
    s.flags = facts.flag_codes(run)  # the flag set every view shows
    s.hacks = facts.hack_classes(run)
    s.no_gpu_final = facts.final_without_gpu_code(run)
    s.problems = [str(pr) for pr in run.problems[:_MAX_PROBLEMS]]
    if len(run.problems) > _MAX_PROBLEMS:
        s.problems.append(f"... {len(run.problems) - _MAX_PROBLEMS} more")
    s.incomplete = run.incomplete
    _progress(run, s)
    _result(run, s)
    return s


def _result(run: Run, s: RunSummary) -> None:
    """The harness's own result file (ktui.trace.results): where the outcome came from, the
    speedups by baseline, the task."""
    r = run.results[0] if run.results else None
    if r is None:
        return
    s.result = f"{r.source} ({r.harness})"
    s.speedups = {k: float(v) for k, v in r.speedups.items()}
    s.speedup_base = (r.primary or next(iter(r.speedups), "")) if r.speedups else ""
    if r.compiled is not None or r.correct:
        s.compiled = s.compiled or bool(r.compiled) or bool(r.correct)
    if r.error:
        s.result_error = r.error.strip().split("\n", 1)[0][:200]


_COMPILE_TOOLS = frozenset({"compile_kernel"})
_CORRECT_TOOLS = frozenset({"run_correctness", "submit_kernel"})


def _says_compiled(res: Any) -> bool:
    for d in (res.meta, res.effect):
        if isinstance(d, dict) and d.get("compiled") is True:
            return True
    return False


def _progress(run: Run, s: RunSummary) -> None:
    """How far the run got: compiled at all, and what it cost to reach the first correct kernel."""
    calls = run.agent_calls
    s.compiled = any(c.result is not None and (
        (c.status == OK and (c.name in _COMPILE_TOOLS or c.name in _CORRECT_TOOLS)) or _says_compiled(c.result))
        for c in calls)
    fct = run.first_correct_turn
    s.first_correct_turn = fct
    if fct is not None:
        s.compiled = True
        toks = [t.tokens_total for t in run.turns if t.index <= fct and t.tokens_total is not None]
        s.tokens_to_correct = sum(toks) if toks else None
        if run.variant != V2 and run.started_ms is not None:
            for c in run.calls:
                if c.name in _CORRECT_TOOLS and c.status == OK and c.turn == fct and c.result is not None:
                    if c.result.ts_ms is not None:
                        s.wall_ms_to_correct = max(0, c.result.ts_ms - run.started_ms)
                    break
    final = run.final_kernel
    if final is not None and final.code and final.attachment is None:
        s.final_sha1 = final.sha1
    ref = getattr(getattr(run, "problem", None), "reference_source", None)
    if isinstance(ref, str) and ref.strip():
        s.reference_sha1 = hashlib.sha1(ref.encode("utf-8", "replace")).hexdigest()


def _envelope_only(buf: bytes, s: int, e: int) -> dict[str, Any] | None:
    """A long line's event with an empty body, read from its envelope alone; None when the line
    must be parsed in full (a kind or tool whose body the summary needs, or an unusual layout)."""
    m = _ENVELOPE.match(buf, s, e)
    if m is None:
        return None
    kind = m.group("kind").decode()
    payload: dict[str, Any] = {"kind": kind}
    tail = buf[max(s, e - 160): e]  # trailing keys: "seed" (V1), "costs" (V0), "is_error"
    if kind in ("tool_call", "tool_result"):
        t = _TOOL.match(buf, m.end(), min(e, m.end() + 600))
        if t is None:
            return None
        name = _jstr(b'"' + t.group(2) + b'"')
        if name in FULL_TOOLS or (kind == "tool_result" and name in FULL_RESULTS):
            return None
        payload["name"] = name
        if t.group(1) is not None:
            payload["id"] = _jstr(b'"' + t.group(1) + b'"')
        if b'"seed"' in tail:
            payload["seed"] = _SEED_TRUE.search(tail) is not None
        if kind == "tool_call":
            payload["args"] = {}
        elif t.group(1) is None and buf.find(b'"text"', t.end(), min(e, t.end() + 40)) >= 0:
            payload["text"] = ""
        else:
            payload["result"] = {}
            if _IS_ERROR_TRUE.search(tail):
                payload["is_error"] = True
    elif kind == "agent_message":
        payload["text"] = ""
    else:
        return None
    obj: dict[str, Any] = {"tick": int(m.group("tick")), "ts_ms": int(m.group("ts")),
                           "actor": None if m.group("actor") == b"null" else _jstr(m.group("actor")),
                           "payload": payload}
    mid = m.group("mid")
    if mid is not None:
        obj["message_id"] = None if mid == b"null" else _jstr(mid)
    if b'"costs"' in tail:
        obj["costs"] = {}
    return obj


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
    other = _imported(tf)
    if other is not None:
        return other
    sk = _Skim(tf.path)
    head = hashlib.sha1()
    tail = b""
    limit = max_line_bytes()
    try:
        with open_regular(tf.real or tf.path) as f:
            carry = b""
            first = True
            sep = b"\n"
            skipping = -1  # >= 0: bytes so far of a line over the limit (skipped, never held whole)
            while True:
                chunk = f.read(CHUNK)
                if not chunk:
                    break
                if first:
                    head.update(chunk[:4096])
                    sep = line_separator(chunk)
                    first = False
                tail = (tail + chunk)[-4096:]
                if skipping >= 0:
                    nl = chunk.find(sep)
                    if nl < 0:
                        skipping += len(chunk)
                        continue
                    sk.parser.skip_line(skipping + nl, True, limit)
                    skipping = -1
                    chunk = chunk[nl + 1:]
                buf = carry + chunk if carry else chunk
                pos, end = 0, len(buf)
                while True:
                    nl = buf.find(sep, pos)
                    if nl < 0:
                        break
                    if nl - pos > limit:
                        sk.parser.skip_line(nl - pos, True, limit)
                    else:
                        sk.line(buf, pos, nl)
                    pos = nl + 1
                carry = buf[pos:] if pos < end else b""
                if len(carry) > limit:
                    skipping, carry = len(carry), b""
            if skipping >= 0:
                sk.parser.skip_line(skipping, False, limit)
            elif carry:
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


def _imported(tf: TraceFile) -> RunSummary | None:
    """A trace of another format (ktui.trace.importers), loaded whole and summarised; None for an
    ensemble trace (skimmed as above). A ``.json`` file that is not a trace gets format "none"."""
    from ktui.trace import importers
    from ktui.trace.results import attach, is_sidecar, kernelbench

    path = tf.real or tf.path
    try:
        if kernelbench.is_sample(path) and not importers.forced():
            run = attach(kernelbench.load_sample(path))
            det = importers.Detection(kernelbench.FORMAT)
        else:
            det = importers.choose(path)
            if det.name == "ensemble":
                return None
            if det.name == "unknown" and not path.endswith(".jsonl"):
                sidecar = is_sidecar(path)
                s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns,
                               format="result" if sidecar else "none")
                s.problems = ["a harness's result file" if sidecar else f"not a trace (looks like {det.hint})"]
                return s
            run = importers.load_as(path, det, keep_events=False)
    except Exception as exc:  # noqa: BLE001 - the index never raises on data
        s = RunSummary(path=tf.path, real=tf.real, size=tf.size, mtime_ns=tf.mtime_ns)
        s.problems = [f"could not summarise ({type(exc).__name__}: {exc})"]
        s.flags = ["unreadable"]
        return s
    s = summary_of_run(run, tf)
    if det.name == "unknown":
        s.flags = s.flags + ["unreadable"] if "unreadable" not in s.flags else s.flags
    try:
        cid = content_id(path)  # the same hash as an ensemble trace's: labels key on it
    except OSError:
        cid = ""
    if s.format == kernelbench.FORMAT and cid:  # one kernel file per sample: equal kernels of two runs are two runs
        s.fingerprint = hashlib.sha1(os.path.realpath(path).encode("utf-8", "replace") + cid.encode()).hexdigest()
        s.content_key = cid
    else:
        s.fingerprint = cid[4:]
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
        """Targets are paths as the walk finds them (no symlink resolution: it is slow on 10k dirs)."""
        rec.target = os.path.normpath(target)
        self.by_target[rec.target] = rec  # the last row for a target wins

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
        if not self.by_target:
            return out
        found = os.path.normpath(tf.found or tf.real)
        rec = self.by_target.get(found)
        if rec is not None:
            out.append(rec)
        p = os.path.dirname(found)
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
    """``path`` relative to ``root`` (the walk builds every path by joining names onto root)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if path.startswith(prefix):
        return path[len(prefix):]
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def iter_traces(root: str | os.PathLike[str], issues: list[ScanIssue], records: Records | None = None,
                ) -> Iterator[TraceFile]:
    """Every trace file under ``root`` once, as the walk finds it, in a stable order.

    Subdirectories come before the files next to them (``<uuid>/trace.jsonl`` before the flat
    link to it), and a directory's records are read before anything below it is yielded. A file
    reached twice (through links) is yielded the first time only.
    """
    root = os.fspath(root)
    try:
        st = os.stat(root)
    except OSError as exc:
        issues.append(ScanIssue(root, f"cannot read: {exc.strerror or exc}", "error"))
        return
    if not os.path.isdir(root):
        yield TraceFile(root, os.path.realpath(root), st.st_size, st.st_mtime_ns, os.path.islink(root), root)
        return
    seen_files: set[tuple[int, int]] = set()
    seen_dirs: set[tuple[int, int]] = set()
    # stack items: ("dir", (path, real path or None)) or ("files", [(TraceFile, (dev, ino))...])
    stack: list[tuple[str, Any]] = [("dir", (root, None))]
    while stack:
        what, item = stack.pop()
        if what == "files":
            for tf, ident in item:
                if ident not in seen_files:
                    seen_files.add(ident)
                    if tf.is_link:
                        tf.real = os.path.realpath(tf.found)
                    yield tf
            continue
        d, real_dir = item
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
        if real_dir is None:
            real_dir = os.path.realpath(d)
        files: list[tuple[TraceFile, tuple[int, int]]] = []
        subdirs: list[tuple[str, str | None]] = []
        for e in entries:
            name = e.name
            try:
                is_link = e.is_symlink()
                if e.is_dir():
                    if not name.startswith(".") and name != "__pycache__":
                        subdirs.append((e.path, None if is_link else os.path.join(real_dir, name)))
                    continue
                if not e.is_file() and name.endswith(".jsonl") and not is_link:
                    issues.append(ScanIssue(_display(e.path, root), file_problem(e.path) or "not a regular file",
                                            "warning"))
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
                if not name.endswith(TRACE_EXTS) and not _SAMPLE_FILE.match(name):
                    continue
                fst = e.stat()
                # the real path of a link is resolved only if it is not a duplicate (see above)
                real = e.path if is_link else os.path.join(real_dir, name)
                tf = TraceFile(_display(e.path, root), real, fst.st_size, fst.st_mtime_ns, is_link, e.path)
                files.append((tf, (fst.st_dev, fst.st_ino)))
            except OSError as exc:
                issues.append(ScanIssue(_display(e.path, root), f"cannot read: {exc.strerror or exc}", "warning"))
        stack.append(("files", files))
        for sd in reversed(subdirs):
            stack.append(("dir", sd))


def discover(root: str | os.PathLike[str], issues: list[ScanIssue], records: Records | None = None,
             ) -> list[TraceFile]:
    """:func:`iter_traces` as a list."""
    return list(iter_traces(root, issues, records))


# ---- parallel skimming -------------------------------------------------------------------------------
def default_jobs() -> int:
    """Helper processes for a cold scan: ``$KTUI_JOBS``, else one less than the CPUs (at most 7).

    The scanning process itself skims too, so 1 helper on a 2-core machine means 2 skimmers.
    """
    jobs = settings.current().jobs
    if jobs is not None:
        return jobs
    return max(0, min(7, (os.cpu_count() or 1) - 1))


def _worker_main() -> None:  # pragma: no cover - runs in a helper process (tested through SweepIndex)
    """Helper process: a TraceFile per stdin line in, a summary per stdout line out (JSON)."""
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        task = None
        try:
            task = loads(raw)
            tf = TraceFile(task["path"], task["real"], task["size"], task["mtime_ns"], False, task["found"])
            body = {"i": task["i"], "s": summarize(tf).to_dict()}
        except Exception as exc:  # noqa: BLE001 - report, never die on one file
            body = {"i": task.get("i") if isinstance(task, dict) else None, "error": repr(exc)}
        out.write(json.dumps(body).encode() + b"\n")
        out.flush()


class _Helper:
    """One helper process and the tasks it has been given."""

    MAX_OUTSTANDING = 16

    def __init__(self) -> None:
        pkg_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from ktui.trace.index import _worker_main; _worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.outstanding: dict[int, TraceFile] = {}
        self.buf = b""
        self.alive = True

    def give(self, i: int, tf: TraceFile) -> bool:
        task = {"i": i, "path": tf.path, "real": tf.real, "size": tf.size, "mtime_ns": tf.mtime_ns,
                "found": tf.found}
        try:
            stdin = cast(IO[bytes], self.proc.stdin)  # a PIPE
            stdin.write(json.dumps(task).encode() + b"\n")
            stdin.flush()
        except (OSError, ValueError):
            self.alive = False
            return False
        self.outstanding[i] = tf
        return True

    def read(self) -> list[tuple[int, RunSummary | None]]:
        """Results available now (call when select() says the pipe is readable)."""
        try:
            chunk = os.read(cast(IO[bytes], self.proc.stdout).fileno(), 1 << 20)
        except OSError:
            chunk = b""
        if not chunk:
            self.alive = False
            return []
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        out = []
        for ln in lines:
            try:
                body = loads(ln)
                i = body["i"]
                s = RunSummary.from_dict(body["s"]) if "s" in body else None
            except KeyError:
                continue
            except JSONError:  # TypeError among them
                continue
            if i in self.outstanding:
                del self.outstanding[i]
                out.append((i, s))
        return out

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdout,):
            if f:
                f.close()


# ---- the cache ---------------------------------------------------------------------------------------
def cache_dir() -> str:
    return str(settings.current().index_dir)


def cache_path(root: str) -> str:
    h = hashlib.sha1(os.path.realpath(root).encode("utf-8", "replace")).hexdigest()[:16]
    return os.path.join(cache_dir(), f"runs-index-{h}.json")


def _load_cache(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            obj = loads(f.read())
    except OSError:
        return {}
    except JSONError:
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
        except TypeError:  # numbers orjson cannot hold (ints over 64 bits): the json module can
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

    Summaries come in the walk's order. Cached summaries cost nothing; the others are skimmed
    here and, when there are many, by ``jobs`` helper processes as well (:func:`default_jobs`).
    ``total`` is the number of trace files once the walk is over (None before); ``issues``
    collects what was wrong with the tree; ``cache_hits`` counts summaries served from the cache.
    """

    PARALLEL_MIN = 48  # uncached files before helpers are started
    WALK_BURST = 64  # files found between two rounds of skimming

    def __init__(self, root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
                 labels: LabelStore | None = None) -> None:
        self.root = os.fspath(root)
        # the user's labels (the default file, the sweep's own, or the ones given): read at every scan
        self.labels = labels if labels is not None else LabelStore.read(files_for(self.root))
        self.use_cache = use_cache
        self.jobs = default_jobs() if jobs is None else jobs
        self.issues: list[ScanIssue] = []
        self.records = Records()
        self.files: list[TraceFile] = []
        self.total: int | None = None
        self.cache_hits = 0
        self.done = 0
        self.duplicates = 0
        self.not_traces = 0  # .json files skipped: not traces
        self.result_files = 0  # .json files that are a harness's result files (read with their runs)
        self.helpers_used = 0

    def discover(self) -> list[TraceFile]:
        """The whole walk at once (the scan itself does not wait for it)."""
        if self.total is None:
            self.files = discover(self.root, self.issues, self.records)
            self.total = len(self.files)
        return self.files

    def summaries(self) -> Iterator[RunSummary]:
        cpath = cache_path(self.root)
        cached = _load_cache(cpath) if self.use_cache else {}
        fresh: dict[str, dict[str, Any]] = {}
        seen_fp: dict[str, str] = {}
        walk = iter(self.files) if self.total is not None else iter_traces(self.root, self.issues, self.records)
        if self.total is None:
            self.files = []
        ready: dict[int, RunSummary] = {}  # results waiting for their turn
        hits: dict[int, dict[str, Any]] = {}  # cache entries of the ready results served from the cache
        todo: deque[int] = deque()  # indices to skim, in order
        helpers: list[_Helper] = []
        sel = selectors.DefaultSelector()
        next_out = 0
        n_found = 0
        uncached = 0
        walking = True

        def finish(i: int, s: RunSummary) -> None:
            tf = self.files[i]
            recs = self.records.lookup(tf)
            s.path, s.record_sig = tf.path, self.records.signature(recs)
            if recs:
                self.records.apply(s, recs)
            ready[i] = s

        def start_helpers() -> None:
            for _ in range(self.jobs - len(helpers)):
                try:
                    h = _Helper()
                except OSError:
                    self.jobs = len(helpers)
                    return
                helpers.append(h)
                sel.register(cast(IO[bytes], h.proc.stdout), selectors.EVENT_READ, h)
            self.helpers_used = len(helpers)

        def feed_helpers() -> None:
            for h in helpers:
                while h.alive and todo and len(h.outstanding) < h.MAX_OUTSTANDING:
                    i = todo.popleft()
                    if not h.give(i, self.files[i]):
                        todo.appendleft(i)
                        break

        def collect(timeout: float) -> None:
            if not helpers:
                return
            for key, _ in sel.select(timeout):
                h: _Helper = key.data
                for i, s in h.read():
                    finish(i, s if s is not None else summarize(self.files[i]))
                if not h.alive:  # it died: its tasks come back to us
                    sel.unregister(cast(IO[bytes], h.proc.stdout))
                    todo.extendleft(sorted(h.outstanding, reverse=True))
                    h.outstanding.clear()

        try:
            while True:
                # 1. walk a little further (in bursts, so that helpers get work early)
                burst = 0
                while walking and burst < self.WALK_BURST:
                    burst += 1
                    tf = next(walk, None)
                    if tf is None:
                        walking = False
                        self.total = n_found
                        break
                    i = n_found
                    n_found += 1
                    if len(self.files) < n_found:
                        self.files.append(tf)
                    ent = cached.get(tf.real)
                    recs = self.records.lookup(tf)
                    if ent and ent.get("size") == tf.size and ent.get("mtime_ns") == tf.mtime_ns \
                            and ent.get("record_sig", "") == self.records.signature(recs):
                        try:
                            s = RunSummary.from_dict(ent)
                            s.path = tf.path
                            for r in recs:
                                r.matched = True
                            ready[i] = s
                            hits[i] = ent
                            self.cache_hits += 1
                            continue
                        except TypeError:
                            pass
                    todo.append(i)
                    uncached += 1
                    if self.jobs and not helpers and uncached >= self.PARALLEL_MIN:
                        start_helpers()
                    if next_out == i and not ready:
                        break  # the very first rows: do not make them wait for a burst
                # 2. hand work to helpers, take their results
                feed_helpers()
                collect(0)
                # 3. the next summary in order: skim it here if nobody has it
                if next_out not in ready and todo and todo[0] == next_out:
                    todo.popleft()
                    finish(next_out, summarize(self.files[next_out]))
                elif next_out not in ready and not walking and not todo:
                    if next_out >= n_found:
                        break
                    collect(0.05)  # a helper has it: wait for it
                elif next_out not in ready and not walking and todo:
                    i = todo.pop()  # meanwhile, skim from the far end
                    finish(i, summarize(self.files[i]))
                # 4. hand out what is ready, in order
                while next_out in ready:
                    s = ready.pop(next_out)
                    tf = self.files[next_out]
                    next_out += 1
                    ent = hits.pop(next_out - 1, None)
                    fresh[tf.real] = ent if ent is not None else s.to_dict()  # a hit is stored as it was
                    self.done += 1
                    if s.format == "none":  # a .json file that is not a trace: not a run
                        self.not_traces += 1
                        continue
                    if s.format == "result":  # a harness's result file: read with its run's trace
                        self.result_files += 1
                        continue
                    if s.fingerprint and s.fingerprint in seen_fp:
                        self.duplicates += 1
                        self.issues.append(ScanIssue(tf.path, f"same content as {seen_fp[s.fingerprint]}; "
                                                     "listed once", "info"))
                        continue
                    if s.fingerprint:
                        seen_fp[s.fingerprint] = tf.path
                    if s.not_trace:  # not a trace (an empty file, a binary): one line, not counted
                        self.issues.append(ScanIssue(tf.path, s.not_trace, "error"))
                        continue
                    s.labels = [lab.short for lab in self.labels.for_id(s.content_id)] if self.labels else []
                    if s.problems:
                        sev = "error" if "unreadable" in s.flags or s.problems[0].startswith("empty") else "warning"
                        more = f" (+{len(s.problems) - 1} more)" if len(s.problems) > 1 else ""
                        self.issues.append(ScanIssue(tf.path, s.problems[0] + more, sev))
                    yield s
                if not walking and next_out >= n_found:
                    break
        finally:
            for h in helpers:
                h.close()
            sel.close()
            unchanged = self.cache_hits == len(fresh) == len(cached) and self.total is not None
            if self.use_cache and fresh and not unchanged:
                # keep still-valid entries of files this (possibly interrupted) scan did not reach
                live = {tf.real for tf in self.files}
                merged = {k: v for k, v in cached.items() if k in live and k not in fresh}
                merged.update(fresh)
                err = _save_cache(cpath, self.root, merged)
                if err:
                    self.issues.append(ScanIssue(self.root, err, "info"))
        self._report_records()
        if self.not_traces:
            self.issues.append(ScanIssue(self.root, f"{self.not_traces} .json file(s) are not traces; skipped", "info"))
        if self.result_files:
            self.issues.append(ScanIssue(self.root, f"{self.result_files} result file(s) of the harness read with "
                                         "their runs", "info"))
        if not self.files or self.not_traces + self.result_files == len(self.files):
            self.issues.append(ScanIssue(self.root, "no trace files (*.jsonl, *.json) found", "warning"))

    def _report_records(self) -> None:
        for rec in self.records.unmatched():
            status = rec.data.get("status")
            what = f" (status {status})" if isinstance(status, str) else ""
            slug = rec.data.get("slug") or rec.data.get("run_id") or "?"
            self.issues.append(ScanIssue(rec.source, f"record for {slug}{what} has no trace file", "info"))


def scan(root: str | os.PathLike[str], *, use_cache: bool = True, jobs: int | None = None,
         ) -> tuple[list[RunSummary], list[ScanIssue]]:
    """Every run under ``root`` (not progressive), with the tree's issues."""
    idx = SweepIndex(root, use_cache=use_cache, jobs=jobs)
    runs = list(idx.summaries())
    return runs, idx.issues
