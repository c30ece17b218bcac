"""A sweep tree for the chart tests: the shared fixtures, the two project traces and five
hand-written runs, with every aggregate worked out by hand (see test_charts.py).

| trace | model | problem | outcome | speedup | compiled | first correct: turns / tokens / wall |
| --- | --- | --- | --- | --- | --- | --- |
| fixtures/ensemble/v0_popcorn_mock | claude-sonnet-4-5 | L1/P19 | passed | 2.4 | yes | 2 / — / 0.05 s |
| fixtures/ensemble/v1_site_sample | rep1-model | (none) | incomplete | — | no | — |
| fixtures/ktbench/v1_backend_error | gpt-5.5 | swiglu | incomplete | — | no | — |
| fixtures/ktbench/v1_softmax | gpt-5.5 | softmax | incomplete | — | yes | — |
| fixtures/ktbench/v2_marker | openai/gpt-5.5-priority | bf16 mma v5 | incomplete | — | no | — |
| fixtures/ktbench/v3_bf16 | openai/gpt-5.5-priority | bf16 2-stage | incomplete | — | yes | — |
| traces/popcorn_l1_p27_grok-4.3 (seed) | grok-4.3 | L1/P27 | passed | 1.2308 | yes | 7 / 23,456 / 939.082 s |
| tests/fixtures/compare/..test-agent-b | test-agent-b | L1/P27 | passed | 1.0817 | yes | 3 / 7,328 / 298.9 s |
| hand/grok_p28 | grok-4.3 | L1/P28 | passed | 0.8 | yes | 1 / 1,200 / 4.998 s |
| hand/grok_p29 | grok-4.3 | L1/P29 | failed | 0.5 | no | — |
| hand/agentb_p28 | test-agent-b | L1/P28 | passed | 3.0 | yes | 1 / 600 / 1.998 s |
| hand/agentb_p28_again | test-agent-b | L1/P28 | failed | 0.9 | no | — |
| hand/evil | `<script>` model | L1/P30 | passed | 1.5 | yes | 1 / 20 / 0.098 s |
"""

from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES, ROOT
from test_index import mini_trace

SEED = ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
AGENT_B = ROOT / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
EVIL_MODEL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">[bold]x\u001b[31m'
EVIL_PROBLEM = '30_</svg><script>window.__pwned=3</script>.py'


def make_chart_sweep(base: Path) -> Path:
    sw = base / "chart_sweep"
    (sw / "fixtures").mkdir(parents=True)
    for p in sorted(FIXTURES.rglob("*.jsonl")):
        d = sw / "fixtures" / p.relative_to(FIXTURES)
        d.parent.mkdir(parents=True, exist_ok=True)
        d.symlink_to(p)
    (sw / "project").mkdir()
    (sw / "project" / "seed.jsonl").symlink_to(SEED)
    (sw / "project" / "agent_b.jsonl").symlink_to(AGENT_B)
    hand = sw / "hand"
    hand.mkdir()
    runs = {
        "grok_p28": mini_trace("grok-4.3", passed=True, speedup=0.8, tokens_in=1000, tokens_out=200,
                               wall_ms=5000, problem_id=28, name="28_p.py", tag="grok p28"),
        "grok_p29": mini_trace("grok-4.3", passed=False, speedup=0.5, tokens_in=900, tokens_out=100,
                               wall_ms=7000, problem_id=29, name="29_p.py", tag="grok p29"),
        "agentb_p28": mini_trace("test-agent-b", passed=True, speedup=3.0, tokens_in=500, tokens_out=100,
                                 wall_ms=2000, problem_id=28, name="28_p.py", tag="b p28"),
        "agentb_p28_again": mini_trace("test-agent-b", passed=False, speedup=0.9, tokens_in=10, tokens_out=10,
                                       wall_ms=900, problem_id=28, name="28_p.py", tag="b p28 again"),
        "evil": mini_trace(EVIL_MODEL, passed=True, speedup=1.5, tokens_in=10, tokens_out=10, wall_ms=100,
                           problem_id=30, name=EVIL_PROBLEM, tag="evil"),
    }
    for name, text in runs.items():
        (hand / f"{name}.jsonl").write_text(text)
    return sw


# ---- a markup / script-injection corpus ------------------------------------------------------------
# every way a trace string could become live markup or script in a page, or escape codes in a terminal
INJECTIONS = [
    "<script>window.__pwned='script'</script>",
    "</script><script>window.__pwned='close-script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<svg onload=\"window.__pwned='svg'\"><script>window.__pwned='svg-script'</script></svg>",
    "\"><iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    "<a href=\"javascript:window.__pwned='href'\">click</a>",
    "<!-- </style><style>body{display:none}</style> -->",
    "]]><![CDATA[<script>window.__pwned='cdata'</script>]]>",
    "\u2028\u2029<\\/script>\\u003cscript\\u003ewindow.__pwned='unicode'\\u003c/script\\u003e",
    "{{constructor.constructor('window.__pwned=\"template\"')()}}",
    "[bold red]rich markup[/] \x1b]0;title\x07 \x1b[2J\x1b[31mansi\x1b[0m \u202eevil bidi",
]
PAYLOAD = " ".join(INJECTIONS)


def injection_trace(t0: int = 1_780_000_000_000) -> str:
    """A V1 run whose every string field carries the corpus (model, persona, problem, prompts,
    messages, kernel code, tool results, notes)."""
    import json

    a = "kernel_author"

    def ev(tick: int, ts: int, actor, payload: dict) -> str:
        return json.dumps({"tick": tick, "ts_ms": ts, "actor": actor, "message_id": None, "payload": payload})

    spawn = {"kind": "agent_spawned", "actor_id": a, "model": "inject " + INJECTIONS[0], "tools": ["submit_kernel"],
             "system_prompt": PAYLOAD, "params": {"persona": INJECTIONS[2]}}
    code = "import torch\n# " + PAYLOAD + "\nclass ModelNew(torch.nn.Module):\n    pass\n"
    code2 = code + "# v2 " + INJECTIONS[1] + "\n"
    res = {"ok": True, "tool": "submit_kernel", "summary": "submit_kernel PASSED: " + PAYLOAD,
           "runtime_us": 0.01, "ref_runtime_us": 0.02, "speedup": 2.0, INJECTIONS[3]: INJECTIONS[4]}
    lines = [
        ev(0, t0, None, {"kind": "system", "note": json.dumps(spawn)}),
        ev(1, t0 + 1, a, {"kind": "tool_call", "id": "f1", "name": "fetch_problem", "args": {"level": 1, "problem_id": 31},
                          "seed": True}),
        ev(1, t0 + 2, a, {"kind": "tool_result", "id": "f1", "name": "fetch_problem",
                          "result": {"ok": True, "level": 1, "problem_id": 31, "name": "31_" + INJECTIONS[1] + ".py",
                                     "ref_arch_src": PAYLOAD}, "seed": True}),
        ev(1, t0 + 3, "user", {"kind": "user_message", "text": PAYLOAD}),
        ev(2, t0 + 10, a, {"kind": "cost", "unit": "tokens_in", "amount": 5.0, "running_total": 5.0}),
        ev(2, t0 + 10, a, {"kind": "agent_message", "text": PAYLOAD}),
        ev(3, t0 + 11, a, {"kind": "tool_call", "id": "c0", "name": "run_correctness", "args": {"kernel_code": code},
                           "seed": False}),
        ev(3, t0 + 12, a, {"kind": "tool_result", "id": "c0", "name": "run_correctness",
                           "result": {"ok": False, "tool": "run_correctness", "summary": "run_correctness FAILED: " + PAYLOAD,
                                      "details": {"runtime_error": PAYLOAD}}, "is_error": False, "seed": False}),
        ev(4, t0 + 20, a, {"kind": "cost", "unit": "tokens_in", "amount": 5.0, "running_total": 10.0}),
        ev(5, t0 + 21, a, {"kind": "tool_call", "id": "c1", "name": "submit_kernel", "args": {"kernel_code": code2},
                           "seed": False}),
        ev(6, t0 + 30, a, {"kind": "tool_result", "id": "c1", "name": "submit_kernel", "result": res, "is_error": False,
                           "seed": False}),
        ev(7, t0 + 40, None, {"kind": "system", "note": "grader: " + json.dumps(
            {"kind": "grader", "scenario": "popcorn.single_problem " + INJECTIONS[5],
             "scores": {"submitted": 1.0, "submission_passed": 1.0}})}),
        ev(8, t0 + 41, None, {"kind": "system", "note": PAYLOAD}),
    ]
    return "\n".join(lines) + "\n"
