"""Defects found by reading held-out real sweeps and trace sets (issue 21, the reading side; see
benchmarks/results/real_sweeps.md). Each test builds a minimal directory with the structure of
the real set (named in the test) and fails on the code before the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import SEED_TRACE

from ktui.cli import main
from ktui.trace.index import scan

KERNEL = """import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _validated(*paths: Path) -> list[str]:
    res = CliRunner().invoke(main, ["validate", "--json", *map(str, paths)], catch_exceptions=False)
    return [e["file"] for e in json.loads(res.output[res.output.index("["):])]


def test_validate_reads_every_file_runs_lists(tmp_path):
    """yoenoo/eh_kernelbench (8b3f622) keeps a KernelBench run folder, ``results/level_1_problem_P
    _sample_S_kernel.py`` x 889: ``ktui runs`` listed 889 runs, ``ktui validate`` said "no trace
    files found". Both walks now ask one predicate; over a directory of every kind of file they
    read the same files (sweep records, result files and other files left out by both)."""
    shutil.copy(SEED_TRACE, tmp_path / "seed.jsonl")
    kb = tmp_path / "results"
    kb.mkdir()
    (kb / "level_1_problem_3_sample_0_kernel.py").write_text(KERNEL)
    (kb / "problem_4_kernel.py").write_text(KERNEL)
    (kb / "eval_results.json").write_text(json.dumps({"3": {"sample_id": 0, "compiled": True,
                                                            "correctness": True, "metadata": {}}}))
    (kb / "generation_config.yaml").write_text("model_name: m\n")
    (kb / "helper.py").write_text("x = 1\n")
    (kb / "runs.jsonl").write_text("")
    runs, _ = scan(tmp_path, use_cache=False, jobs=0)
    listed = sorted(str(tmp_path / s.path) for s in runs)
    assert len(listed) == 3
    assert sorted(_validated(tmp_path)) == listed
    assert sorted(_validated(kb)) == [p for p in listed if "/results/" in p]
