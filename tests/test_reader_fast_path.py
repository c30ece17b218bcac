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
        ev(tick=21, ts_ms=29, actor="harness", payload={"kind": "system", "note": "ensemble: backend=x",
                                                         "deep": _deep(70)}),
        ev(tick=22, ts_ms=30, actor="harness", payload={"kind": "system", "note": _deep(70)}),
        ev(tick=23, ts_ms=31, actor="user", payload={"kind": "user_message", "text": "more", "deep": _deep(70)}),
        ev(tick=24, ts_ms=32, actor="agent", payload={"kind": "progress", "deep": _deep(70)}),
        ev(tick=25, ts_ms=33, actor="agent", payload={"kind": "some_new_kind", "deep": _deep(70)}),
        ev(tick=26, ts_ms=34, actor="agent", payload={"kind": "message", "content": [_deep(70)]}),
        ev(tick=27, ts_ms=35, actor="agent", payload={"kind": "cost", "unit": "usd", "amount": 1, "d": _deep(70)}),
        ev(tick=28, ts_ms=36, actor="agent", payload={"kind": "tool_call", "name": "compile_kernel", "id": "d",
                                                      "args": {"kernel_code": "__global__ void d() {}",
                                                               "deep": _deep(70)}}),
        ev(tick=29, ts_ms=37, actor="agent", payload={"kind": "tool_result", "name": "compile_kernel", "id": "d",
                                                      "result": {"ok": False, "data": _deep(70)}}),
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


def test_edge_lines_from_a_file_build_the_same_run(tmp_path, monkeypatch):
    """From a file, long lines are read back on demand: a deeply nested tool call is not kept,
    so the fast path takes it without counting its brackets; read back, it is capped alike."""
    p = tmp_path / "edge.jsonl"
    p.write_bytes(_edge_trace())
    fast_run = load(p)
    fast = everything(fast_run)
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    slow_run = load(p)
    assert everything(slow_run) == fast
    deep = [c for c in fast_run.calls if c.id == "d"]
    assert deep and deep[0].lazy and "nested deeper" in orjson.dumps(deep[0].args).decode()


@pytest.mark.parametrize("ts", [2**62, -(2**62), 2**62 - 1, 2**63 - 1])
def test_run_times_from_lines_beside_the_fast_path(ts, monkeypatch):
    """The run's first and last times, kept in the fast loop while it runs, agree with line by
    line also when they come from lines it leaves to feed_line (times at its bounds)."""
    data = b"\n".join([
        b'{"tick": 1, "ts_ms": %d, "actor": "a", "payload": {"kind": "progress"}}' % ts,
        b'{"tick": 2, "ts_ms": %d, "actor": "a", "payload": {"kind": "progress"}}' % ts,
        b"not json",
        b'{"tick": 3, "ts_ms": 5, "actor": "a", "payload": {"kind": ""}}',
    ]) + b"\n"
    fast = load_bytes(data, "t.jsonl")
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    slow = load_bytes(data, "t.jsonl")
    assert (fast.started_ms, fast.ended_ms) == (slow.started_ms, slow.ended_ms) == (ts, ts)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_fixture_traces_build_the_same_run(path, monkeypatch):
    fast = everything(load(path))
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    assert everything(load(path)) == fast


def test_columns_widen_instead_of_cutting(monkeypatch):
    """The event log's narrow columns (32-bit lines, lengths and turns, 16-bit kinds and actors)
    widen when a value does not fit: 70,000 kinds (a hostile trace) read back as written, the
    same through the fast path as line by line; a line number or length past 32 bits too."""
    n = 70_000
    data = b"\n".join(orjson.dumps({"tick": i, "ts_ms": i, "actor": f"a{i % 3}", "payload": {"kind": f"k{i}"}})
                      for i in range(n)) + b"\n"
    run = load_bytes(data, "kinds.jsonl")
    assert len(run.events) == n and run.events._kind.typecode == "q"
    assert [e.kind for e in run.events[-3:]] == [f"k{i}" for i in range(n - 3, n)]
    assert run.events[n - 1].line == n and run.events[n - 1].tick == n - 1
    fast = everything(run)
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    assert everything(load_bytes(data, "kinds.jsonl")) == fast

    from ktui.trace.eventlog import Event, EventLog

    log = EventLog()
    log.append(Event(1, 0, 10, "a", None, 5, None, 0))
    log.append(Event(2**32 + 5, 2**40, 2**32 + 1, "a", 3, None, "x", 2**31))
    assert log._line.typecode == "q"
    assert [(e.line, e.offset, e.length, e.tick, e.ts_ms, e.actor, e.turn) for e in log] == [
        (1, 0, 10, None, 5, None, 0), (2**32 + 5, 2**40, 2**32 + 1, 3, None, "x", 2**31)]


def test_offsets_of_lines_taken_in_bulk_point_at_their_lines(tmp_path, monkeypatch):
    """The fast path appends the line, offset and length columns of the lines it takes in runs
    (one run between two lines it leaves to feed_line): every event's offset and length still
    find its own line in the file, also across reads (small chunks), blank, bad and CRLF lines."""
    import ktui.trace.reader as reader

    monkeypatch.setattr(reader, "CHUNK", 1000)
    rows = []
    for i in range(400):
        line = orjson.dumps({"tick": i, "ts_ms": i, "actor": "a", "payload": {"kind": "progress", "n": "x" * (i % 37)}})
        rows.append(line + (b"\r" if i % 11 == 0 else b""))
        if i % 13 == 0:
            rows.append(b"" if i % 2 else b"{bad json")
    p = tmp_path / "t.jsonl"
    data = b"\n".join(rows) + b"\n"
    p.write_bytes(data)
    run = load(p)
    assert len(run.events) == 400
    for e in run.events:
        raw = data[e.offset:e.offset + e.length]
        assert orjson.loads(raw)["tick"] == e.tick
        assert data.count(b"\n", 0, e.offset) == e.line - 1
    fast = everything(run)
    monkeypatch.setattr(LineParser, "feed_batch", _one_at_a_time)
    assert everything(load(p)) == fast


def test_a_cost_counts_only_a_number_that_is_not_a_boolean():
    """A cost's amount is an int or a float (a boolean is not one, nor a string); its unit a
    string: anything else is a warning, and counts nothing."""
    def ev(tick, **p):
        return orjson.dumps({"tick": tick, "ts_ms": tick, "actor": "agent", "payload": {"kind": "cost", **p}})

    data = b"\n".join([
        ev(1, unit="tokens_in", amount=10), ev(2, unit="tokens_in", amount=True), ev(3, unit="tokens_out", amount="7"),
        ev(4, unit="usd", amount=0.5), ev(5, unit=3, amount=1), ev(6, unit="tokens_out", amount=2),
    ]) + b"\n"
    run = load_bytes(data, "costs.jsonl")
    assert run.tokens_by_actor == {"agent": {"tokens_in": 10, "usd": 0.5, "tokens_out": 2}}
    bad = sorted(p.line for p in run.problems if "numeric 'amount'" in p.message)
    assert bad == [2, 3, 5]
    assert (run.turns[0].tokens_in, run.turns[-1].tokens_out) == (10, 2)


def test_feed_batch_takes_any_iterable_of_lines():
    """The fast path indexes its batch (the event log's columns in bulk): lines given as a
    generator build the same run as a list of them."""
    data = _edge_trace()
    lines = data.split(b"\n")[:-1]
    runs = []
    for batch in (lines, (x for x in lines)):
        from ktui.trace.builder import Builder

        b = Builder("edge.jsonl")
        LineParser(b).feed_batch(batch)
        runs.append(everything(b.finish()))
    assert runs[0] == runs[1] and runs[0]["events"]


def test_results_read_back_without_a_summary_say_what_kept_ones_say(tmp_path, monkeypatch):
    """A result read back on demand gets its status while reading without its summary where the
    status needs none (an error, an effect's ``ok``); every kind of result still says the same
    status, brief, case errors, summary, effect and meta as when everything is kept."""
    def ev(tick, kind, **p):
        return orjson.dumps({"tick": tick, "ts_ms": tick, "actor": "agent", "payload": {"kind": kind, **p}})

    meta_failed = "compiled\n\n[meta] " + orjson.dumps({"passed": False}).decode()
    results = [
        {"result": {"ok": True, "summary": meta_failed}},  # ok wins over the trailer
        {"result": {"ok": False, "data": [1, 2]}},  # no summary: derived
        {"result": "run_correctness FAILED\n[case 1] mismatch\n[case 2] nan"},  # the verdict in the text
        {"result": {"ok": True}, "is_error": True},  # an error wins over ok
        {"result": meta_failed},  # no ok: the trailer decides
        {"result": {"ok": False, "summary": "FAILED\n[case 0] shape"}},  # failed correctness: its cases
        {"result": [1, "two"]},  # neither object nor text
        {"text": "plain text result"},
        {"result": {"effect": {"ok": True, "device_name": "H100"}, "costs": {"gpu_seconds": 2}}},  # V0
    ]
    lines, tick = [], 0
    for i, r in enumerate(results):
        for with_kernel in (False, True):
            name = "run_correctness" if i % 2 else "check"
            args = {"kernel_code": f"__global__ void k{i}() {{}}"} if with_kernel else {"x": i}
            tick += 1
            lines.append(ev(tick, "tool_call", name=name, id=f"c{tick}", args=args))
            tick += 1
            lines.append(ev(tick, "tool_result", name=name, id=f"c{tick - 1}", **r))
    p = tmp_path / "results.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setenv("KTUI_LAZY_MIN", str(1 << 40))
    kept = everything(load(p))
    monkeypatch.setenv("KTUI_LAZY_MIN", "0")
    lazy_run = load(p)
    assert all(c.lazy for c in lazy_run.calls)
    assert everything(lazy_run) == kept
    statuses = [c.status for c in lazy_run.calls]
    assert statuses[:8] == ["ok", "ok", "failed", "failed", "failed", "failed", "error", "error"]
    assert [u.summary for k in lazy_run.kernels for u in k.uses] == [
        "compiled", "run_correctness failed: [1, 2]", "[case 1] mismatch\n[case 2] nan", "run_correctness ok",
        "compiled", "[case 0] shape", "[1, 'two']", "plain text result", "check: H100"]
    assert [c.result.case_errors for c in lazy_run.calls][4:6] == [["mismatch", "nan"]] * 2
    assert sum(t.gpu_seconds or 0 for t in lazy_run.turns) == 4.0  # the V0 envelope's costs, twice
