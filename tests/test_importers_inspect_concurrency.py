"""Inspect logs whose samples ran at once: the run's model time is not the calls' sum.

In 12 of the 13 real Inspect 0.3.128 / 0.3.133 ``.eval`` logs of UKGovernmentBEIS/inspect_ai
(eval-set1/, log-sets/, examples/scanner/logs/, MIT) the samples' model calls overlap: summed,
they gave up to 10x the eval's wall time (the 100-sample popularity log at log-sets/: 996 s of
model time in a 104 s eval). The shape below is those logs' (``model`` events with ``timestamp``
and ``completed``), the times made up; the copied 0.3.128 log (1 sample) reads as before.
"""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace.importers import load

REAL = Path(__file__).parent / "fixtures" / "formats" / "real"
ONE_SAMPLE = REAL / "inspect_0.3.128_2025-09-12T11-41-56-04-00_popularity_HdSVrmTDEge636qZ2op64f.eval"


def _sample(sid: int, calls: list[tuple[str, str]]) -> dict:
    msgs: list[dict] = [{"role": "user", "content": "q"}]
    for _ in calls:
        msgs.append({"role": "assistant", "content": "A"})
    return {"id": sid, "epoch": 1, "input": "q", "target": "A", "messages": msgs,
            "scores": {"match": {"value": "C"}},
            "events": [{"event": "model", "model": "openai/gpt-5", "timestamp": a, "completed": b,
                        "output": {"usage": {"input_tokens": 10, "output_tokens": 1}}} for a, b in calls]}


def _log(samples: list[dict]) -> dict:
    return {"version": 2, "status": "success",
            "eval": {"task": "popularity", "model": "openai/gpt-5", "created": "2025-09-15T15:02:26-04:00",
                     "packages": {"inspect_ai": "0.3.133"}},
            "plan": {}, "results": {}, "stats": {"started_at": "2025-09-15T15:02:26-04:00",
                                                  "completed_at": "2025-09-15T15:02:40-04:00"},
            "samples": samples}


def _t(s: int) -> str:
    return f"2025-09-15T15:02:{s:02d}-04:00"


def test_concurrent_samples_model_time_is_the_busy_time_not_the_sum(tmp_path):
    # three samples at once: 27-35, 28-36, 30-34 (8 + 8 + 4 = 20 s summed; busy 27-36 = 9 s),
    # then one call alone, 37-39 (2 s)
    log = _log([_sample(1, [(_t(27), _t(35)), (_t(37), _t(39))]), _sample(2, [(_t(28), _t(36))]),
                _sample(3, [(_t(30), _t(34))])])
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log))
    run = load(str(p))
    assert [t.llm_ms for t in run.turns] == [8000, 2000, 8000, 4000]  # each call keeps its own time
    assert run.llm_ms == 11_000  # was 22,000: more than the 14 s eval
    assert run.llm_ms <= run.wall_ms
    assert any("samples ran concurrently" in n for _, n in run.notes)


def test_samples_one_after_another_are_summed_as_before(tmp_path):
    log = _log([_sample(1, [(_t(27), _t(29))]), _sample(2, [(_t(30), _t(33))])])
    p = tmp_path / "log.json"
    p.write_text(json.dumps(log))
    run = load(str(p))
    assert run.llm_ms == 5000 and run.llm_busy_ms is None
    assert not any("concurrently" in n for _, n in run.notes)


def test_the_real_one_sample_log_reads_as_before():
    run = load(str(ONE_SAMPLE))
    assert run.llm_busy_ms is None and run.llm_ms == run.turns[0].llm_ms
