"""Format detection by parsed structure (never file names), forcing a format, unknown JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ktui.trace import load
from ktui.trace.importers import detect, names

FORMATS = Path(__file__).resolve().parent.parent.parent / "shared" / "formats"
SAMPLES = {
    "chat-messages/wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl": "chat-messages",
    "claude-code/vsla_cuda_toolchain_check_bash_todowrite.jsonl": "claude-code",
    "codex-cli/code_butler_docstring_fix_shell_command_apply_patch_v0.63.jsonl": "codex-cli",
    "inspect/vitals_arithmetic_with_tool_claude35_v0.3.77.json": "inspect",
    "swe-agent/harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json": "harbor-atif",
    "swe-agent/mini_swe_agent_v1.15_gemini3pro_django16255.traj.json": "mini-swe-agent",
}
SEED = Path(__file__).resolve().parent.parent / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"

needs_samples = pytest.mark.skipif(not FORMATS.is_dir(), reason="../shared/formats not present")


@needs_samples
@pytest.mark.parametrize("rel,fmt", sorted(SAMPLES.items()))
def test_each_sample_is_detected_and_read(rel, fmt):
    path = FORMATS / rel
    assert detect(str(path)).name == fmt
    run = load(path)
    assert run.format == fmt
    assert run.turns and run.events
    assert not [p for p in run.problems if p.severity == "error"], run.problems


@needs_samples
@pytest.mark.parametrize("rel,fmt", sorted(SAMPLES.items()))
def test_detection_ignores_the_file_name(rel, fmt, tmp_path):
    """The same bytes under a misleading name (and extension) are read as the same format."""
    other = tmp_path / "trace_from_ensemble.txt"
    shutil.copyfile(FORMATS / rel, other)
    assert detect(str(other)).name == fmt
    assert load(other).format == fmt


def test_ensemble_stays_ensemble():
    assert detect(str(SEED)).name == "ensemble"
    run = load(SEED)
    assert run.format == "ensemble" and run.variant == "V1"


def test_unknown_json_is_not_a_trace_with_a_hint(tmp_path):
    p = tmp_path / "package.json"
    p.write_text(json.dumps({"name": "x", "version": "1.0.0", "dependencies": {}}, indent=2))
    run = load(p)
    assert not run.events and not run.turns
    assert [str(x) for x in run.problems] == ["not a trace (looks like an npm package.json)"]
    q = tmp_path / "rows.jsonl"
    q.write_text('{"alpha": 1, "beta": 2}\n{"alpha": 3, "beta": 4}\n')
    assert [str(x) for x in load(q).problems] == ["not a trace (looks like a JSON object with keys alpha, beta)"]
    r = tmp_path / "list.json"
    r.write_text("[1, 2, 3]")
    assert [str(x) for x in load(r).problems] == ["not a trace (looks like a JSON array of 3 items (int))"]


def test_forced_format_overrides_detection(monkeypatch):
    monkeypatch.setenv("KTUI_FORMAT", "claude-code")
    run = load(SEED)
    assert run.format == "claude-code"
    assert not run.turns  # ensemble lines are not Claude Code lines
    monkeypatch.setenv("KTUI_FORMAT", "nope")
    run = load(SEED)
    assert run.problems and "unknown format 'nope'" in run.problems[0].message


def test_registry_lists_ensemble_first():
    assert names()[0] == "ensemble"
    assert set(SAMPLES.values()) <= set(names())


def test_follow_mode_re_imports_a_growing_file(tmp_path):
    from ktui.trace.reader import Follower

    src = FORMATS / "claude-code" / "vsla_cuda_toolchain_check_bash_todowrite.jsonl"
    if not src.is_file():
        pytest.skip("../shared/formats not present")
    lines = src.read_bytes().splitlines(keepends=True)
    p = tmp_path / "live.jsonl"
    p.write_bytes(b"".join(lines[:20]))
    f = Follower(p)
    first = len(f.run.turns)
    assert f.run.format == "claude-code" and 0 < first
    assert f.poll() is False  # nothing changed
    with open(p, "ab") as fh:
        fh.write(b"".join(lines[20:]))
    assert f.poll() is True
    assert len(f.run.turns) == 19 > first


def _head_lines_by_split(buf: bytes, more: bool) -> tuple[list[bytes], bool]:
    """The head's lines as detection took them before it stopped splitting the whole head."""
    if buf.startswith(b"\xef\xbb\xbf"):
        buf = buf[3:]
    parts = buf.split(b"\n")
    last_complete = buf.endswith(b"\n") or not more
    complete = parts if last_complete else parts[:-1]
    out: list[bytes] = []
    for raw in complete:
        if raw.strip():
            out.append(raw.rstrip(b"\r"))
            if len(out) >= 8:
                return out, True
    return out, more or (not last_complete and bool(parts[-1].strip()))


def test_head_lines_line_by_line_equal_the_split_of_the_whole_head():
    """Detection takes the head's first lines one at a time (the sweep index split every trace's
    first MiB to read eight lines): the same lines and the same 'more' on every shape of head."""
    import random

    from ktui.trace.importers.registry import HEAD_LINES, head_lines_of

    assert HEAD_LINES == 8
    rng = random.Random(24)
    pieces = [b"a", b'{"k":1}', b"\n", b"\n\n", b" ", b"\t", b"\r", b"\r\n", b"\xef\xbb\xbf"]
    cases = [b"", b"\n", b"\xef\xbb\xbf", b"x", b"x\n", b"\n".join(b"l%d" % i for i in range(20))]
    cases += [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(20000)]
    for buf in cases:
        for more in (False, True):
            assert head_lines_of(buf, more) == _head_lines_by_split(buf, more), (buf, more)


# the first lines of real files (the Aider chat and input histories of 0xRickx/Kangaroo_2.2.5 at
# d6f1292, GPL-3.0, quoted; a Cursor export as find_string shows them; a Codex rollout committed
# as a Git LFS pointer, leejunha781/Codex 02ade423); the rest made up
TEXT_LOGS = {
    "aider_input": ("\n# 2024-08-27 01:19:52.183058\n+/add Backup.cpp Constants.h\n+\n\n"
                    "# 2024-08-27 01:20:36.998834\n+modify Merge.cpp\n",
                    "an Aider input history"),
    "rollout.jsonl": ("version https://git-lfs.github.com/spec/v1\n"
                      "oid sha256:6bb1eb32594bef2ba4fde6c6dabed7a53174291ad00cd755c108b976d7c6b9c6\nsize 79666590\n",
                      "a Git LFS pointer: the trace itself (79,666,590 bytes) is not in this checkout"),
    "cursor.md": ("# Build a command line task manager\n_Exported on 19/10/2025 at 12:29:42 GMT+8 from Cursor "
                  "(1.7.38)_\n\n---\n\n**User**\n\nWrite it.\n\n---\n\n**Cursor**\n\nDone.\n",
                  "a Cursor chat export"),
}


@pytest.mark.parametrize("name", sorted(TEXT_LOGS))
def test_text_logs_of_other_agents_are_named_in_one_line(name, tmp_path):
    text, what = TEXT_LOGS[name]
    p = tmp_path / name
    p.write_text(text)
    run = load(str(p))
    assert run.format == "unknown" and not run.events
    assert len(run.problems) == 1 and run.problems[0].line == 0
    msg = run.problems[0].message
    assert msg.startswith(f"not a trace (looks like {what}") and "\n" not in msg


def test_an_aider_chat_history_is_read_by_its_reader(tmp_path):
    # (named "not a trace" before ktui.trace.importers.aider; its input history still is: prompts only)
    p = tmp_path / ".aider.chat.history.md"
    p.write_text("# aider chat started at 2024-08-27 01:19:24\n\n> Aider v0.52.1  \n"
                 "> Model: groq/llama-3.1-405b-reasoning with whole edit format  \n\n"
                 "#### modify Merge.cpp to be able to merge workfiles  \n")
    run = load(str(p))
    assert run.format == "aider" and not run.problems
    assert run.model == "groq/llama-3.1-405b-reasoning"
    assert run.problem.prompt == "modify Merge.cpp to be able to merge workfiles"


def test_plain_text_that_matches_no_log_is_read_as_before(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("# 2024-08-27 01:19:52.183058\nno plus lines here\n")  # a stamp, but no typed input
    run = load(str(p))
    assert run.format == "ensemble" and run.problems and "looks like" not in run.problems[0].message


def test_cline_ui_messages_point_at_the_task_history(tmp_path):
    # the shape of Cline's ui_messages.json (say / ask records with an epoch-ms ts)
    p = tmp_path / "ui_messages.json"
    p.write_text(json.dumps([{"ts": 1777073160794, "type": "say", "say": "task", "text": "Write a kernel"},
                             {"ts": 1777073161000, "type": "say", "say": "api_req_started", "text": "{}"},
                             {"ts": 1777073170000, "type": "ask", "ask": "followup", "text": "ok?"}]))
    run = load(p)
    assert [str(x) for x in run.problems] == [
        "not a trace (looks like Cline's UI messages (ui_messages.json); its task history is "
        "api_conversation_history.json in the same folder)"]
