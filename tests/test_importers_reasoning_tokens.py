"""Reasoning tokens counted once: inside the output count (OpenAI, Anthropic) or beside it (Gemini).

Inspect 0.3.128-0.3.133 ``.eval`` logs of UKGovernmentBEIS/inspect_ai (eval-set1/, log-sets/,
examples/scanner/logs/, MIT): every ``openai/gpt-5`` call's ``output_tokens`` includes its
``reasoning_tokens`` (``total_tokens = input + output``) and ktui added them again (the 100-sample
gpt-5 log: 63,743 tokens for the log's own 35,199); every ``google/gemini-2.5-*`` call's does not
(``total = input + output + reasoning``), which ktui counted right. The 0.3.128 log is copied
(tests/fixtures/formats/real/SOURCES.md); the Gemini shape is written below, values made up.
"""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace.importers import load
from ktui.trace.importers.common import reasoning_apart

REAL = Path(__file__).parent / "fixtures" / "formats" / "real"
GPT5 = REAL / "inspect_0.3.128_2025-09-12T11-41-56-04-00_popularity_HdSVrmTDEge636qZ2op64f.eval"


def test_openai_reasoning_inside_output_counted_once_on_the_real_log():
    run = load(str(GPT5))
    assert run.format == "inspect" and len(run.turns) == 1
    t = run.turns[0]
    assert (t.tokens_in, t.tokens_out, t.tokens_reasoning) == (63, 263, None)
    assert run.tokens_total == 326  # the log's own stats.model_usage total_tokens


def _log(model: str, usage: dict) -> dict:
    return {
        "version": 2, "status": "success",
        "eval": {"task": "popularity", "model": model, "created": "2025-09-15T15:02:26-04:00",
                 "packages": {"inspect_ai": "0.3.133"}},
        "plan": {}, "results": {}, "stats": {"started_at": "2025-09-15T15:02:26-04:00",
                                              "completed_at": "2025-09-15T15:02:30-04:00"},
        "samples": [{
            "id": 1, "epoch": 1, "input": "q", "target": "A",
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "A"}],
            "scores": {"match": {"value": "C"}},
            "events": [{"event": "model", "model": model, "timestamp": "2025-09-15T15:02:27-04:00",
                        "completed": "2025-09-15T15:02:29-04:00", "output": {"usage": usage}}],
        }],
    }


def test_gemini_reasoning_beside_output_is_counted(tmp_path):
    p = tmp_path / "gemini.json"
    p.write_text(json.dumps(_log("google/gemini-2.5-pro",
                                 {"input_tokens": 60, "output_tokens": 1, "total_tokens": 664, "reasoning_tokens": 603})))
    run = load(str(p))
    assert (run.turns[0].tokens_reasoning, run.tokens_total) == (603, 664)


def test_without_a_total_the_provider_decides(tmp_path):
    for model, want in (("google/gemini-2.5-flash", 90), ("openai/o3", None), ("anthropic/claude-sonnet-4-5", None)):
        p = tmp_path / "x.json"
        p.write_text(json.dumps(_log(model, {"input_tokens": 10, "output_tokens": 100, "reasoning_tokens": 90})))
        assert load(str(p)).turns[0].tokens_reasoning == want, model


def test_reasoning_apart():
    assert reasoning_apart(256, 326, (326,), True) is None
    assert reasoning_apart(603, 664, (61,), True) == 603
    assert reasoning_apart(5, None, (0,), False) == 5 and reasoning_apart(5, None, (0,), True) is None
    assert reasoning_apart(0, 10, (10,), False) is None
    # cached input counted apart from input_tokens: either sum may be the total's
    assert reasoning_apart(50, 5170, (120, 5120), True) == 50 and reasoning_apart(50, 5120, (120, 5120), False) is None
