"""ATIF written as JSON lines (the ``atif-jsonl`` importer) and the observations of an ATIF
trajectory's system steps: real files of OpenAgents' MechaCoder orchestrator
(OpenAgentsInc/openagents 8d67d6a, Apache-2.0; tests/fixtures/formats/real/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace.importers import detect, load

D = Path(__file__).resolve().parent / "fixtures" / "formats" / "real" / "openagents_mechacoder_atif"
STREAM = D / "session-2025-12-05T07-45-57-649Z-x8251x.atif.jsonl"
WHOLE = D / "session-2025-12-05T07-45-57-649Z-x8251x.atif.json"
TAIL = D / "session-2025-12-05T08-00-23-404Z-ew8gut.atif.jsonl"


def _observations(run) -> list[str]:
    return [text for _, kind, _, text in run.messages if kind == "observation"]


def test_the_stream_reads_as_the_whole_trajectory_written_beside_it():
    assert detect(str(STREAM)).name == "atif-jsonl"
    s, w = load(STREAM), load(WHOLE)
    assert s.format == "atif-jsonl" and w.format == "harbor-atif"
    assert not s.problems and not w.problems
    assert s.persona == w.persona == "mechacoder-orchestrator" and s.model == w.model == "x-ai/grok-4.1-fast:free"
    assert len(s.turns) == len(w.turns) == 1
    assert [m[1:] for m in s.messages] == [m[1:] for m in w.messages]
    assert len(json.loads(WHOLE.read_text())["steps"]) == sum(1 for x in STREAM.read_text().splitlines()[1:] if x)


def test_a_system_steps_check_is_an_observation_not_dropped():
    """The orchestrator's own verification runs (system steps with observation results whose
    content is an object: command, passed, output) were dropped; the output is kept, output last."""
    obs = _observations(load(WHOLE))
    assert len(obs) == 3
    assert obs[0].startswith("command: bun run typecheck\npassed: False\noutput:\n")
    assert "terminated by signal SIGKILL" in obs[0]
    assert obs[2].startswith("command: bun run test:container\npassed: True\noutput:\nbun test v1.3.3")


def test_a_tail_of_the_stream_without_its_header():
    assert detect(str(TAIL)).name == "atif-jsonl"
    run = load(TAIL)
    assert not run.problems and run.persona is None
    assert any("no header line" in t for _, t in run.notes)
    assert [m[3] for m in run.messages if m[1] == "system"][-1] == "Session failed: Verification failed after healing"


def test_lines_of_other_kinds_in_the_stream_are_warnings(tmp_path):
    p = tmp_path / "t.atif.jsonl"
    lines = STREAM.read_text().splitlines()
    p.write_text("\n".join(lines[:2] + ['{"kind": "other"}', lines[0]] + lines[2:]) + "\n")
    run = load(p)
    msgs = [x.message for x in run.problems]
    assert any("neither the header nor an ATIF step" in m for m in msgs)
    assert any("a second header line" in m for m in msgs)
    assert len(run.turns) == 1
