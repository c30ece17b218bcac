"""What a loaded run keeps per event is compact (issue 25, memory): a lazy call or result holds no
record of where its line is (the event log has that), repeated short texts (what a kernel use
says, a failed correctness run's case errors) are one string each, and the event log's columns
take 40 bytes an event (line, length and turn 32-bit; kind and actor 16-bit)."""

from __future__ import annotations

import orjson

from ktui.trace import load


def _trace(path, n: int) -> None:
    out = []
    for i in range(n):
        code = f"import torch\n# version {i % 3}\n" + "x = 1\n" * 60  # long lines: read back on demand
        out.append({"tick": 3 * i, "ts_ms": 1000 + 3 * i, "actor": "a",
                    "payload": {"kind": "assistant_message", "text": f"turn {i}"}})
        out.append({"tick": 3 * i + 1, "ts_ms": 1001 + 3 * i, "actor": "a",
                    "payload": {"kind": "tool_call", "name": "run_correctness", "id": f"c{i}",
                                "args": {"kernel_code": code}}})
        text = ("run_correctness FAILED\n[case 1] shape mismatch: got (4, 4), want (4, 8)\n"
                "[case 2] max abs diff 0.5 over tolerance\n" + "log line\n" * 40)
        out.append({"tick": 3 * i + 2, "ts_ms": 1002 + 3 * i, "actor": "a",
                    "payload": {"kind": "tool_result", "name": "run_correctness", "id": f"c{i}", "text": text}})
    path.write_bytes(b"\n".join(orjson.dumps(o) for o in out) + b"\n")


def test_lazy_records_share_one_source_and_repeated_texts_one_string(tmp_path):
    p = tmp_path / "t.jsonl"
    _trace(p, 50)
    run = load(p, findings=False)
    calls = [c for c in run.calls if c.result is not None]
    assert len(calls) == 50 and all(c.lazy and c.result._ref is not None for c in calls)
    # no per-call or per-result record of where the line is: the run's one source
    assert len({id(c._args) for c in calls} | {id(c.result._ref) for c in calls}) == 1
    assert calls[7].args["kernel_code"].startswith("import torch\n# version 1")
    assert calls[7].result.summary.startswith("run_correctness FAILED")
    # what the kernel versions list shows of each use, and the case errors: one string per text
    briefs = [u.summary for k in run.kernels for u in k.uses]
    assert len(briefs) == 50 and len(set(briefs)) == 1 and len({id(b) for b in briefs}) == 1
    errs = [e for c in calls for e in c.result.case_errors]
    assert len(errs) == 100 and len({id(e) for e in errs}) == 2


def test_event_log_takes_40_bytes_an_event(tmp_path):
    p = tmp_path / "t.jsonl"
    _trace(p, 10)
    log = load(p, findings=False).events
    cols = (log._line, log._offset, log._length, log._tick, log._ts, log._turn, log._kind, log._actor)
    assert sum(c.itemsize for c in cols) == 40
    assert [(e.line, e.turn) for e in log[:3]] == [(1, 0), (2, 0), (3, 0)]


def test_a_turn_holds_no_empty_list_and_repeated_notes_and_actors_are_one_object(tmp_path):
    """A turn without calls holds the empty tuple, with one call a tuple of one, then a list (an
    empty list per turn was 56 bytes, a grown list of one 88); a file of many runs repeats its
    system notes, graders and spawned actors: one string (and one tool list) per distinct value."""
    from ktui.trace.model import Turn

    t = Turn(0, "a", 1, 1)
    assert t.calls == ()
    a, b, c = load_calls = object(), object(), object()
    t.add_call(a)  # type: ignore[arg-type]
    assert type(t.calls) is tuple and list(t.calls) == [a]
    t.add_call(b)  # type: ignore[arg-type]
    t.add_call(c)  # type: ignore[arg-type]
    assert type(t.calls) is list and t.calls == list(load_calls)
    spawn = {"kind": "agent_spawned", "actor_id": "kernel_author", "model": "m-1", "persona": "normal",
             "tools": ["compile_kernel", "submit_kernel"]}
    lines = []
    for i in range(2):
        lines += [{"tick": 4 * i, "ts_ms": 1, "actor": "harness", "payload": {"kind": "system", "note": orjson.dumps(spawn).decode()}},
                  {"tick": 4 * i + 1, "ts_ms": 2, "actor": "harness", "payload": {"kind": "system", "note": "ensemble: backend=mock"}},
                  {"tick": 4 * i + 2, "ts_ms": 3, "actor": "kernel_author", "payload": {"kind": "assistant_message", "text": "hi"}},
                  {"tick": 4 * i + 3, "ts_ms": 4, "actor": "harness",
                   "payload": {"kind": "system", "note": 'grader: {"kind": "grader", "scores": {"submitted": 0.0}}'}}]
    p = tmp_path / "two.jsonl"
    p.write_bytes(b"\n".join(orjson.dumps(o) for o in lines) + b"\n")
    run = load(p)
    n1, n2 = [text for _, text in run.notes if "backend=mock" in text]
    g1, g2 = run.terminal
    x, y = run.actors
    assert n1 == n2 and n1 is n2 and g1.text is g2.text and x.id is y.id and x.model is y.model
    assert x.tools is y.tools and x.tools == ["compile_kernel", "submit_kernel"] and x.persona is y.persona
    assert not run.turns[0].calls and run.turns[0].calls == ()
