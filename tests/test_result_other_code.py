"""A harness's result file whose error is about code ktui does not have (issue 21, seen on a real
Harbor trial): the harness recorded a SyntaxError at a line past the end of the solution the agent
wrote (it compiled a wrapper module of another name), while the version ktui rebuilt from the trace
(a heredoc, then an in-place ``python3 - <<'PY'`` edit) parses. Comparing a re-execution of that
version with the record claimed "correctness disagrees"; the record is set aside and the verdict
says that what the harness evaluated is not in the trace.

The trial below is written for this test with the structure of the real one (an ATIF trajectory of
terminus-2 keystrokes, a reward.json beside it); nothing is copied from it."""

from __future__ import annotations

import json

import pytest

from ktui.repro.recorded import recorded_for
from ktui.repro.verdict import CORRECTNESS_DISAGREES, NOT_JUDGED, compare
from ktui.trace.reader import load
from ktui.trace.results.evaluated import evaluated_other_code

SOLUTION = """import torch
import triton
import triton.language as tl

LIMIT = 6.0


@triton.jit
def _clamp(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(x_ptr + i, mask=m)
    tl.store(y_ptr + i, tl.minimum(tl.maximum(x, 0.0), LIMIT), mask=m)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _clamp[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""
EDIT = ("python3 - <<'PY'\np='solution.py'\ns=open(p).read().replace('LIMIT)', '6.0)')\nopen(p,'w').write(s)\nPY\n"
        "python check.py\n")
PROMPT = ("Task Description:\n# Optimize a GPU kernel\n\nWrite `ModelNew` to /app/solution.py.\n\n## The reference\n"
          "```python\nimport torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
          "        return torch.clamp(x, 0.0, 6.0)\n\ndef get_inputs():\n    return [torch.randn(4096, device='cuda')]\n"
          "```\n")
PASSED_HERE = {"status": "completed", "environment": {"device": "cuda:0", "gpu": "NVIDIA H200"},
               "correctness": {"passed": True, "trials": 5, "trials_passed": 5},
               "timing": {"speedup": 1.5, "kernel": {"mean_us": 10.0}, "reference": {"mean_us": 15.0}},
               "checks": [], "notes": []}


def _step(i, keys, out):
    return {"step_id": i, "timestamp": f"2026-06-30T02:0{i}:00+00:00", "source": "agent", "model_name": "p/m",
            "message": "{}", "tool_calls": [{"tool_call_id": f"c{i}", "function_name": "bash_command",
                                             "arguments": {"keystrokes": keys, "duration": 1.0}}],
            "observation": {"results": [{"source_call_id": f"c{i}", "content": out}]}}


def _trial(tmp_path, error):
    d = tmp_path / "clamp_relu6__toy__T64__f"
    d.mkdir()
    steps = [{"step_id": 1, "timestamp": "2026-06-30T02:00:00+00:00", "source": "user", "message": PROMPT},
             _step(2, f"cat > solution.py <<'PY'\n{SOLUTION}PY\n", "root@modal:/app# "),
             _step(3, EDIT, "root@modal:/app# python check.py\nmax_err 0.0\n")]
    (d / "trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.6", "session_id": "s1",
                                                   "agent": {"name": "terminus-2", "model_name": "p/m"},
                                                   "steps": steps}))
    (d / "reward.json").write_text(json.dumps({"reward": 0, "correct": False, "error": error}))
    return load(str(d / "trajectory.json"))


WRAPPED = ("SyntaxError: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
           "integers (kb_p_m__clamp_relu6__toy__T64__f.py, line 61)")


def test_the_final_version_is_the_in_place_edit(tmp_path):
    run = _trial(tmp_path, WRAPPED)
    final = run.kernels[-1]
    assert "tl.minimum(tl.maximum(x, 0.0), 6.0)" in final.code and len(run.kernels) == 2


def test_a_syntax_error_past_the_end_of_the_version_is_set_aside(tmp_path):
    run = _trial(tmp_path, WRAPPED)
    rec = recorded_for(run, run.kernels[-1])
    assert rec.correctness is None  # never compared with this version
    assert "line 61" in rec.set_aside and "other code" in rec.set_aside
    comp = compare(rec, PASSED_HERE)
    assert comp.verdict == NOT_JUDGED and comp.verdict != CORRECTNESS_DISAGREES
    assert "not in the trace" in comp.reason and "pass 5/5" in comp.reason
    assert run.outcome == "failed"  # the sweep's count is still the result file's
    flags = {f.code: f.message for f in run.flags}
    assert "line 61" in flags.get("result_other_code", "") and "v2" in flags["result_other_code"]


def test_a_syntax_error_the_version_does_not_have_is_set_aside(tmp_path):
    run = _trial(tmp_path, "SyntaxError: invalid syntax (solution.py, line 3)")
    rec = recorded_for(run, run.kernels[-1])
    assert "parses here" in rec.set_aside
    assert compare(rec, PASSED_HERE).verdict == NOT_JUDGED


def test_an_error_that_may_be_about_this_version_is_still_compared(tmp_path):
    run = _trial(tmp_path, "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered")
    rec = recorded_for(run, run.kernels[-1])
    assert rec.set_aside == "" and rec.correctness is not None
    assert compare(rec, PASSED_HERE).verdict == CORRECTNESS_DISAGREES
    assert "result_other_code" not in {f.code for f in run.flags}


@pytest.mark.parametrize("error,code,other", [
    ("SyntaxError: invalid syntax (s.py, line 9)", "x = 1\n", True),
    ("SyntaxError: '(' was never closed (s.py, line 2)", "x = (\n", False),  # the version has it
    ("SyntaxError: unexpected EOF (s.py, line 2)", "x = (\n", False),  # the line after the last: still it
    ('Traceback:\n  File "/h/run.py", line 900, in main\n  File "/w/s.py", line 2\n    x = 01\n'
     "SyntaxError: leading zeros", "x = 1\ny = 01\n", False),
    ('Traceback:\n  File "/h/run.py", line 900, in main\n  File "/w/s.py", line 40\nIndentationError: x',
     "x = 1\n", True),
    ("ValueError: bad shape (s.py, line 99)", "x = 1\n", False),  # not a syntax error: may be its
    ("SyntaxError: x (s.py, line 99)", "", False),
    ("SyntaxError: x (s.py, line 1)", "(" * 200_000, False),  # too deep to tell: may be its
])
def test_evaluated_other_code(error, code, other):
    assert bool(evaluated_other_code(error, code)) is other


def test_a_kernel_the_harness_refused_by_its_own_rule_is_no_correctness_claim(tmp_path):
    """A real Harbor sweep's verifier refuses kernels by a static rule of its own before judging
    their outputs (reward.json ``static_ok: false``, "static check failed: banned op (offloads core
    compute): .matmul"). Re-run, such a kernel's outputs are right: that is no disagreement about
    correctness (it was "correctness disagrees"), and the verdict says what the harness refused."""
    run = _trial(tmp_path, "x")
    (tmp_path / "clamp_relu6__toy__T64__f" / "reward.json").write_text(json.dumps(
        {"reward": 0, "correct": False, "static_ok": False,
         "error": "static check failed: banned op (offloads core compute): .matmul"}))
    run = load(str(tmp_path / "clamp_relu6__toy__T64__f" / "trajectory.json"))
    rec = recorded_for(run, run.kernels[-1])
    assert rec.correctness is not None and rec.correctness.kind == "refused"
    comp = compare(rec, PASSED_HERE)
    assert comp.verdict == NOT_JUDGED and comp.verdict != CORRECTNESS_DISAGREES
    assert "refused it by a rule of its own" in comp.reason and "banned op" in comp.reason and "pass 5/5" in comp.reason
    assert run.outcome == "failed"  # the sweep's count is still the result file's
    # without the static check's word, a recorded failure that passes here still disagrees
    (tmp_path / "clamp_relu6__toy__T64__f" / "reward.json").write_text(json.dumps(
        {"reward": 0, "correct": False, "error": "max_err 0.5 > atol"}))
    run = load(str(tmp_path / "clamp_relu6__toy__T64__f" / "trajectory.json"))
    assert compare(recorded_for(run, run.kernels[-1]), PASSED_HERE).verdict == CORRECTNESS_DISAGREES
