"""Reading long lines back from the file (ktui.trace.lazy) changes nothing a reader sees: every
trace of tests/fixtures, ../shared/fixtures and ../shared/formats loads to the same events,
turns, calls, results, kernels, flags and messages with every line read back on demand
(KTUI_LAZY_MIN=0) as with everything kept (KTUI_LAZY_MIN above any line), both in one load and
in the app's two stages."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SEED_TRACE

from ktui.trace import load
from ktui.trace.model import Run
from ktui.trace.reader import load_stages
from ktui.trace.serialize import run_to_dict

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
_SUFFIXES = (".jsonl", ".json", ".ndjson")


def _traces() -> list[Path]:
    found: list[Path] = [SEED_TRACE]
    for base in (ROOT / "tests" / "fixtures", SHARED / "fixtures", SHARED / "formats"):
        if base.is_dir():
            found += sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in _SUFFIXES
                            and p.stat().st_size < (64 << 20))
    return found


TRACES = _traces()


def everything(run: Run) -> dict:
    d = run_to_dict(run)
    d["events"] = [(e.line, e.offset, e.length, e.kind, e.tick, e.ts_ms, e.actor, e.turn) for e in run.events]
    d["messages"] = list(run.messages)
    d["calls"] = [(c.index, c.name, c.args, c.kernel, c.turn, c.status, c.kernel_code,
                   None if c.result is None else (c.result.summary, c.result.effect, c.result.meta,
                                                  c.result.error_text, c.result.case_errors))
                  for c in run.calls]
    d["kernel_code"] = [(k.number, k.sha1, k.code, k.line_count, k.attachment,
                         [(u.turn, u.call_index, u.tool, u.status, u.summary) for u in k.uses]) for k in run.kernels]
    d["problem_text"] = str(run.problem)
    return d


def test_there_are_traces_to_compare():
    assert len(TRACES) >= 20  # the repo's own fixtures alone hold more; a wrong path would pass with none


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_read_back_equals_kept(path, monkeypatch):
    monkeypatch.setenv("KTUI_LAZY_MIN", str(1 << 40))
    kept = everything(load(path))
    monkeypatch.setenv("KTUI_LAZY_MIN", "0")
    lazy_run = load(path)
    assert everything(lazy_run) == kept
    stages = list(load_stages(path, min_bytes=0, stage_bytes=1 << 12, stage_turns=2))
    assert everything(stages[-1][0]) == kept


def test_every_line_is_read_back_when_asked(tmp_path, monkeypatch):
    """The comparison above compares something: with KTUI_LAZY_MIN=0 a call's arguments and a
    result's summary are not held by the model but read back from the file."""
    monkeypatch.setenv("KTUI_LAZY_MIN", "0")
    run = load(SEED_TRACE)
    calls = [c for c in run.calls if c.result is not None]
    assert calls and all(c.lazy and c.result._ref is not None and c.result._summary is None for c in calls)
    assert any(c.kernel_code for c in calls)
    assert all(k.code for k in run.kernels)


def test_a_changed_file_is_said_not_misread(tmp_path, monkeypatch):
    """A file rewritten after it was read: a line that is no longer there is not shown as another
    line's content, and nothing raises."""
    monkeypatch.setenv("KTUI_LAZY_MIN", "0")
    p = tmp_path / "t.jsonl"
    p.write_bytes(SEED_TRACE.read_bytes())
    run = load(p)
    code = [c for c in run.calls if c.kernel_code]
    assert code
    p.write_bytes(b'{"tick": 1, "ts_ms": 1, "payload": {"kind": "system", "note": "x"}}\n')
    for c in run.calls:
        c._args._cache.clear()  # the run's LineSource (shared by its lazy calls and results)
        args = c.args
        assert "unavailable" in args and "could not be read back" in args["unavailable"]
        if c.result is not None:
            assert "could not be read back" in c.result.summary
    assert all(k.code == "" or "attachment" in k.code for k in run.kernels)


def test_ids_and_state_diffs_are_read_back(tmp_path, monkeypatch):
    """A paired call keeps no id and a call no state diff entries: both are read back from their
    lines, equal to what a load that keeps everything holds (a diff before any call goes to the
    next call; a list of entries keeps its objects only; a dangling call keeps its id)."""
    import orjson

    from ktui.trace.model import READ_BACK

    def ev(tick, actor, **p):
        return orjson.dumps({"tick": tick, "ts_ms": 1000 + tick, "actor": actor, "payload": p})

    lines = [
        ev(1, "a", kind="state_diff", diff={"field": "before_any_call", "new": 1}),
        ev(2, "a", kind="tool_call", name="compile_kernel", id="call-1", args={"kernel_code": "k"}),
        ev(3, "a", kind="state_diff", diff=[{"field": "x", "new": [1, 2]}, 7, {"field": "y"}]),
        ev(4, "a", kind="tool_result", name="compile_kernel", id="call-1", result={"ok": True}),
        ev(5, "a", kind="state_diff", diff={"field": "z", "old": None, "new": {"deep": [1]}}),
        ev(6, "a", kind="tool_call", name="run_correctness", id="call-2", args={}),
    ]
    p = tmp_path / "diffs.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setenv("KTUI_LAZY_MIN", str(1 << 40))
    kept = load(p)
    monkeypatch.setenv("KTUI_LAZY_MIN", "0")
    lazy_run = load(p)
    first, dangling = lazy_run.calls
    assert first._id is READ_BACK and first.id == "call-1"
    assert dangling._id == "call-2"  # still waiting for a result: kept for the pairing
    assert list(first._diffs) == [1, 3, 5]  # line numbers, not entries
    assert first.diffs == kept.calls[0].diffs == [{"field": "before_any_call", "new": 1}, {"field": "x", "new": [1, 2]},
                                                  {"field": "y"}, {"field": "z", "old": None, "new": {"deep": [1]}}]
    assert everything(lazy_run) == everything(kept)
    p.write_bytes(b"\n" * len(p.read_bytes()))  # rewritten: said, not misread
    first._args._cache.clear()
    assert all("could not be read back" in d["unavailable"] for d in first.diffs)
    assert first.id is None
