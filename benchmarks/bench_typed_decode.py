#!/usr/bin/env python3
"""Would a typed decode (msgspec Structs) bring the parse near the orjson loop? (issue 25, deliver 3)

Each step reads the same lines, in memory (read and split once, before timing), and keeps
what its name says; CPU seconds (``time.process_time``), the least of ``--reps`` runs in one
fresh process per step, cyclic GC off (as the reader runs):

- ``orjson``: ``orjson.loads`` of every line, nothing kept (the floor ``bench_parse_steps.py``
  uses; ``bench_parse.py``'s loop also reads the file line by line: ``orjson-file``);
- ``orjson-columns``: and the envelope checked and appended to five columns, kind and actor
  interned (``bench_parse_steps.py``'s ``columns`` step: the least a reader keeps of an event);
- ``msgspec-any``: ``msgspec.json.Decoder()`` per line, untyped (dicts, as orjson);
- ``typed``: ``msgspec.json.Decoder(Envelope)`` per line: the envelope a Struct, its payload a
  tagged union on ``kind`` of a Struct per kind the builder handles, with the fields its handler
  reads (arguments, results, notes and diffs as dicts/any: the handlers walk them); Structs
  with ``gc=False``; each decoded line dropped, as the reader drops it; a line it rejects (an
  unknown kind, a field of another type, bad JSON) decoded by orjson instead;
- ``typed-raw``: as ``typed`` with a call's arguments, a result's result, a note and a diff left
  undecoded (``msgspec.Raw``: decoded only where a handler needs them: the least a typed
  reader that reads the payloads could decode);
- ``envelope-raw``: the envelope alone typed, its whole payload ``msgspec.Raw`` (a lower bound
  of any typed decode that reads the envelope);
- ``typed-batch``: ``typed``, a batch of 4,096 lines at once (``b"[" + b",".join(lines) + b"]"``
  as a list of envelopes; a batch with any rejected line: per line instead);
- ``typed-columns``, ``typed-raw-columns``: ``typed`` / ``typed-raw`` and the five columns
  (``orjson-columns``' work), in one loop;
- ``typed-batch-columns``: ``typed-batch`` and the five columns.

    python benchmarks/bench_typed_decode.py dense /tmp/ktui_bench/paint_40MB.jsonl --reps 5
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_parse_steps import BEST_OF, COLUMNS  # noqa: E402 (the same child source: one columns step)

STEPS = ("orjson", "orjson-file", "orjson-columns", "msgspec-any", "typed", "typed-raw", "envelope-raw",
         "typed-batch", "typed-columns", "typed-raw-columns", "typed-batch-columns")

CHILD = r"""
import gc, json, sys, time
from array import array
from typing import Any, Union
import orjson, msgspec
from msgspec import Raw, Struct

path, step, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "rb") as f:
    lines = [x for x in f.read().split(b"\n") if x.strip()]
loads = orjson.loads

K = dict(tag_field="kind", gc=False)  # no cycles in a decoded event: not tracked by the GC
def payloads(raw):
    A = Raw if raw else dict
    R = Raw if raw else Any
    class UserMessage(Struct, tag="user_message", **K):
        text: Any = None
    class AssistantMessage(Struct, tag="assistant_message", **K):
        text: Any = None
    class AgentMessage(Struct, tag="agent_message", **K):
        text: Any = None
    class Message(Struct, tag="message", **K):
        content: Any = None
        role: Any = "assistant"
    class Cost(Struct, tag="cost", **K):
        unit: Any = None
        amount: Any = None
    class System(Struct, tag="system", **K):
        note: R = None
    class ToolCall(Struct, tag="tool_call", **K):
        name: Any = None
        id: Any = None
        args: A = None
        seed: Any = msgspec.UNSET
    class ToolResult(Struct, tag="tool_result", **K):
        name: Any = None
        id: Any = None
        result: R = msgspec.UNSET
        is_error: Any = None
        seed: Any = msgspec.UNSET
        text: Any = msgspec.UNSET
    class StateDiff(Struct, tag="state_diff", **K):
        diff: R = None
        seed: Any = msgspec.UNSET
    return Union[UserMessage, AssistantMessage, AgentMessage, Message, Cost, System, ToolCall, ToolResult,
                 StateDiff]

def envelope(raw):
    P = payloads(raw)
    class Envelope(Struct, gc=False):
        tick: int
        ts_ms: int
        payload: P
        actor: Union[str, None] = None
        message_id: Any = None
        costs: Any = msgspec.UNSET
    return Envelope

decode_any = msgspec.json.Decoder().decode
E = envelope(False)
decode = msgspec.json.Decoder(E).decode
decode_raw = msgspec.json.Decoder(envelope(True)).decode
decode_list = msgspec.json.Decoder(list[E]).decode
class Bare(Struct, gc=False):  # the envelope alone, its payload not decoded
    tick: int
    ts_ms: int
    payload: Raw
    actor: Union[str, None] = None
decode_bare = msgspec.json.Decoder(Bare).decode
Err = msgspec.DecodeError


def per_line(dec):
    out = []
    ap = out.append
    for raw in lines:
        try:
            ap(dec(raw))
        except Err:
            try:
                ap(loads(raw))
            except orjson.JSONDecodeError:
                ap(None)
    return out


def batch():
    out = []
    for i in range(0, len(lines), 4096):
        chunk = lines[i:i + 4096]
        try:
            out += decode_list(b"[" + b",".join(chunk) + b"]")
        except Err:
            for raw in chunk:
                try:
                    out.append(decode(raw))
                except Err:
                    try:
                        out.append(loads(raw))
                    except orjson.JSONDecodeError:
                        out.append(None)
    return out


def each(dec):  # decoded and dropped, line by line, as the reader does (a line it rejects: orjson)
    for raw in lines:
        try:
            dec(raw)
        except Err:
            try:
                loads(raw)
            except orjson.JSONDecodeError:
                pass


# typed_columns and columns_of keep the same five columns on purpose twice: each is the measured loop
# itself (one decodes line by line, the other walks a decoded batch), and a shared function or generator
# would add its call to every line measured (0.5-1 us a line)
def typed_columns(dec):  # each line decoded and its envelope kept in five columns, in one loop
    a, b, c, d, e = array("q"), array("q"), array("i"), array("H"), array("H")
    A, B, C, D, E_ = a.append, b.append, c.append, d.append, e.append
    kinds, actors = {}, {}
    for raw in lines:
        try:
            ev = dec(raw)
        except Err:
            continue  # (orjson-columns' work for it: none of the traces measured has one)
        kind = type(ev.payload)
        k = kinds.get(kind)
        if k is None:
            k = kinds[kind] = len(kinds)
        actor = ev.actor
        x = actors.get(actor)
        if x is None:
            x = actors[actor] = len(actors)
        A(ev.tick)
        B(ev.ts_ms)
        C(-1)
        D(k)
        E_(x)


def columns_of(evs):
    a, b, c, d, e = array("q"), array("q"), array("i"), array("H"), array("H")
    A, B, C, D, E_ = a.append, b.append, c.append, d.append, e.append
    kinds, actors = {}, {}
    for ev in evs:
        if type(ev) is E:
            kind = type(ev.payload)
            k = kinds.get(kind)
            if k is None:
                k = kinds[kind] = len(kinds)
            actor = ev.actor
            x = actors.get(actor)
            if x is None:
                x = actors[actor] = len(actors)
            A(ev.tick)
            B(ev.ts_ms)
            C(-1)
            D(k)
            E_(x)


""" + COLUMNS + r"""

def orjson_floor():
    for raw in lines:
        loads(raw)


def orjson_file():  # bench_parse.py's loop
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                try:
                    loads(line)
                except orjson.JSONDecodeError:
                    pass


fns = {"orjson": orjson_floor, "orjson-file": orjson_file, "orjson-columns": columns,
       "msgspec-any": lambda: each(decode_any), "typed": lambda: each(decode),
       "typed-raw": lambda: each(decode_raw), "envelope-raw": lambda: each(decode_bare), "typed-batch": batch,
       "typed-columns": lambda: typed_columns(decode), "typed-raw-columns": lambda: typed_columns(decode_raw),
       "typed-batch-columns": lambda: columns_of(batch())}
rejected = sum(1 for x in per_line(decode) if type(x) is not E)
""" + BEST_OF + r"""print(json.dumps({"cpu_s": best, "lines": len(lines), "rejected": rejected}))
"""


def measure(path: Path, step: str, reps: int) -> dict:
    cmd = [sys.executable, "-P", "-c", CHILD, str(path.resolve()), step, str(reps)]
    out = subprocess.run(cmd, env=dict(os.environ), capture_output=True, text=True, check=True, cwd="/tmp")
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+", help="trace files, or 'dense' (tests/test_scaling.trace(30000))")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    try:
        import msgspec  # noqa: F401 - not a dependency of ktui: only of this measurement
    except ImportError:
        print("this benchmark needs msgspec (pip install msgspec); ktui does not use it", file=sys.stderr)
        return 2
    from bench_parse import dense, write_results

    results = []
    for t in args.traces:
        path = dense() if t == "dense" else Path(t)
        row: dict = {"file": path.name}
        print(f"\n{path.name} (CPU s, least of {args.reps})", flush=True)
        floor = None
        for step in args.steps:
            got = measure(path, step, args.reps)
            v, n = got["cpu_s"], got["lines"]
            floor = v if floor is None else floor
            print(f"  {step:20s} {v:8.3f} s  {v / n * 1e6:6.2f} us/line  {v / floor:5.2f}x first step"
                  f"   ({got['rejected']:,} of {n:,} lines rejected by the typed decode)", flush=True)
            row[step] = v
            row["lines"], row["rejected"] = n, got["rejected"]
        results.append(row)
    return write_results(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
