"""The row skim (:mod:`ktui.trace.index.rowskim`) gives the row the full reader and builder give,
field by field, or gives up and says so.

Compared, for each file, the row skim's row (``skim._row``: no full reader) with the row of the
full reader and builder (``summarize`` with ``ROW_SKIM`` off): every real trace held (the repo's
fixtures, ../shared/fixtures and formats, the bundled trace), the hostile files of
``tests/test_index_skim_equivalence.py``, traces generated as ``benchmarks/bench_runs.py`` makes
them, and every held ensemble trace changed line by line at random (lines dropped, repeated,
swapped, cut, their actor or amount or ts changed, events of other kinds put in between). Where the
row skim reads a file its row must be equal; where it gives up, the full reader reads it. The
share it reads is checked too: a skim that gave up on everything would pass the rest.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from ktui.trace.index import TraceFile, rowskim, skim
from tests.test_index_skim_equivalence import HELD, HOSTILE, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))


def _tf(path: Path) -> TraceFile:
    st = os.stat(path)
    return TraceFile(str(path), os.path.realpath(path), st.st_size, st.st_mtime_ns, False, str(path))


def _full(tf: TraceFile) -> dict:
    was = skim.ROW_SKIM
    skim.ROW_SKIM = False
    try:
        return skim.summarize(tf).to_dict()
    finally:
        skim.ROW_SKIM = was


def _compare(path: Path) -> bool | None:
    """True: the row skim read the file and its row is the full reader's; False: it gave up;
    None: not an ensemble trace (another format, or no trace: the row skim is not asked)."""
    tf = _tf(path)
    data = path.read_bytes()
    if len(data) >= skim.CHUNK or skim._imported(tf, data) is not None:
        return None
    row = skim._row(tf, data)
    if row is None:
        return False
    full = _full(tf)
    got = row.to_dict()
    diff = {k: (got[k], full[k]) for k in full if got.get(k) != full[k]}
    assert diff == {}, f"{path}: row skim != full reader: {diff}"
    return True


def _ensemble_held() -> list[Path]:
    out = [p for p in HELD if p.name.endswith(".jsonl")] + [ROOT / "ktui" / "data" / "popcorn_l1_p27_grok-4.3.jsonl"]
    return sorted(set(out))


@pytest.mark.parametrize("path", _ensemble_held(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_held_trace(path):
    _compare(path)


def test_the_row_skim_reads_the_real_ensemble_traces():
    """Every real ensemble trace held (PopcornBench V0 and V1, KTBench V1-V3, the recorder's own
    multi-actor sample, the seed) is read by the row skim, not given up to the full reader."""
    real = sorted((ROOT.parent / "shared" / "fixtures").rglob("*.jsonl")) + [ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"]
    assert len(real) >= 7
    assert {p.name: _compare(p) for p in real} == {p.name: True for p in real}
    read = [_compare(p) for p in _ensemble_held()]
    assert read.count(True) >= 40, read.count(True)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files(tmp_path, name):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(HOSTILE[name]())
    _compare(p)


def test_what_the_row_skim_gives_up_on(tmp_path):
    """A byte order mark, a line that is not JSON, a CR-only file, an event without a tick: the
    full reader reads them (it says line by line what is wrong); a file still being written (its
    last line cut) and blank lines are read by the row skim."""
    cases = {"bom": False, "blank_and_junk": False, "odd_envelopes": False, "truncated": True, "plain": True,
             "deep_result": True, "huge_kernel_line": True, "reordered_keys": True}
    got = {}
    for name in cases:
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(HOSTILE[name]())
        got[name] = _compare(p)
    assert got == cases
    cr = tmp_path / "cr.jsonl"
    cr.write_bytes(HOSTILE["plain"]().replace(b"\n", b"\r"))
    assert _compare(cr) is False
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(HOSTILE["plain"]().replace(b"\n", b"\n\n", 3))
    assert _compare(blank) is True


def test_generated_sweep_traces(tmp_path):
    """Traces as the benchmark's sweep makes them: the seed's turns repeated, each with its model,
    persona, problem, outcome and speedup."""
    import bench_runs

    tpl = bench_runs.SeedTemplate()
    rng = random.Random(7)
    outcomes = set()
    for i in range(24):
        data, _meta = tpl.trace(i, rng, 1 + i % 3)
        p = tmp_path / f"g{i}.jsonl"
        p.write_bytes(data)
        assert _compare(p) is True
        outcomes.add(skim.summarize(_tf(p)).outcome)
    assert outcomes == {"passed", "failed"}


_KINDS = [
    {"kind": "cost", "unit": "tokens_in", "amount": 77},
    {"kind": "cost", "unit": "tokens_out", "amount": 12.5},
    {"kind": "cost", "unit": "usd", "amount": 0.01},
    {"kind": "cost", "unit": "gpu_seconds", "amount": 1.25},
    {"kind": "cost", "unit": "tokens_in", "amount": 1e400},
    {"kind": "cost", "unit": "tokens_out", "amount": "many"},
    {"kind": "agent_message", "text": "**Plan**\n\nnext"},
    {"kind": "assistant_message", "text": "```python\nclass ModelNew:\n    pass\n```"},
    {"kind": "message", "role": "assistant", "content": "<think>hm</think>done"},
    {"kind": "message", "role": "user", "content": [{"text": "part"}, 3]},
    {"kind": "user_message", "text": "x" * 300},
    {"kind": "tool_call", "id": "z1", "name": "submit_kernel", "args": {"kernel_code": "import torch\n"}},
    {"kind": "tool_call", "name": "run_correctness", "args": "not an object"},
    {"kind": "tool_result", "id": "z1", "name": "submit_kernel", "result": {"ok": True, "speedup": 3.5}},
    {"kind": "tool_result", "name": "run_correctness", "text": "run_correctness FAILED: bad"},
    {"kind": "tool_result", "name": "nobody", "result": "orphan"},
    {"kind": "state_diff", "diff": [{"field": "kernel_submissions", "new": {"speedup": 9.0}}]},
    {"kind": "state_diff", "diff": 5},
    {"kind": "system", "note": "scheduler quiescent; halting"},
    {"kind": "system", "note": "backend error (m): 503"},
    {"kind": "system", "note": '{"kind": "score", "value": 0.5, "explanation": "x"}'},
    {"kind": "system", "note": 7},
    {"kind": "progress", "id": "p", "tool": "t", "fraction": 0.5},
    {"kind": "no_such_kind", "x": [[[1]]]},
]


def _mutate(lines: list[bytes], rng: random.Random) -> list[bytes]:
    out = list(lines)
    for _ in range(rng.randint(1, 6)):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(7)
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(i, out[i])
        elif op == 2 and i + 1 < len(out):
            out[i], out[i + 1] = out[i + 1], out[i]
        elif op == 3:
            out[i] = out[i][: rng.randrange(len(out[i]) + 1)]  # cut (mostly not JSON any more)
        else:
            try:
                ev = json.loads(out[i])
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if op == 4:
                ev["actor"] = rng.choice([None, "other", "kernel_author", "harness", "assistant"])
            elif op == 5:
                ev["ts_ms"] = rng.choice([0, -5, (ev.get("ts_ms") or 0) + 10**6, 2**63])
            else:
                new = dict(ev, payload=rng.choice(_KINDS), message_id=rng.choice([None, "msg-x", 3]))
                out.insert(i, json.dumps(new).encode())
                continue
            out[i] = json.dumps(ev).encode()
    return out


def test_every_held_trace_changed_at_random(tmp_path):
    """The row skim's rules are the builder's on orders and lines no producer wrote: 12 random
    changes of every held ensemble trace, each compared field by field."""
    rng = random.Random(2024)
    read = gave_up = 0
    for src in _ensemble_held():
        data = src.read_bytes()
        if len(data) >= skim.CHUNK:
            continue
        lines = data.split(b"\n")
        for k in range(12):
            p = tmp_path / f"{src.stem}-{k}.jsonl"
            p.write_bytes(b"\n".join(_mutate(lines, rng)))
            got = _compare(p)
            read += got is True
            gave_up += got is False
    assert read > 300 and gave_up > 30, (read, gave_up)


def test_the_row_skim_is_what_summarize_uses():
    """``summarize`` reads an ensemble trace with the row skim (its counter moves), and the full
    reader when ROW_SKIM is off."""
    seed = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
    before = dict(rowskim.stats)
    a = skim.summarize(_tf(seed))
    assert rowskim.stats["row"] == before["row"] + 1 and rowskim.stats["full"] == before["full"]
    b = _full(_tf(seed))
    assert rowskim.stats["full"] == before["full"] + 1
    assert a.to_dict() == b


def test_every_cost_line_takes_the_one_cost_path(monkeypatch):
    """Review D2: the row skim had two copies of the builder's cost rules (the loop's own for
    tokens of a named actor, ``_Rows.cost`` for the rest), which could drift apart; every cost
    line now goes through ``_Rows.cost``, and the row is still the full reader's."""
    seed = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
    n_cost = sum(json.loads(ln)["payload"]["kind"] == "cost" for ln in seed.read_bytes().splitlines() if ln.strip())
    seen = []
    real = rowskim._Rows.cost

    def counted(self, line, *a):
        seen.append(line)
        return real(self, line, *a)

    monkeypatch.setattr(rowskim._Rows, "cost", counted)
    assert n_cost > 20 and _compare(seed) is True
    assert len(seen) == n_cost
