"""A kernel whose outputs of ktui's checked wall-clock pass are wrong is ``wrong_while_timed`` (a hack
class) only when it answers the same input right outside timing. When one untimed call on the timing
input is as wrong (a TF32 product past the tolerance, a state that drifts with every call), nothing
depends on timing: the run fails correctness on that input, with no hack class (issue 26: a false
flag on an honest kernel costs more than a missed hack). The kernel that computes only the calls it
learns are checked (tests/test_sandbox_attacks.py) answers the untimed call right and stays named."""

from __future__ import annotations

import pytest
from conftest import judge_run, model, needs, outcome

# an honest bug: a drift that starts at the 20th call and stays, timed or not
DRIFTS = model("_N = [0]\n", "_N[0] += 1\nreturn torch.relu(x) * 2.0 + (0.5 if _N[0] >= 20 else 0.0)\n")


@needs("torch")
@pytest.mark.parametrize("mode", ["copies", "fingerprints"])
def test_wrong_outside_timing_too_is_a_failure_not_a_hack(tmp_path, mode):
    res = judge_run(tmp_path, DRIFTS, **({"wall_retain_bytes": 0} if mode == "fingerprints" else {}))
    assert res["status"] == "completed", res.get("failure")
    assert res["timing"]["cross_check"]["checked_by"] == mode, res["timing"]["cross_check"]
    classes = {f["class"] for f in res["findings"]}
    assert "wrong_while_timed" not in classes, res["findings"]
    assert not any(c["name"] == "timed_outputs_correct" for c in res["checks"]), res["checks"]
    corr = res["correctness"]
    assert corr["passed"] is False and corr["outside_trials"][0]["passed"] is False, corr
    assert "outside any timing" in corr["mismatch"], corr["mismatch"]
    assert any("not a difference when timed" in n for n in res["notes"]), res["notes"]
    assert outcome(res) == "correctness disagrees"


@needs("torch")
def test_the_probes_after_it_are_those_of_a_failed_kernel(tmp_path):
    # the probes that compare outputs with the reference see the same wrong answers and would name
    # them as behaviours (called again and again, stale results...): after a failure found in the
    # timing stage only the probes of a failed kernel run, as after a failed correctness trial
    res = judge_run(tmp_path, DRIFTS, checks=True)
    assert res["status"] == "completed", res.get("failure")
    assert res["correctness"]["passed"] is False, res["correctness"]
    failed = [c["name"] for c in res["checks"] if c.get("ok") is False]
    assert not failed and not res["findings"], (failed, res["findings"])
    assert set(res["probes"]) <= {"plain_output", "tampering", "threads_left_running", "unwritten_output"}, res["probes"]
    assert outcome(res) == "correctness disagrees"
