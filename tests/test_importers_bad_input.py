"""Bad input, per importer: truncated files, wrong types anywhere, a huge field, hostile text.
Nothing raises, problems carry a location, and what can be read still is."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from conftest import SHARED

from ktui.trace.importers import INTERNAL, load
from ktui.trace.reader import load_bytes

F = SHARED / "formats"
SAMPLES = {
    "chat-messages": F / "chat-messages" / "wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl",
    "claude-code": F / "claude-code" / "vsla_cuda_toolchain_check_bash_todowrite.jsonl",
    "codex-cli": F / "codex-cli" / "code_butler_docstring_fix_shell_command_apply_patch_v0.63.jsonl",
    "inspect": F / "inspect" / "vitals_arithmetic_with_tool_claude35_v0.3.77.json",
    "harbor-atif": F / "swe-agent" / "harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json",
    "mini-swe-agent": F / "swe-agent" / "mini_swe_agent_v1.15_gemini3pro_django16255.traj.json",
    # SYNTHETIC (tests/fixtures/formats): the shared samples have no classic SWE-agent .traj
    "swe-agent": Path(__file__).resolve().parent / "fixtures" / "formats" / "synthetic_swe_agent.traj",
    # STRUCTURAL (tests/fixtures/formats/structural): the real OpenHands conversations have no licence
    "openhands": Path(__file__).resolve().parent / "fixtures" / "formats" / "structural" /
    "openhands_sdk_events_refused_edit_parallel_calls.json",
    # REAL (tests/fixtures/formats/real, Apache-2.0): a KernelAgent session's result.json
    "kernelagent": Path(__file__).resolve().parent / "fixtures" / "formats" / "real" /
    "kernelagent_session_20251126_021641_875369" / "result.json",
    # REAL (tests/fixtures/formats/real, MIT): a KernelBench AIDE kernel search's journal.json
    "aide": Path(__file__).resolve().parent / "fixtures" / "formats" / "real" /
    "aide_kernelbench_44-stimulating-magenta-adder" / "journal.json",
    # REAL (tests/fixtures/formats/real, Apache-2.0): OpenAgents' MechaCoder ATIF stream
    "atif-jsonl": Path(__file__).resolve().parent / "fixtures" / "formats" / "real" /
    "openagents_mechacoder_atif" / "session-2025-12-05T07-45-57-649Z-x8251x.atif.jsonl",
}
LINE_BASED = {"chat-messages", "claude-code", "codex-cli", "atif-jsonl"}
pytestmark = pytest.mark.skipif(not F.is_dir(), reason="../shared/formats not present")
WRONG = [None, 7, -1.5, True, "x", [], {}, [1, "a"], {"k": [None]}]


def _objects(fmt: str) -> tuple[list, bool]:
    data = SAMPLES[fmt].read_bytes()
    if fmt in LINE_BASED:
        return [json.loads(x) for x in data.splitlines() if x.strip()], True
    return [json.loads(data)], False


def _dump(objs: list, lines: bool) -> bytes:
    if lines:
        return b"".join(json.dumps(o).encode() + b"\n" for o in objs)
    return json.dumps(objs[0], indent=1).encode()


def _nodes(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield obj, k, path + (k,)
            yield from _nodes(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield obj, i, path + (i,)
            yield from _nodes(v, path + (i,))


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_truncated_anywhere(fmt):
    data = SAMPLES[fmt].read_bytes()
    full = load(SAMPLES[fmt])
    for frac in (0.05, 0.33, 0.5, 0.9, 0.999):
        cut = data[: int(len(data) * frac)]
        run = load_bytes(cut, f"cut.{fmt}", format=fmt)
        assert run.format == fmt
        if fmt in LINE_BASED and fmt != "chat-messages":
            # complete lines still give their turns; the cut last line is "still being written"
            assert run.incomplete or run.problems
            assert len(run.turns) <= len(full.turns)
        else:
            assert run.problems or run.incomplete
    # cut at every line boundary of a line-based file: never more turns than the whole
    if fmt in ("claude-code", "codex-cli"):
        lines = data.split(b"\n")
        counts = [len(load_bytes(b"\n".join(lines[:n]) + b"\n", "x", format=fmt).turns) for n in range(0, len(lines), 7)]
        assert counts == sorted(counts) and counts[-1] <= len(full.turns)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_wrong_types_anywhere_never_raise(fmt):
    objs, lines = _objects(fmt)
    rng = random.Random(13)
    nodes = [n for o in objs for n in _nodes(o)]
    for trial in range(60):
        mutated = json.loads(json.dumps(objs))
        mnodes = [n for o in mutated for n in _nodes(o)]
        for _ in range(1 + trial % 4):
            parent, key, _ = mnodes[rng.randrange(len(nodes))]
            try:
                parent[key] = rng.choice(WRONG)
            except (IndexError, KeyError, TypeError):
                continue
        run = load_bytes(_dump(mutated, lines), f"m{trial}", format=fmt)
        assert run.format == fmt
        for p in run.problems:
            assert isinstance(p.message, str) and p.message
            assert not p.message.startswith(INTERNAL), (trial, p.message)  # handled, not caught by the net
    # the top level itself of the wrong type
    for v in WRONG:
        run = load_bytes(_dump([v], lines), "top", format=fmt)
        assert run.format == fmt and not run.turns


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_a_huge_field(fmt):
    objs, lines = _objects(fmt)
    big = "A" * (16 << 20)
    # the longest string of the trace becomes 16 MiB
    best = max(((p, k) for o in objs for p, k, _ in _nodes(o) if isinstance(p[k], str)), key=lambda pk: len(pk[0][pk[1]]))
    best[0][best[1]] = big
    run = load_bytes(_dump(objs, lines), "huge", format=fmt)
    assert run.format == fmt
    assert run.turns  # still read


def test_single_object_formats_report_a_json_path():
    objs, _ = _objects("harbor-atif")
    objs[0]["steps"][2]["tool_calls"] = "not a list"
    objs[0]["steps"][3] = 5
    run = load_bytes(_dump(objs, False), "h", format="harbor-atif")
    wheres = [p.where for p in run.problems]
    assert "$.steps[2].tool_calls" in wheres and "$.steps[3]" in wheres
    assert any(str(p).startswith("$.steps[2].tool_calls: ") for p in run.problems)


def test_hostile_text_is_kept_literal_not_interpreted(tmp_path):
    evil = "[bold red]x[/] \x1b[31mred\x1b[0m \x07 [link=file:///etc/passwd]y[/link]"
    msgs = {"messages": [{"role": "user", "content": evil},
                         {"role": "assistant", "content": evil, "tool_calls": [
                             {"id": "c1", "type": "function", "function": {"name": evil, "arguments": "{not json"}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": evil}]}
    p = tmp_path / "evil.jsonl"
    p.write_text(json.dumps(msgs) + "\n")
    run = load(p)
    assert run.format == "chat-messages"
    assert run.turns[0].text == evil and run.calls[0].name == evil
    assert run.calls[0].args == {"arguments": "{not json"}
    assert run.calls[0].result.summary == evil


def test_deeply_nested_json_is_a_problem_not_a_crash(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text('{"steps": ' + "[" * 100000 + "]" * 100000 + ', "schema_version": "ATIF-v1.7"}')
    run = load(p)
    assert not run.turns
    assert run.problems


def test_the_reader_never_writes(tmp_path):
    import os
    import shutil

    d = tmp_path / "ro"
    d.mkdir()
    for src in SAMPLES.values():
        shutil.copyfile(src, d / src.name)
    before = {f.name: (f.stat().st_mtime_ns, f.read_bytes()) for f in d.iterdir()}
    os.chmod(d, 0o555)
    try:
        for f in d.iterdir():
            load(f)
    finally:
        os.chmod(d, 0o755)
    assert {f.name: (f.stat().st_mtime_ns, f.read_bytes()) for f in d.iterdir()} == before
