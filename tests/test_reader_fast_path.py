"""The reader's fast path (``LineParser.feed_batch``: the common, well-formed event handled in one
loop, issue 25) builds the same run as feeding every line on its own through ``feed_line``'s
field-by-field checks: over every fixture trace and over lines built to sit on each edge of the
fast path (a BOM, CRLF, integers past 64 bits, booleans and floats where integers go, nesting
at the depth limit, an empty kind, a non-string actor, extra envelope fields, blank lines)."""

from __future__ import annotations

import orjson
import pytest
from test_lazy_equivalence import TRACES, everything

from ktui.trace import load
from ktui.trace.reader import LineParser, load_bytes


def _one_at_a_time(self, lines):
    for raw in lines:
        self.feed_line(raw)


@pytest.fixture
def counted(monkeypatch):
    """How many lines went through ``feed_line`` (the fast path takes the rest)."""
    seen = {"n": 0}
    orig = LineParser.feed_line

    def feed_line(self, raw, terminated=True):
        seen["n"] += 1
        return orig(self, raw, terminated)

    monkeypatch.setattr(LineParser, "feed_line", feed_line)
    return seen


def _deep(depth: int) -> object:
    v: object = 1
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


def _edge_trace() -> bytes:
    def ev(**kw) -> bytes:
        return orjson.dumps(kw)

    lines = [
        b"\xef\xbb\xbf" + ev(tick=1, ts_ms=10, actor="harness", payload={"kind": "user_message", "text": "go"}),
        ev(tick=2, ts_ms=11, actor="agent", payload={"kind": "assistant_message", "text": "hi"}) + b"\r",
        ev(tick=3, ts_ms=12, actor="agent", payload={"kind": "tool_call", "name": "compile_kernel", "id": "a",
                                                     "args": {"kernel_code": "__global__ void k() {}"}}),
        b'{"tick": 18446744073709551615, "ts_ms": 13, "actor": "agent", '
        b'"payload": {"kind": "tool_result", "name": "compile_kernel", "id": "a", "result": {"ok": true}}}',
        b'{"tick": 9223372036854775808, "ts_ms": 9223372036854775807, "actor": "agent", '
        b'"payload": {"kind": "progress"}}',
        b'{"tick": 4, "ts_ms": 18446744073709551615, "actor": "agent", "payload": {"kind": "progress"}}',
        b'{"tick": -9223372036854775808, "ts_ms": 14, "payload": {"kind": "progress"}}',
        ev(tick=True, ts_ms=15, actor="agent", payload={"kind": "progress"}),
        ev(tick=5, ts_ms=15.5, actor="agent", payload={"kind": "progress"}),
        ev(tick=6, ts_ms=16, actor=7, payload={"kind": "progress"}),
        ev(tick=7, ts_ms=17, actor="agent", payload={"kind": ""}),
        ev(tick=8, ts_ms=18, actor="agent", payload={"kind": 3}),
        ev(tick=9, ts_ms=19, actor="agent", payload="not an object"),
        ev(tick=10, actor="agent", payload={"kind": "progress"}),
        ev(tick=11, ts_ms=20, actor="agent", message_id="msg-1", payload={"kind": "progress"}),
        ev(tick=12, ts_ms=21, costs={"usd": 1}, payload={"kind": "progress"}),
        ev(tick=13, ts_ms=22, actor="agent", payload={"kind": "state_diff", "diff": _deep(63)}),
        ev(tick=14, ts_ms=23, actor="agent", payload={"kind": "state_diff", "diff": _deep(70)}),
        ev(tick=15, ts_ms=24, actor="agent", payload={"kind": "tool_call", "name": "run", "args": _deep(66)}),
        b"",
        b"   ",
        b"[1, 2]",
        b"{not json",
        b'{"tick": 16, "ts_ms": 25, "actor": "agent", "payload": {"kind": "assistant_message", "text": "\xff"}}',
        ev(tick=17, ts_ms=-3, actor="agent", payload={"kind": "tool_call", "name": 5}),
        ev(tick=18, ts_ms=26, actor="user", payload={"kind": "cost", "unit": "tokens_in", "amount": 3}),
        ev(tick=19, ts_ms=27, actor="agent", payload={"kind": "some_new_kind", "x": 1}),
    ]
    return b"\n".join(lines) + b"\n" + ev(tick=20, ts_ms=28, payload={"kind": "progress"})[:-3]


def test_edge_lines_build_the_same_run(monkeypatch, counted):
    data = _edge_trace()
    fast = everything(load_bytes(data, "edge.jsonl"))
    n_fast = counted["n"]
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    counted["n"] = 0
    slow = everything(load_bytes(data, "edge.jsonl"))
    assert fast == slow
    assert counted["n"] == data.count(b"\n") + 1  # every line, one at a time
    assert n_fast < counted["n"] - 5  # the fast path took the common lines itself
    assert fast["problems"]  # the bad lines are still said


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_fixture_traces_build_the_same_run(path, monkeypatch):
    fast = everything(load(path))
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    assert everything(load(path)) == fast
