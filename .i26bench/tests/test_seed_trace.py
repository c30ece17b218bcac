"""The seed run page rebuilt as an ensemble V1 trace (scripts/build_seed_trace.py).

Stdlib json only; does not import ktui.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_seed_trace.py"
TRACE = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
SEED = REPO.parent / "shared" / "seed" / "000_581c3f2f60c6fb9a.txt"

# The page's per-turn table: (turn wall s, LLM s, tools s, tokens in, out, total, tool)
PAGE_TURNS = [
    ("76.1", "2.7", "73.4", 1406, 6, 1514, "get_gpu_specs"),
    ("112.4", "11.5", "100.9", 1747, 438, 2468, "compile_kernel"),
    ("272.3", "3.9", "268.4", 2485, 439, 2931, "run_correctness"),
    ("129.6", "3.9", "125.8", 2967, 422, 3448, "compile_kernel"),
    ("103.7", "2.7", "100.9", 3465, 423, 3892, "run_correctness"),
    ("136.9", "2.7", "134.3", 3921, 428, 4377, "compile_kernel"),
    ("108.0", "2.9", "105.1", 4394, 429, 4826, "run_correctness"),
    ("4.8", "4.8", "0.0", 4886, 428, 5319, "static_check"),
    ("202.4", "5.8", "196.6", 5337, 428, 5769, "submit_kernel"),
]
PAGE_WALL = "1146.3"
PAGE_TOKENS = 34544
GPU_TOOLS = {"compile_kernel", "run_correctness", "submit_kernel"}
MSG_ID = re.compile(r"msg-[0-9a-f]{32}")

needs_seed = pytest.mark.skipif(not SEED.is_file(), reason="../shared/seed page not present")


def tenths(ms: int) -> int:
    return (ms + 50) // 100  # half-up, on the integer


def t10(s: str) -> int:
    whole, frac = s.split(".")
    return int(whole) * 10 + int(frac)


def sha1(s: str) -> str:
    return hashlib.sha1(s.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return TRACE.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def events(lines) -> list[dict]:
    return [json.loads(ln) for ln in lines]


@pytest.fixture(scope="module")
def turns(events) -> list[dict]:
    """Split into V1 turns: a turn starts at a tokens cost that follows a non-token event."""
    out: list[dict] = []
    prev_token_cost = False
    prev_ts = None
    for e in events:
        p = e["payload"]
        is_tok = p["kind"] == "cost" and p["unit"] in ("tokens_in", "tokens_out", "usd", "tokens_reasoning")
        if p["kind"] == "system" and out:
            break
        if is_tok and not prev_token_cost:
            out.append({"start_prev_ts": prev_ts, "events": []})
        if out:
            out[-1]["events"].append(e)
        prev_token_cost = is_tok
        prev_ts = e["ts_ms"]
    return out


@needs_seed
def test_script_reproduces_committed_trace(tmp_path):
    out = tmp_path / "trace.jsonl"
    subprocess.run([sys.executable, str(SCRIPT), "--seed", str(SEED), "--out", str(out)], check=True,
                   capture_output=True)
    assert out.read_bytes() == TRACE.read_bytes()


def test_v1_envelope(lines, events):
    for ln, e in zip(lines, events, strict=True):
        assert list(e) == ["tick", "ts_ms", "actor", "message_id", "payload"]
        assert ln == json.dumps(e, separators=(",", ":"), ensure_ascii=False)
        assert isinstance(e["tick"], int) and e["tick"] >= 0
        assert isinstance(e["ts_ms"], int)
        kind = e["payload"]["kind"]
        if kind in ("user_message", "agent_message"):
            assert MSG_ID.fullmatch(e["message_id"])
        else:
            assert e["message_id"] is None
        if kind in ("tool_call", "tool_result"):
            assert MSG_ID.fullmatch(e["payload"]["id"])
    ticks = [e["tick"] for e in events]
    assert ticks == sorted(ticks)
    ts = [e["ts_ms"] for e in events]
    assert ts == sorted(ts)
    ids = [e["message_id"] for e in events if e["message_id"]]
    assert len(ids) == len(set(ids)) == 10


def test_setup_and_end(events):
    p = [e["payload"] for e in events]
    assert p[0] == {"kind": "system", "note": "ensemble: backend=xai"}
    spawned = json.loads(p[1]["note"])
    assert spawned["kind"] == "agent_spawned" and spawned["actor_id"] == "kernel_author"
    assert spawned["model"] == "grok-4.3"
    assert spawned["tools"] == ["fetch_problem", "get_gpu_specs", "compile_kernel", "run_correctness",
                                "static_check", "submit_kernel"]
    assert spawned["params"] == {"max_turns": 12, "persona": "normal"}
    assert p[2]["kind"] == "tool_call" and p[2]["name"] == "fetch_problem" and p[2]["seed"] is True
    assert p[2]["args"] == {"level": 1, "problem_id": 27, "dataset_src": "local"}
    res = p[3]["result"]
    assert p[3]["kind"] == "tool_result" and p[3]["seed"] is True and p[3]["is_error"] is False
    assert p[3]["id"] == p[2]["id"]
    assert res["name"] == "27_permutation_all_to_all.py"
    assert res["ref_arch_chars"] == len(res["ref_arch_src"])
    assert "popcorn_pri.jitter_int(B)" in res["ref_arch_src"]
    assert (res["backend"], res["precision"], res["variant"]) == ("cuda", "fp32", "popcorn")
    assert p[4] == {"kind": "state_diff", "seed": True, "diff": {
        "field": "problem", "old": None, "new": {"level": 1, "problem_id": 27, "name": "27_permutation_all_to_all.py"}}}
    assert p[5]["kind"] == "user_message" and events[5]["actor"] == "user"
    assert p[-2] == {"kind": "system", "note": "scheduler quiescent; halting"}
    assert p[-1]["note"].startswith("grader: ")
    grader = json.loads(p[-1]["note"][len("grader: "):])
    assert grader == {"kind": "grader", "scenario": "popcorn.single_problem", "scores": {
        "submitted": 1.0, "submission_passed": 1.0, "any_correct": 1.0, "lint_skipped": 0.0,
        "excessive_speedup_flagged": 0.0}}


def test_tool_calls_and_results(events):
    calls = [e["payload"] for e in events if e["payload"]["kind"] == "tool_call" and not e["payload"]["seed"]]
    assert [c["name"] for c in calls] == [t[6] for t in PAGE_TURNS]
    results = {e["payload"]["id"]: e["payload"] for e in events if e["payload"]["kind"] == "tool_result"}
    for c in calls:
        r = results[c["id"]]
        assert r["name"] == c["name"] and r["seed"] is False and r["is_error"] is False
        assert r["result"]["tool"] == c["name"]
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == len(ids)


def test_turn_count_tokens_and_times(events, turns):
    costs = [e["payload"] for e in events if e["payload"]["kind"] == "cost"]
    assert sum(c["unit"] == "tokens_in" for c in costs) == 9
    tok = sum(c["amount"] for c in costs if c["unit"] in ("tokens_in", "tokens_out", "tokens_reasoning"))
    assert tok == PAGE_TOKENS
    assert tenths(events[-1]["ts_ms"] - events[0]["ts_ms"]) == t10(PAGE_WALL)
    assert round((events[-1]["ts_ms"] - events[0]["ts_ms"]) / 1000, 1) == float(PAGE_WALL)
    kickoff_ts = next(e["ts_ms"] for e in events if e["payload"]["kind"] == "user_message")

    assert len(turns) == 9
    for k, (turn, page) in enumerate(zip(turns, PAGE_TURNS, strict=True)):
        wall, llm, tools, t_in, t_out, t_total, tool = page
        evs = turn["events"]
        prev = kickoff_ts if k == 0 else turn["start_prev_ts"]
        llm_ms = evs[0]["ts_ms"] - prev
        call = next(e for e in evs if e["payload"]["kind"] == "tool_call")
        result = next(e for e in evs if e["payload"]["kind"] == "tool_result")
        tool_ms = result["ts_ms"] - call["ts_ms"]
        assert tenths(llm_ms) == t10(llm), k
        assert tenths(tool_ms) == t10(tools), k
        assert tenths(llm_ms + tool_ms) == t10(wall), k
        assert evs[-1]["ts_ms"] - prev == llm_ms + tool_ms
        units = {e["payload"]["unit"]: e["payload"]["amount"] for e in evs if e["payload"]["kind"] == "cost"}
        assert units["tokens_in"] == t_in and units["tokens_out"] == t_out
        assert units["tokens_reasoning"] == t_total - t_in - t_out
        # all token costs and the agent message carry the completion time
        head = [e for e in evs if e["payload"]["kind"] in ("cost", "agent_message") and
                e["payload"].get("unit") != "gpu_seconds"]
        assert {e["ts_ms"] for e in head} == {evs[0]["ts_ms"]}
        assert [(e["payload"]["kind"], e["payload"].get("unit")) for e in evs[:4]] == [
            ("cost", "tokens_in"), ("cost", "tokens_out"), ("cost", "tokens_reasoning"), ("agent_message", None)]
        gpu = [e["payload"]["amount"] for e in evs if e["payload"]["kind"] == "cost"
               and e["payload"]["unit"] == "gpu_seconds"]
        if tool in GPU_TOOLS:
            assert gpu == [tool_ms / 1000]
        else:
            assert gpu == []


def _page_final_listing() -> str:
    text = SEED.read_text(encoding="utf-8")
    head, _, body = text.partition("full source, untruncated\n")
    assert "final submitted kernel (55 lines, 1,547 chars)" in head
    return body.strip("\n")


def test_kernel_versions(events):
    calls = [e["payload"] for e in events if e["payload"]["kind"] == "tool_call" and not e["payload"]["seed"]]
    codes = [c["args"].get("kernel_code") for c in calls]
    assert codes[0] is None and calls[0]["args"] == {}
    distinct: list[str] = []
    first_turn: list[int] = []
    for k, code in enumerate(codes):
        if code is not None and code not in distinct:
            distinct.append(code)
            first_turn.append(k)
    assert len({sha1(c) for c in distinct}) == 4
    assert first_turn == [1, 2, 3, 5]
    v1, v2, v3, v4 = distinct
    assert [codes[k] for k in (3, 4)] == [v3, v3]
    assert [codes[k] for k in (5, 6, 7, 8)] == [v4] * 4
    assert v1.replace("verbose=True", "verbose=False") == v2
    assert v3.replace("int* __restrict__ perm", "int64_t* __restrict__ perm").replace(
        "int p = perm[j]", "int64_t p = perm[j]").replace("data_ptr<int>", "data_ptr<int64_t>") == v4
    assert "device=x.device)" in v2 and "default_device" in v2
    assert len(v4) == 1547 and len(v4.split("\n")) == 55 and v4.endswith("))\n")
    assert "            PERM = torch.randperm(x.size(1), generator=_g)\n" in v4
    diff = [e["payload"]["diff"] for e in events if e["payload"]["kind"] == "state_diff"][-1]
    assert diff["field"] == "kernel_submissions" and diff["new"]["kernel_hash"] == sha1(v4)


@needs_seed
def test_v4_is_the_final_listing(events):
    submit = [e["payload"] for e in events if e["payload"]["kind"] == "tool_call"][-1]
    assert submit["name"] == "submit_kernel"
    listing = _page_final_listing()  # the page drops the file's final newline when printing it
    code = submit["args"]["kernel_code"]
    assert code == listing + "\n"
    assert len(code) == 1547 and len(code.split("\n")) == 55  # the page's "55 lines, 1,547 chars"


def test_correctness_results(events):
    res = [e["payload"]["result"] for e in events if e["payload"]["kind"] == "tool_result"
           and e["payload"]["name"] == "run_correctness"]
    assert [r["ok"] for r in res] == [False, False, True]
    assert [r["details"]["runtime_error"] for r in res[:2]] == [
        "Expected a 'cuda' device type for generator but found 'cpu'",
        "expected scalar type Int but found Long",
    ]
    for r in res[:2]:
        assert r["summary"] == "run_correctness FAILED: ? trials did not all match."
        assert r["details"]["max_difference"] == [] and r["details"]["avg_difference"] == []
    assert res[2]["summary"] == ("run_correctness PASSED: (5 / 5) trials all matched the reference.\n"
                                 "Numerical precision: max_abs_err=0.00e+00 mean_abs_err=0.00e+00 max_rel_err=0.00e+00")
    assert (res[2]["trials_passed"], res[2]["trials_total"]) == (5, 5)


def test_submit_result(events):
    r = [e["payload"]["result"] for e in events if e["payload"]["kind"] == "tool_result"][-1]
    assert r["tool"] == "submit_kernel" and r["ok"] is True
    assert (r["runtime_us"], r["ref_runtime_us"], r["speedup"]) == (0.0312, 0.0384, 1.2308)
    assert "median" not in r["runtime_stats"] and "median" not in r["ref_runtime_stats"]
    assert r["runtime_stats"]["num_trials"] == 100
    assert r["warp_stalls_pct"] == {"long_scoreboard": 2856.6, "short_scoreboard": 1703.8}
    assert r["kernel_launch_stats"] == {"num_kernels": 5, "ref_num_kernels": 8, "fusion_ratio": 1.6,
                                        "total_cuda_time_us": 217.0}
    assert "Kernel runtime: 0.03 μs\n" in r["summary"] and "median=?μs" in r["summary"]
    diff = [e["payload"]["diff"] for e in events if e["payload"]["kind"] == "state_diff"][-1]
    assert {k: diff["new"][k] for k in ("runtime_us", "ref_runtime_us", "speedup", "compiled", "correctness")} == {
        "runtime_us": 0.0312, "ref_runtime_us": 0.0384, "speedup": 1.2308, "compiled": True, "correctness": True}


def test_gpu_specs_result(events):
    r = [e["payload"]["result"] for e in events if e["payload"]["kind"] == "tool_result"
         and e["payload"]["name"] == "get_gpu_specs"][0]
    assert r["device_name"] == "NVIDIA H100 80GB HBM3" and r["total_memory_gb"] == 79.1
    assert r["spec"]["GPU Architecture"] == "Hopper" and len(r["spec"]) == 16
    assert r["summary"].startswith("GPU specs for NVIDIA H100 80GB HBM3:\n  total memory (runtime): 79.1 GB\n")
