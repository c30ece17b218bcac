"""Bad input never raises: problems carry line numbers, every other event is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, SEED_TRACE, needs_shared
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ktui.trace import load
from ktui.trace.reader import Follower, load_bytes

GOOD = [
    {"tick": 0, "ts_ms": 1000, "actor": None, "message_id": None,
     "payload": {"kind": "system", "note": "ensemble: backend=openai key=ABCDEF..."}},
    {"tick": 1, "ts_ms": 1001, "actor": "harness", "message_id": "msg-" + "a" * 32,
     "payload": {"kind": "user_message", "text": "Begin."}},
    {"tick": 2, "ts_ms": 2000, "actor": "agent", "message_id": None,
     "payload": {"kind": "cost", "unit": "tokens_in", "amount": 10.0, "running_total": 10.0}},
    {"tick": 2, "ts_ms": 2000, "actor": "agent", "message_id": None,
     "payload": {"kind": "tool_call", "id": "c1", "name": "compile_kernel", "args": {"kernel_code": "x"},
                 "seed": False}},
    {"tick": 3, "ts_ms": 2500, "actor": "agent", "message_id": None,
     "payload": {"kind": "tool_result", "id": "c1", "name": "compile_kernel",
                 "result": {"ok": True, "tool": "compile_kernel", "summary": "compile_kernel PASSED"},
                 "is_error": False, "seed": False}},
]


def lines(events) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def test_truncated_last_line_is_incomplete_not_error():
    data = lines(GOOD) + b'{"tick": 4, "ts_ms": 26'
    run = load_bytes(data)
    assert run.problems == [] and run.incomplete
    assert len(run.turns) == 1 and run.turns[0].calls[0].status == "ok"


def test_garbage_and_wrong_types_keep_other_events():
    bad = [
        b"\x00\x01garbage{{{",
        b"\xff\xfe invalid utf8 \xc3\x28",
        b"[1, 2, 3]",
        b'{"tick": 1, "ts_ms": 5}',
        b'{"tick": "x", "ts_ms": "y", "actor": 5, "payload": {"kind": "agent_message", "text": 3}}',
        b'{"payload": {"kind": 7}}',
        b'{"payload": {"kind": "tool_call", "name": 5, "args": []}}',
        b'{"payload": {"kind": "tool_result", "name": "nothing_pending", "result": "x"}}',
        b'{"payload": {"kind": "state_diff", "diff": "nope"}}',
        b'{"payload": {"kind": "cost", "unit": null}}',
        b'{"payload": {"kind": "totally_new_kind", "x": 1}}',
        b"[" * 5000 + b"]" * 5000,
    ]
    data = lines(GOOD[:3]) + b"\n".join(bad) + b"\n" + lines(GOOD[3:])
    run = load_bytes(data)
    probs = {p.line: p for p in run.problems}
    # GOOD[:3] are lines 1-3, bad lines are 4..15, GOOD[3:] are lines 16-17
    assert {4, 5, 6, 7, 9, 10, 13, 15} <= set(probs)
    assert probs[4].message.startswith("not valid JSON")
    assert probs[6].message.startswith("event is a JSON list")
    assert probs[7].message.startswith("'payload' is missing")
    assert all(p.excerpt is not None for p in run.problems)
    assert run.turns and run.turns[0].calls[0].status == "ok"  # pairing survived
    assert any(e.kind == "totally_new_kind" for e in run.events)  # unknown kinds kept


def test_empty_file_is_a_problem(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    run = load(p)
    assert run.problems and "empty" in run.problems[0].message


def test_huge_line(tmp_path):
    big = dict(GOOD[3])
    big["payload"] = dict(big["payload"], args={"kernel_code": "x" * (50 << 20)})
    p = tmp_path / "big.jsonl"
    p.write_bytes(lines(GOOD[:3]) + lines([big]) + lines(GOOD[4:]))
    run = load(p)
    assert run.problems == []
    assert len(run.kernels[0].code) == 50 << 20


def test_reader_never_writes(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(lines(GOOD))
    before = (p.stat().st_mtime_ns, p.read_bytes())
    os.chmod(p, 0o444)
    load(p)
    f = Follower(p)
    f.poll()
    assert (p.stat().st_mtime_ns, p.read_bytes()) == before


def test_follower_reads_only_appended_lines(tmp_path):
    p = tmp_path / "live.jsonl"
    p.write_bytes(lines(GOOD[:3]))
    f = Follower(p)
    assert len(f.run.turns) == 1 and not f.run.turns[0].calls
    with open(p, "ab") as fh:
        fh.write(b'{"tick": 3')
    assert f.poll() and f.run.incomplete  # a partial line alone is news too
    assert not f.poll()
    p.write_bytes(p.read_bytes()[: -len(b'{"tick": 3')])
    f = Follower(p)
    full = json.dumps(GOOD[4]).encode()
    with open(p, "ab") as fh:
        fh.write(lines([GOOD[3]]) + full[:30])
    assert f.poll()
    assert f.run.turns[0].calls[0].status == "missing" and f.run.incomplete
    with open(p, "ab") as fh:
        fh.write(full[30:] + b"\n")
    assert f.poll()
    assert f.run.problems == []
    assert f.run.turns[0].calls[0].status == "ok" and not f.run.incomplete


event_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
kinds = st.sampled_from(["system", "tool_call", "tool_result", "cost", "agent_message", "message",
                         "assistant_message", "state_diff", "user_message", "weird"])
events = st.fixed_dictionaries({
    "tick": event_values, "ts_ms": event_values, "actor": st.none() | st.sampled_from(["a", "b"]) | event_values,
    "payload": st.fixed_dictionaries({"kind": kinds}, optional={
        "note": event_values, "name": st.sampled_from(["submit_kernel", "compile_kernel"]) | event_values,
        "args": event_values, "result": event_values, "text": event_values, "id": event_values,
        "unit": st.sampled_from(["tokens_in", "usd", "gpu_seconds"]) | event_values, "amount": event_values,
        "diff": event_values, "content": event_values, "is_error": event_values}),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events | st.binary(max_size=40), max_size=12))
def test_fuzz_never_raises(items):
    data = b"\n".join(json.dumps(i).encode() if isinstance(i, dict) else i for i in items)
    run = load_bytes(data)
    for p in run.problems:
        assert p.line >= 0 and isinstance(p.message, str)


def _ktui(*args):
    return subprocess.run([sys.executable, "-m", "ktui", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_cli_bad_paths_one_clear_line(tmp_path):
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    for args in (["show", str(tmp_path)], ["show", str(tmp_path / "missing.jsonl")],
                 ["validate", str(tmp_path / "missing.jsonl")]):
        r = _ktui(*args)
        assert r.returncode != 0
        assert "Traceback" not in r.stderr and r.stderr.strip().startswith("ktui:")
    r = _ktui("show", str(binary))
    assert "Traceback" not in r.stderr + r.stdout
    r = _ktui("validate", str(binary))
    assert r.returncode == 1 and "line 1:" in r.stdout and "Traceback" not in r.stderr


def test_cli_show_seed_facts():
    r = _ktui("show", str(SEED_TRACE))
    out = r.stdout
    assert r.returncode == 0, r.stderr
    for needle in ("L1 P27 27_permutation_all_to_all.py", "grok-4.3", "9 / 12", "34,544", "1146.3s",
                   "Expected a 'cuda' device type for generator but found 'cpu'",
                   "expected scalar type Int but found Long", "(5 / 5) trials all matched", "1.23x",
                   "31.2 μs", "unit_ms_as_us", "kernel launches", "ref launches"):
        assert needle in out, needle
    assert "tool calls 9" in out
    launches = [ln for ln in out.splitlines() if "kernel launches " in ln or "ref launches" in ln]
    assert any(" 5" in ln for ln in launches) and any(" 8" in ln for ln in launches)


@needs_shared
def test_cli_show_json_and_validate_fixtures():
    r = _ktui("show", str(SEED_TRACE), "--json")
    d = json.loads(r.stdout)
    assert d["counts"] == {"events": 70, "turns": 9, "tool_calls": 9, "seed_calls": 1, "kernel_versions": 4}
    r = _ktui("validate", str(ROOT.parent / "shared" / "fixtures"), str(SEED_TRACE))
    assert r.returncode == 0 and "7 files, 0 with problems" in r.stdout


def test_untrusted_text_is_literal(tmp_path):
    evil = {"tick": 2, "ts_ms": 2000, "actor": "agent", "message_id": "msg-" + "b" * 32,
            "payload": {"kind": "agent_message", "text": "[bold red]x[/] \x1b[31mred\x1b[0m \r\x07 [link=file:///]"}}
    p = tmp_path / "evil.jsonl"
    p.write_bytes(lines(GOOD[:3] + [evil] + GOOD[3:]))
    r = _ktui("show", str(p), "--turn", "0")
    assert r.returncode == 0, r.stderr
    assert "[bold red]x[/]" in r.stdout and "[link=file:///]" in r.stdout
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and "\r" not in r.stdout


def test_invalid_utf8_inside_strings_keeps_the_events(tmp_path):
    """Three lines with one bad byte each inside a string: decoded lossily, every event kept, each
    line reported (they were dropped whole: a short trace became "no readable events")."""
    from ktui.trace.index import summarize

    out, n = [], 0
    for line in SEED_TRACE.read_bytes().split(b"\n"):
        if n < 3 and b'"text":"' in line:
            line = line.replace(b'"text":"', b'"text":"caf\xe9 ', 1)
            n += 1
        out.append(line)
    assert n == 3
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(b"\n".join(out))
    seed, run = load(SEED_TRACE), load(p)
    assert len(run.events) == len(seed.events) and len(run.turns) == len(seed.turns)
    assert [(x.severity, "UTF-8" in x.message) for x in run.problems] == [("warning", True)] * 3
    from ktui.view import build_view

    v = build_view(run)
    shown = [x for b in [*v.preamble, *(b for t in v.turns for b in t.blocks)] for x in b.plain_lines()]
    assert sum("caf\ufffd " in x for x in shown) == 3
    s = summarize(str(p))
    assert s.turns == len(seed.turns)
    # a binary file stays "not a trace"
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    assert not load(binary).events


def test_numbers_python_json_writes_keep_the_events(tmp_path):
    """Python's ``json.dumps`` writes ``NaN``, ``Infinity`` and ``-Infinity`` by default (a speedup
    over a zero time, a failed timing), and lone surrogate escapes; orjson refuses all of them, so
    each such line was dropped whole: a run whose final result held ``"speedup": Infinity`` became
    "incomplete" with a dangling call. Now the event is kept (NaN and the infinities read as no
    value, as the index cache writes them; a lone surrogate as U+FFFD), the line reported as a
    warning."""
    from ktui.trace.index import summarize

    out, n = [], 0
    for line in SEED_TRACE.read_bytes().split(b"\n"):
        if b'"kind":"tool_result"' in line and line.endswith(b"}}"):
            extra = [b'"x_nan": NaN', b'"x_inf": Infinity', b'"x_ninf": -Infinity', b'"x_big": 1e400',
                     b'"x_sur": "a\\ud800b"'][n % 5]
            line = line[:-2] + b", " + extra + b"}}"
            n += 1
        out.append(line)
    assert n >= 5
    p = tmp_path / "python_json.jsonl"
    p.write_bytes(b"\n".join(out))
    seed, run = load(SEED_TRACE), load(p)
    assert len(run.events) == len(seed.events) and len(run.turns) == len(seed.turns)
    assert run.outcome == seed.outcome
    assert len(run.problems) == n and {x.severity for x in run.problems} == {"warning"}
    assert all("NaN" in x.message for x in run.problems)
    assert summarize(str(p)).outcome == summarize(str(SEED_TRACE)).outcome
    r = _ktui("show", str(p), "--json")
    assert r.returncode == 0 and "\ud800" not in r.stdout and json.loads(r.stdout)
