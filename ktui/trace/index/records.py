"""Sweep records that describe runs: ``runs.jsonl``, ``runs.json``, ``meta.json``. They fill in
what a trace lacks, never replace it."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from ktui.trace.index.summary import RunSummary, ScanIssue, TraceFile, problem_key
from ktui.trace.lines import read_capped
from ktui.trace.notes import JSONError, loads
from ktui.trace.words import count, plural

RECORD_FILES = ("runs.jsonl", "runs.json", "meta.json")


@dataclass(slots=True)
class _Record:
    source: str  # "file:line"
    data: dict[str, Any]
    target: str  # real directory or file it applies to
    matched: bool = False
    digest: bytes | None = None  # sha1 of its data (Records.signature)


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
                data = read_capped(f, 64 << 20)  # not a 64 MiB buffer for each cell's small file
        except OSError as exc:
            issues.append(ScanIssue(shown, f"cannot read: {exc.strerror or exc}", "warning"))
            return
        if name == "runs.jsonl":
            bad = 0
            nbase = os.path.normpath(base)  # once a file, not once a row (a sweep's top file has 10,000)
            for i, raw in enumerate(data.split(b"\n"), 1):
                if not raw.strip():
                    continue
                try:
                    row = loads(raw)
                except JSONError:
                    bad += 1
                    continue
                if isinstance(row, dict):
                    self._row(row, base, f"{shown}:{i}", nbase)
            if bad:
                issues.append(ScanIssue(shown, f"{count(bad, 'record line')} {plural(bad, 'is', 'are')} not JSON", "warning"))
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

    def _row(self, row: dict[str, Any], base: str, source: str, nbase: str | None = None) -> None:
        """A ``runs.jsonl`` row, for the run ``base/<run_id or slug>``; ``nbase``: ``base`` normalised."""
        name = row.get("run_id")
        if not isinstance(name, str):  # else an ensemble per-run meta row in a cell
            name = row.get("slug")
            if not isinstance(name, str) or not name:
                tp = row.get("trace_path")
                name = os.path.basename(os.path.dirname(tp)) if isinstance(tp, str) else None
            if not name:
                return
        target = _joined(nbase, name)
        if target is None:
            self._put(os.path.join(base, name), _Record(source, row, ""))
        else:  # what _put's normpath would give
            rec = _Record(source, row, target)
            self.by_target[target] = rec

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
        """What the records of a run say, as a hash (a cached row is stale when it changes); each
        record hashed once (a sweep's top-level record applies to every run)."""
        if not recs:
            return ""
        h = hashlib.sha1()
        for r in recs:
            if r.digest is None:
                r.digest = hashlib.sha1(_canonical(r.data)).digest()
            h.update(r.digest)
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


def _joined(nbase: str | None, name: str) -> str | None:
    """``os.path.normpath(os.path.join(base, name))`` for a plain ``name`` (one component: no
    separator, not ``.`` or ``..``, not empty) and ``nbase = normpath(base)``, without normpath's
    split and join; None for any other (the caller normalises)."""
    if nbase is None or not name or os.sep in name or name == "." or name == ".." or (os.altsep and os.altsep in name):
        return None
    if nbase == ".":
        return name
    return nbase + name if nbase.endswith(os.sep) else nbase + os.sep + name


def _canonical(data: dict[str, Any]) -> bytes:
    """A record's data as sorted-key JSON (what its signature hashes): orjson, 10x the json
    module's speed on a sweep's 10,000 records; the json module where orjson cannot (an int past
    64 bits)."""
    try:
        import orjson

        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS, default=str)
    except (ImportError, TypeError):
        return json.dumps(data, sort_keys=True, default=str).encode()


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
