"""A Harbor claude-code trial holds its run twice: ``agent/trajectory.json`` (ATIF, converted by
Harbor, with the trial's result.json) and Claude Code's own session under ``agent/sessions/``
(no result). ``ktui runs`` listed both, so a sweep of N trials showed 2N runs and a halved pass
rate (found on the real trial of Saud008/terminal-bench-2.1, benchmarks/results/real_sweeps.md).
Both walks (runs, validate) leave the session copy out and say so."""

from __future__ import annotations

import shutil
from pathlib import Path

from ktui.trace.index import ScanIssue, discover
from ktui.trace.index.walk import agent_copy

S = Path(__file__).parent / "fixtures" / "formats" / "structural"
TRIAL = S / "harbor_claude_code_synthetic_not_logged_in" / "check-kernel-task__Xy7Qk2m"


def _sweep(tmp_path: Path, trials: int = 3) -> Path:
    root = tmp_path / "jobs" / "2026-12-05__00-00-00"
    for i in range(trials):
        t = root / f"check-kernel-task__{i:08d}"
        shutil.copytree(TRIAL, t)
        sess = t / "agent" / "sessions" / "projects" / "-app"
        sess.mkdir(parents=True)
        shutil.copy(S / "claude_code_2.1.285_not_logged_in_cost_state.jsonl", sess / f"s{i}.jsonl")
    return tmp_path / "jobs"


def test_runs_lists_each_trial_once(tmp_path):
    root = _sweep(tmp_path)
    issues: list[ScanIssue] = []
    found = [tf.path for tf in discover(root, issues)]
    assert sorted(p for p in found if "sessions" in p) == []
    assert len([p for p in found if p.endswith("agent/trajectory.json")]) == 3, found
    said = [i for i in issues if "session copy" in i.message]
    assert len(said) == 3 and all(i.severity == "info" for i in said), issues


def test_validate_walks_the_same_files(tmp_path):
    from ktui.report.validate import trace_files

    class _Err:
        def print(self, *_a, **_k):
            pass

    root = _sweep(tmp_path, 2)
    files = [str(p) for p in trace_files([str(root)], _Err())]
    assert not any("sessions" in p for p in files), files
    assert len([p for p in files if p.endswith("trajectory.json")]) == 2


def test_only_a_sessions_folder_beside_a_trajectory_is_a_copy(tmp_path):
    assert agent_copy("sessions", frozenset({"trajectory.json", "sessions"}))
    assert not agent_copy("sessions", frozenset({"run.jsonl", "sessions"}))  # Claude Code's own dirs elsewhere
    assert not agent_copy("logs", frozenset({"trajectory.json"}))
    # a sessions folder with no trajectory beside it is walked as before
    d = tmp_path / "cc" / "sessions"
    d.mkdir(parents=True)
    shutil.copy(S / "claude_code_2.1.285_not_logged_in_cost_state.jsonl", d / "a.jsonl")
    assert [tf.path for tf in discover(tmp_path / "cc", [])] == ["sessions/a.jsonl"]
