"""Every view shows the same facts: header, flags and counts agree across ``show``, the replay
header, ``compare`` and ``runs`` (for every fixture and for traces written here)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, SEED_TRACE
from rich.console import Console

from ktui.report.show import render
from ktui.trace import load
from ktui.trace.aggregate import compare_rows
from ktui.trace.index import summarize
from ktui.trace.serialize import run_to_dict
from ktui.tui.widgets.header import header_text
from ktui.view import build_view

EV = [
    {"tick": 0, "ts_ms": 1000, "actor": None, "payload": {"kind": "system", "note": "ensemble: backend=mock"}},
    {"tick": 1, "ts_ms": 1001, "actor": "harness", "payload": {"kind": "user_message", "text": "Begin."}},
    {"tick": 2, "ts_ms": 2000, "actor": "agent", "payload": {"kind": "agent_message", "text": "trying"}},
    {"tick": 2, "ts_ms": 2000, "actor": "agent",
     "payload": {"kind": "tool_call", "id": "c1", "name": "compile_kernel",
                 "args": {"kernel_code": "import torch\nclass ModelNew: pass\n"}}},
    {"tick": 3, "ts_ms": 2500, "actor": "agent",
     "payload": {"kind": "tool_result", "id": "c1", "name": "compile_kernel",
                 "result": {"ok": False, "tool": "compile_kernel", "summary": "compile_kernel FAILED: boom"}}},
    {"tick": 4, "ts_ms": 3000, "actor": "agent",
     "payload": {"kind": "tool_call", "id": "c2", "name": "run_correctness", "args": {}}},
]


def _write(tmp: Path, name: str, events, tail: bytes = b"") -> Path:
    p = tmp / name
    p.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in events) + tail)
    return p


def written_traces(tmp: Path) -> list[Path]:
    return [
        _write(tmp, "dangling.jsonl", EV),  # ends during a call
        _write(tmp, "partial.jsonl", EV[:5], b'{"tick": 9, "ts_'),  # still being written
        _write(tmp, "bad_lines.jsonl", EV[:3] + ["not json"] + EV[3:5]),  # a bad line in the middle
    ]


def all_traces(tmp: Path) -> list[Path]:
    found = sorted(FIXTURES.glob("*/*.jsonl")) if FIXTURES.is_dir() else []
    return [SEED_TRACE, ROOT / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl",
            *found, *written_traces(tmp)]


def show_text(run) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=250, color_system=None, highlight=False)
    for r in render(run):
        con.print(r)
    return buf.getvalue()


def test_views_agree(tmp_path):
    paths = all_traces(tmp_path)
    assert len(paths) >= 5
    for p in paths:
        run = load(p)
        v = build_view(run)
        h = v.header
        # show
        out = show_text(run)
        assert f"outcome {h.outcome}" in out, p
        assert f"tool calls {h.calls}" + (f" ({h.failed_calls} failed)" if h.failed_calls else "") in out, p
        assert f"turns / max {h.turns_text}" in out, p
        for code in v.flag_codes:
            assert f"⚑ {code}: " in out, (p, code)
        # the replay header
        head = header_text(run).plain
        assert f" {h.outcome}" in head and f"tool calls {h.calls}" in head, p
        assert (f"({h.failed_calls} failed)" in head) == bool(h.failed_calls), p
        for f in v.flags:
            assert f.phrase in head, (p, f.code)
        if not v.flags:
            assert "no sanity flags" in head or " in the file: " in head, p
        # compare (the run against itself)
        rows = {r.key: r for r in compare_rows([run, run])}
        assert rows["outcome"].values[0] == h.outcome
        assert rows["calls"].values[0] == h.calls
        assert rows["failed_calls"].values[0] == h.failed_calls
        assert rows["turns"].values[0] == (h.turns, h.max_turns)
        assert list(rows["flags"].values[0]) == list(v.flag_codes), p
        # runs (the sweep index skims the file)
        s = summarize(str(p))
        assert (s.outcome, s.tool_calls, s.failed_calls, s.turns) == (h.outcome, h.calls, h.failed_calls, h.turns), p
        assert s.flags == list(v.flag_codes), p
        # show --json: the same flag set, run-state flags (backend_error, dangling_call...) included
        codes = list(dict.fromkeys(f["code"] for f in run_to_dict(run)["flags"]))
        assert codes == list(v.flag_codes), p


def test_written_traces_carry_their_state_flags(tmp_path):
    dangling, partial, bad = (build_view(load(p)) for p in written_traces(tmp_path))
    assert "dangling_call" in dangling.flag_codes and dangling.header.failed_calls == 2
    assert "still_writing" in partial.flag_codes and partial.header.failed_calls == 1
    assert "bad_lines" in bad.flag_codes


@pytest.mark.parametrize("name", ["v1_softmax_a100_to_h100.jsonl", "v3_gpt55_bf16_gemm_interleaved.jsonl"])
def test_issue_examples(name):
    p = FIXTURES / "ktbench" / name
    if not p.exists():
        pytest.skip(f"{p} not available")
    v = build_view(load(p))
    if name.startswith("v1_softmax"):
        # replay said "1 not ok", runs "dangling_call", compare "failed calls 0": now one fact
        assert v.header.failed_calls == 1 and "dangling_call" in v.flag_codes
    else:
        assert len(v.flag_codes) >= 4  # runs listed 2 of replay's 4


def test_findings_are_flags_with_their_class_line_and_turn():
    hacks = sorted((ROOT / "tests" / "fixtures" / "hacks").glob("*.jsonl"))
    if not hacks:
        pytest.skip("no static-finding fixtures")
    seen = 0
    for p in hacks:
        v = build_view(load(p))
        for f in v.flags:
            if f.category != "finding":
                continue
            seen += 1
            assert f.turn is not None and f.since is not None, (p, f.code)
            text = f.message + " " + f.where
            assert f"introduced at turn {f.turn}" in text and text.count("introduced at turn") == 1, (p, f.code)
        out = show_text(load(p))
        for code in v.flag_codes:
            assert f"⚑ {code}: " in out
    assert seen


def test_turns_without_token_counts_say_none_like_the_header():
    """A chat log that writes 0 for "not counted": the header said — and every turn in=0 out=0."""
    from types import SimpleNamespace

    from ktui.view.fmt import tokens_label

    zero = SimpleNamespace(tokens_in=0, tokens_out=0, tokens_reasoning=None, tokens_total=0)
    none = SimpleNamespace(tokens_in=None, tokens_out=None, tokens_reasoning=None, tokens_total=None)
    some = SimpleNamespace(tokens_in=1203, tokens_out=0, tokens_reasoning=None, tokens_total=1203)
    assert tokens_label(zero) == tokens_label(none) == "tokens —"
    assert tokens_label(some) == "tokens in=1,203 · out=0 · total=1,203"
    wafer = ROOT.parent / "shared" / "formats" / "chat-messages" / \
        "wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl"
    if wafer.is_file():
        v = build_view(load(wafer))
        assert v.header.tokens_text == "—"
        assert all(t.tokens_text == "tokens —" for t in v.turns)
