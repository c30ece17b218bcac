"""The sweep index's skim gives the row the full reader gives, field for field.

``ktui runs`` never loads a whole run: :func:`ktui.trace.index.summarize` skims it (no events,
texts or kernels kept). Its row must be IDENTICAL to the row of the fully loaded run
(:func:`ktui.trace.load`, then :func:`ktui.trace.index.summary_of_run`), on every trace we hold
(tests/fixtures, ../shared/fixtures, ../shared/formats) and on hostile files made here: truncated
lines, lines far longer than any other, invalid UTF-8, binary, deep nesting, CRLF, a BOM, lines
that are JSON but not events.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ktui.trace import load
from ktui.trace.index import RunSummary, TraceFile, summarize, summarize_loaded, summary_of_run

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
TRACE_EXTS = (".jsonl", ".json", ".traj", ".eval")
IDENTITY = {"fingerprint", "content_key", "record_sig", "labels", "path", "real", "size", "mtime_ns"}


def _held() -> list[Path]:
    out: list[Path] = []
    for base in (ROOT / "tests" / "fixtures", ROOT / "traces", SHARED / "fixtures", SHARED / "formats"):
        if base.is_dir():
            out += sorted(p for p in base.rglob("*") if p.is_file() and p.name.endswith(TRACE_EXTS)
                          and p.name not in ("runs.jsonl", "runs.json", "meta.json"))
    return out


def _tf(path: Path) -> TraceFile:
    st = os.stat(path)
    return TraceFile(str(path), os.path.realpath(path), st.st_size, st.st_mtime_ns, False, str(path))


def _full_row(path: Path) -> dict:
    run = load(path, keep_events=False)
    return _row(summary_of_run(run, _tf(path)))


def _row(s: RunSummary) -> dict:
    return {k: v for k, v in s.to_dict().items() if k not in IDENTITY}


def _skim_row(path: Path) -> dict:
    return _row(summarize(_tf(path)))


def _same_parts(path: Path, skimmed: RunSummary) -> None:
    """A file of many runs: each run's row in the skim is the full parse of its address."""
    from ktui.trace.address import join

    assert skimmed.parts, path
    for part in skimmed.parts:
        key = part["key"]
        run = load(join(str(path), key), keep_events=False)
        full = _row(summary_of_run(run, _tf(path)))
        skim = {k: v for k, v in part.items() if k not in IDENTITY | {"key", "parts"}}
        diff = {k: (skim.get(k), full[k]) for k in full if k not in ("key", "parts") and skim.get(k) != full[k]}
        assert diff == {}, f"{path.name}#{key}: skim != full parse: {diff}"


def _same(path: Path) -> None:
    skimmed = summarize(_tf(path))
    if skimmed.parts:
        _same_parts(path, skimmed)
        return
    skim, full = _row(skimmed), _full_row(path)
    if skim["format"] in ("none", "result"):  # a .json that is no trace, or a harness's result file: no row
        assert full["not_trace"] and skim["problems"], path
        return
    diff = {k: (skim[k], full[k]) for k in full if skim.get(k) != full[k]}
    assert diff == {}, f"{path.name}: skim != full parse: {diff}"


def _same_loaded(path: Path) -> None:
    """``ktui report``'s one read of a trace (:func:`summarize_loaded`) gives the skim's row, every
    field (the fingerprint too), and for an ensemble trace the run :func:`ktui.trace.load` gives."""
    tf = _tf(path)
    row, run = summarize_loaded(tf)
    assert row.to_dict() == summarize(tf).to_dict(), path
    if run is not None:
        assert row.format == "ensemble" and not row.parts, path
        full = load(path)
        assert (len(run.events), len(run.turns), len(run.calls), [k.sha1 for k in run.kernels]) == (
            len(full.events), len(full.turns), len(full.calls), [k.sha1 for k in full.kernels]), path


HELD = _held()


@pytest.mark.parametrize("path", HELD, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_held_trace(path):
    _same(path)
    _same_loaded(path)


def test_the_report_read_takes_the_one_read_path():
    """summarize_loaded hands back the loaded run for ensemble traces (the path that saves a parse)
    and none for other formats (summarize's row alone): both branches are exercised above."""
    kinds = {summarize_loaded(_tf(p))[1] is not None for p in HELD}
    assert kinds == {True, False}
    seed = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
    row, run = summarize_loaded(_tf(seed))
    assert run is not None and len(run.events) > 0 and row.turns == len(run.turns)


def test_there_are_traces_to_check():
    assert len(HELD) >= 20  # the fixtures of the repo alone hold more than this


# ---- hostile files ------------------------------------------------------------------------------------
def _ev(tick, ts, actor, payload, mid=None) -> dict:
    return {"tick": tick, "ts_ms": ts, "actor": actor, "message_id": mid, "payload": payload}


def _lines(evs) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in evs)


KERNEL = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n"
          "cuda_src = '''\n__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
          " if (i < n) x[i] = x[i] * 2.0f; }\n'''\n"
          "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.matmul(x, x)\n")


def _base(big: int = 0, kernel_pad: int = 0, fail_pad: int = 0, msg_pad: int = 0) -> list[dict]:
    """A small V1 run: spawn, fetch, two turns with a compile / correctness pair, a submit, grader."""
    code = KERNEL + ("# " + "x" * kernel_pad + "\n" if kernel_pad else "")
    evs = [
        _ev(0, 1000, None, {"kind": "system", "note": json.dumps({
            "kind": "agent_spawned", "actor_id": "a", "model": "m-1", "params": {"max_turns": 9, "persona": "p"}})}),
        _ev(0, 1001, "a", {"kind": "tool_call", "id": "c0", "name": "fetch_problem", "args": {}, "seed": True}),
        _ev(0, 1002, "a", {"kind": "tool_result", "id": "c0", "name": "fetch_problem", "seed": True, "result": {
            "ok": True, "level": 1, "problem_id": 7, "name": "7_x.py",
            "ref_arch_src": "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        return x * 2\n"}}),
        _ev(1, 2000, "a", {"kind": "cost", "unit": "tokens_in", "amount": 100}, "msg-1"),
        _ev(1, 2000, "a", {"kind": "cost", "unit": "tokens_out", "amount": 50}, "msg-1"),
        _ev(1, 2001, "a", {"kind": "agent_message", "text": "thinking " + "t" * msg_pad}, "msg-1"),
        _ev(1, 2002, "a", {"kind": "tool_call", "id": "c1", "name": "compile_kernel", "args": {"kernel_code": code}},
            "msg-1"),
        _ev(1, 2500, "a", {"kind": "tool_result", "id": "c1", "name": "compile_kernel",
                           "result": {"ok": True, "summary": "compiled"}}),
        _ev(1, 2501, "a", {"kind": "tool_call", "id": "c2", "name": "static_check", "args": {"kernel_code": code}},
            "msg-1"),
        _ev(1, 2600, "a", {"kind": "tool_result", "id": "c2", "name": "static_check",
                           "result": {"ok": False, "summary": "bad " + "e" * fail_pad}}),
        _ev(2, 3000, "a", {"kind": "cost", "unit": "tokens_in", "amount": 10}, "msg-2"),
        _ev(2, 3001, "a", {"kind": "tool_call", "id": "c3", "name": "run_correctness",
                           "args": {"kernel_code": code + "# v2\n"}}, "msg-2"),
        _ev(2, 3500, "a", {"kind": "tool_result", "id": "c3", "name": "run_correctness",
                           "result": {"ok": True, "summary": "5/5 passed"}}),
        _ev(3, 4000, "a", {"kind": "cost", "unit": "tokens_in", "amount": 10}, "msg-3"),
        _ev(3, 4001, "a", {"kind": "tool_call", "id": "c4", "name": "submit_kernel",
                           "args": {"kernel_code": code + "# v2\n"}}, "msg-3"),
        _ev(3, 4500, "a", {"kind": "tool_result", "id": "c4", "name": "submit_kernel",
                           "result": {"ok": True, "runtime_us": 0.02, "ref_runtime_us": 0.04, "speedup": 2.0}}),
        _ev(4, 5000, None, {"kind": "system", "note": "grader: " + json.dumps(
            {"scores": {"submission_passed": 1.0, "submitted": 1.0}})}),
    ]
    return evs


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


HOSTILE = {
    "plain": lambda: _lines(_base()),
    # lines far over any "short line" size: the kernel itself, a failing result, a message
    "huge_kernel_line": lambda: _lines(_base(kernel_pad=200_000)),
    "huge_failed_result": lambda: _lines(_base(fail_pad=100_000)),
    "huge_message": lambda: _lines(_base(msg_pad=300_000)),
    # truncated: cut in the middle of a line (still being written), and in the middle of a long one
    "truncated": lambda: _lines(_base())[:-40],
    "truncated_long": lambda: _lines(_base(kernel_pad=50_000))[:-30_000],
    # invalid UTF-8 inside a string, and a lone bad byte line
    "bad_utf8_in_string": lambda: _lines(_base()).replace(b"thinking ", b"think\xff\xfeing "),
    "bad_utf8_in_kernel": lambda: _lines(_base()).replace(b"x[i] * 2.0f", b"x[i] * \xc3(2.0f)", 1),
    "binary": lambda: bytes(range(256)) * 64,
    "binary_after_events": lambda: _lines(_base()[:6]) + os.urandom(0) + bytes(range(1, 255)) * 40 + b"\n",
    # deep nesting: in args, in a result, and a line that is nothing but brackets
    "deep_args": lambda: _lines(_base()[:6] + [_ev(1, 2002, "a", {"kind": "tool_call", "id": "d", "name": "x",
                                                                   "args": json.loads("[" * 200 + "]" * 200)})]),
    "deep_result": lambda: _lines(_base()[:7] + [_ev(1, 2500, "a", {
        "kind": "tool_result", "id": "c1", "name": "compile_kernel",
        "result": json.loads('{"a":' * 150 + "1" + "}" * 150)})]),
    "brackets_only": lambda: _lines(_base()) + b"[" * 100_000 + b"\n",
    # layout: CRLF, a byte order mark, blank lines, JSON that is not an event
    "crlf": lambda: _lines(_base()).replace(b"\n", b"\r\n"),
    "bom": lambda: b"\xef\xbb\xbf" + _lines(_base()),
    "blank_and_junk": lambda: b"\n\n" + _lines(_base()[:5]) + b"42\n[1,2]\n{\"payload\": 3}\nnot json\n"
                              + _lines(_base()[5:]),
    # envelope oddities the skim's shortcuts must not misread: fields in another order, a float
    # ts_ms, an escaped name, a non-string text, seed / is_error far from the end of the line
    "reordered_keys": lambda: b"".join(json.dumps(dict(reversed(list(e.items())))).encode() + b"\n"
                                       for e in _base(kernel_pad=20_000)),
    "odd_envelopes": lambda: _lines(_base()[:5] + [
        {"tick": 1, "ts_ms": 2001.5, "actor": "a", "payload": {"kind": "agent_message", "text": 5}},
        _ev(1, 2002, "a", {"kind": "tool_call", "id": "e\"1", "name": "comp\\u0069le", "args": {"k": "y" * 20_000}}),
        _ev(1, 2003, "a", {"kind": "tool_result", "is_error": True, "id": "e\"1", "name": "comp\\u0069le",
                           "result": {"z": "w" * 20_000}}),
        _ev(1, 2004, "a", {"kind": "tool_call", "seed": True, "id": "s", "name": "get_gpu_specs",
                           "args": {"q": "v" * 20_000}}),
    ] + _base()[5:]),
    # more than one read chunk (ktui.trace.index.skim.CHUNK): lines across the chunk boundary, a tail read apart
    "bigger_than_a_chunk": lambda: _lines(_base()[:5] + [_ev(1, 2001, "a", {"kind": "agent_message", "text": "m" * 999},
                                                             "msg-1")] * 4500 + _base()[5:]),
    "dangling_and_unpaired": lambda: _lines(_base()[:7] + [_ev(9, 9000, "a", {
        "kind": "tool_result", "id": "nope", "name": "ghost", "result": {"ok": False, "x": "q" * 20_000}})]),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files(tmp_path, name):
    _same(_write(tmp_path, f"{name}.jsonl", HOSTILE[name]()))
    _same_loaded(_write(tmp_path, f"{name}-2.jsonl", HOSTILE[name]()))


def test_hostile_files_are_what_they_say(tmp_path):
    """The hostile files exercise what they name (a check that cannot fail is a defect)."""
    huge = _write(tmp_path, "h.jsonl", HOSTILE["huge_kernel_line"]())
    assert max(len(x) for x in huge.read_bytes().split(b"\n")) > 200_000
    row = _skim_row(huge)
    assert row["final_sha1"] and row["turns"] == 3 and row["outcome"] == "passed"
    fail = _write(tmp_path, "f.jsonl", HOSTILE["huge_failed_result"]())
    assert _skim_row(fail)["failed_calls"] == 1  # the failed static check, its result 100 kB long
    trunc = _write(tmp_path, "t.jsonl", HOSTILE["truncated"]())
    assert _skim_row(trunc)["incomplete"] is True
    from ktui.trace.index import CHUNK

    assert len(HOSTILE["bigger_than_a_chunk"]()) > CHUNK
    binary = _write(tmp_path, "b.jsonl", HOSTILE["binary"]())
    assert _skim_row(binary)["not_trace"]
