#!/usr/bin/env python3
"""Rebuild the seed PopcornBench run as an ensemble V1 trace.

Reads the run page ``../shared/seed/000_581c3f2f60c6fb9a.txt`` (a PopcornBench run page rendered as
text) and writes ``traces/popcorn_l1_p27_grok-4.3.jsonl``: the same run as the ensemble Rust
``EventLog`` would have recorded it (V1: compact JSON per line, ``msg-`` ids on bus messages,
``seed`` flags on tool events, ``cost`` events, ``state_diff`` from the popcorn world).

Everything the page shows is taken from the page and cross-checked against it; what the page does
not show (exact millisecond timestamps, ids, the system prompt, indentation of the earlier kernel
versions, the min/max of the runtime stats) is filled in deterministically and documented below.
Run it twice and you get the same bytes.

Stdlib only.  Usage::

    python scripts/build_seed_trace.py [--seed PAGE.txt] [--out TRACE.jsonl]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import hashlib
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SEED = REPO.parent / "shared" / "seed" / "000_581c3f2f60c6fb9a.txt"
DEFAULT_OUT = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"

ACTOR = "kernel_author"
MODEL = "grok-4.3"
TOOLS = ["fetch_problem", "get_gpu_specs", "compile_kernel", "run_correctness", "static_check", "submit_kernel"]
GPU_TOOLS = {"compile_kernel", "run_correctness", "submit_kernel"}  # tools that emit a gpu_seconds cost
DEVICE_NAME = "NVIDIA H100 80GB HBM3"

SYSTEM_PROMPT = (
    "You are an expert GPU kernel engineer. Write a custom CUDA kernel that replaces a PyTorch "
    "reference, producing numerically equivalent output faster than the reference.\n\n"
    "`submit_kernel` records your final result and ends the session; call it once.\n\n"
    "## Correctness\n\n"
    "Outputs must match the reference within tolerance: fp32 uses atol=rtol=1e-4; fp16/bf16 use "
    "atol=rtol=1e-2. Do not use try/except fallbacks to the reference, patch timing or RNG functions, "
    "or otherwise route around the evaluation.\n\n"
    "## Tools\n\n"
    "Write a kernel, compile it, check correctness, change something, repeat, submit. Speedup vs the "
    "PyTorch reference and SOL (Speed of Light) are the objectives."
)
KICKOFF = "Begin. Write ModelNew with a custom CUDA kernel, check it, and call submit_kernel once."

# Per-turn (LLM ms, tool ms).  The page only shows tenths of a second; these were picked so that every
# value rounds (half up, on the ms integer) to the page's LLM, tools and turn columns, and so that the
# whole run (setup + turns + tail) rounds to the header's wall clock 1146.3 s although the nine rounded
# turn walls only add up to 1146.2 s.
TURN_MS = [
    (2712, 73391),    # turn 0: 2.7 + 73.4 = 76.1
    (11480, 100930),  # turn 1: 11.5 + 100.9 = 112.4
    (3905, 268420),   # turn 2: 3.9 + 268.4 = 272.3
    (3870, 125760),   # turn 3: 3.9 + 125.8 = 129.6 (page's rounded parts add up to 129.7)
    (2740, 100940),   # turn 4: 2.7 + 100.9 = 103.7 (rounded parts: 103.6)
    (2660, 134260),   # turn 5: 2.7 + 134.3 = 136.9 (rounded parts: 137.0)
    (2930, 105060),   # turn 6: 2.9 + 105.1 = 108.0
    (4790, 12),       # turn 7: 4.8 + 0.0 = 4.8
    (5820, 196590),   # turn 8: 5.8 + 196.6 = 202.4
]
# Setup offsets from the start (ms): backend note, agent_spawned, fetch call, fetch result+diff, kickoff.
SETUP_MS = {"backend": 0, "spawned": 1, "fetch_call": 3, "fetch_result": 21, "kickoff": 24}
# Tail offsets after the last tool event (ms): halting note, grader note.
TAIL_MS = {"halt": 4, "grader": 6}

GPU_SPEC = [
    ("GPU Architecture", "Hopper"),
    ("GPU Memory", "80GB"),
    ("Memory Bandwidth", "3.35 TB/s"),
    ("FP64 TFLOPS", "34"),
    ("FP64 Tensor Core TFLOPS", "67"),
    ("FP32 TFLOPS", "67"),
    ("TF32 Tensor Core TFLOPS", "989 with sparsity"),
    ("BFLOAT16 Tensore Core TFLOPS", "1979 with sparsity"),
    ("FP16 Tensor Core TFLOPS", "1979 with sparsity"),
    ("FP8 Tensor Core TFLOPS", "3958 with sparsity"),
    ("INT8 Tensor Core TOPS", "3958 with sparsity"),
    ("Register File Size", "64K 32-bit registers per SM"),
    ("Maximum number of registers per thread", "255"),
    ("Maximum number of thread blocks per SM", "32"),
    ("Shared memory capacity per SM", "228 KB"),
    ("Maximum shared memory per thread block", "227 KB"),
]

NUMERICAL_PRECISION = {"max_abs_error": 0.0, "mean_abs_error": 0.0, "max_rel_error": 0.0, "mean_rel_error": 0.0}
PRECISION_LINE = "Numerical precision: max_abs_err=0.00e+00 mean_abs_err=0.00e+00 max_rel_err=0.00e+00"


class PageError(ValueError):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise PageError(msg)


def collapse(s: str) -> str:
    """What the page does to text: runs of whitespace become one space."""
    return re.sub(r"\s+", " ", s).strip()


def collapse_spaces(s: str) -> str:
    """What the page does to JSON arguments: runs of spaces become one space."""
    return re.sub(r" +", " ", s)


def tenths(ms: int) -> int:
    """Round a ms integer half-up to tenths of a second (as an int count of tenths)."""
    return (ms + 50) // 100


def parse_tenths(s: str) -> int:
    whole, frac = s.split(".")
    return int(whole) * 10 + int(frac)


def hexid(kind: str, n: int) -> str:
    return "msg-" + hashlib.sha1(f"ktui-seed/popcorn_l1_p27_grok-4.3/{kind}/{n}".encode()).hexdigest()[:32]


def sha1(code: str) -> str:
    return hashlib.sha1(code.encode("utf-8", "replace")).hexdigest()


# ----------------------------------------------------------------------------------------------- page


def parse_page(text: str) -> dict:
    lines = text.split("\n")
    page: dict = {}

    def value_after(label: str) -> str:
        i = lines.index(label)
        for ln in lines[i + 1:]:
            if ln.strip():
                return ln
        raise PageError(f"no value after {label!r}")

    check(lines[0] == "L1 P27 · popcorn", "unexpected page title")
    check(value_after("model") == MODEL, "model")
    check(value_after("backend") == "cuda fp32", "backend")
    check(value_after("variant") == "popcorn", "variant")
    check(lines[2] == "correct 27_permutation_all_to_all.py", "problem line")
    page["name"] = lines[2].split(" ", 1)[1]
    turns_max = value_after("turns / max")
    m = re.fullmatch(r"(\d+) / (\d+)", turns_max)
    check(m is not None, "turns / max")
    page["n_turns"], page["max_turns"] = int(m.group(1)), int(m.group(2))
    page["tokens_total"] = int(value_after("tokens (total)").replace(",", ""))
    m = re.fullmatch(r"(\d+\.\d)s", value_after("wall clock"))
    check(m is not None, "wall clock")
    page["wall_tenths"] = parse_tenths(m.group(1))
    started = value_after("started")
    page["started"] = started
    page["start_ms"] = int(
        _dt.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc).timestamp() * 1000
    )

    # reference source: between its header and the first turn header
    ref_hdr = lines.index("reference PyTorch source (the prompt the agent sees)")
    first_turn = next(i for i, ln in enumerate(lines) if ln.startswith("turn 0"))
    ref = "\n".join(lines[ref_hdr + 1:first_turn]).strip("\n")
    # The page drops a code block's trailing newline (see the final listing below); restore it.
    page["ref_arch_src"] = ref + "\n"

    # final listing: after its header, to the end of the page
    fin_hdr = next(i for i, ln in enumerate(lines) if ln.startswith("final submitted kernel ("))
    m = re.fullmatch(r"final submitted kernel \((\d+) lines, ([\d,]+) chars\) — full source, untruncated",
                     lines[fin_hdr])
    check(m is not None, "final listing header")
    page["final_lines"], page["final_chars"] = int(m.group(1)), int(m.group(2).replace(",", ""))
    body = "\n".join(lines[fin_hdr + 1:]).strip("\n")
    page["final_listing"] = body

    # turns
    turn_text = lines[first_turn:fin_hdr]
    hdr_idx = [i for i, ln in enumerate(turn_text) if re.match(r"turn \d", ln)]
    check(len(hdr_idx) == page["n_turns"], f"expected {page['n_turns']} turn headers, got {len(hdr_idx)}")
    turns = []
    for k, start in enumerate(hdr_idx):
        end = hdr_idx[k + 1] if k + 1 < len(hdr_idx) else len(turn_text)
        block = [ln for ln in turn_text[start:end] if ln.strip()]
        hdr = block[0]
        check(hdr.startswith(f"turn {k}"), f"turn {k} header")
        m = re.fullmatch(
            r"(\d+\.\d)s turn · (\d+\.\d)s LLM · (\d+\.\d)s tools · tokens in=([\d,]+) · out=([\d,]+) · "
            r"total=([\d,]+)( · FINAL)?",
            hdr[len(f"turn {k}"):],
        )
        check(m is not None, f"turn {k} header format: {hdr!r}")
        t = {
            "turn": k,
            "wall": parse_tenths(m.group(1)),
            "llm": parse_tenths(m.group(2)),
            "tools": parse_tenths(m.group(3)),
            "tokens_in": int(m.group(4).replace(",", "")),
            "tokens_out": int(m.group(5).replace(",", "")),
            "tokens_total": int(m.group(6).replace(",", "")),
            "final": bool(m.group(7)),
        }
        check(block[1] == "reasoning", f"turn {k}: reasoning label")
        t["reasoning"] = block[2]
        m = re.fullmatch(r"call → (\w+)", block[3])
        check(m is not None, f"turn {k}: call line")
        name = m.group(1)
        t["tool"] = name
        check(block[4].startswith("call" + name + " "), f"turn {k}: call args line")
        t["args_page"] = block[4][len("call" + name + " "):]
        t["args"] = json.loads(t["args_page"])
        m = re.fullmatch(r"result ← (\w+) \((ok|fail)\)", block[5])
        check(m is not None and m.group(1) == name, f"turn {k}: result line")
        status = m.group(2)
        t["result_ok"] = status == "ok"
        check(block[6].startswith(status + name + " "), f"turn {k}: result text")
        t["result_page"] = block[6][len(status + name + " "):]
        check(len(block) == 7, f"turn {k}: unexpected extra lines")
        turns.append(t)
    page["turns"] = turns
    return page


# -------------------------------------------------------------------------------------------- kernels


def reindent(collapsed_code: str, v4: str) -> str:
    """Give a space-collapsed kernel back its indentation, taken from v4 (the real final listing).

    Lines are aligned with v4 by difflib on their stripped text; an aligned line takes its v4 twin's
    indentation; a replaced line takes the indentation of the v4 line at the same position of the
    replaced block; an extra line takes the indentation of the v4 line that follows it.
    """
    src = collapsed_code.split("\n")
    ref = v4.split("\n")
    a = [ln.strip() for ln in src]
    b = [ln.strip() for ln in ref]

    def indent(s: str) -> str:
        return s[: len(s) - len(s.lstrip(" "))]

    out = [None] * len(a)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        for n, i in enumerate(range(i1, i2)):
            if op == "equal":
                j = j1 + n
            elif op == "replace":
                j = min(j1 + n, j2 - 1)
            else:  # "delete": a line v4 does not have
                j = j1 if j1 < len(b) else len(b) - 1
            out[i] = (indent(ref[j]) + a[i]) if a[i] else ""
    code = "\n".join(out)
    check(collapse_spaces(code) == collapsed_code, "re-indented kernel does not collapse back to the page text")
    return code


def kernel_versions(page: dict) -> tuple[list[str], list[int]]:
    """Return the distinct kernel texts (v1..v4) and, per turn, the index of its kernel (-1: none)."""
    v4 = page["final_listing"] + "\n"  # the page's "1,547 chars" counts the file's final newline
    check(len(v4) == page["final_chars"] == 1547, f"final listing is {len(v4)} chars, page says {page['final_chars']}")
    check(len(v4.split("\n")) == page["final_lines"] == 55, "final listing line count")
    versions: list[str] = []
    per_turn: list[int] = []
    for t in page["turns"]:
        collapsed = t["args"].get("kernel_code")
        if collapsed is None:
            per_turn.append(-1)
            continue
        code = reindent(collapsed, v4)
        check(collapse_spaces(code) == collapsed, f"turn {t['turn']}: reindent round trip")
        if code not in versions:
            versions.append(code)
        per_turn.append(versions.index(code))
    check(len(versions) == 4, f"expected 4 distinct kernels, got {len(versions)}")
    check(per_turn == [-1, 0, 1, 2, 2, 3, 3, 3, 3], f"kernel per turn: {per_turn}")
    v1, v2, v3, v4r = versions
    check(v4r == v4, "turns 5-8 kernel differs from the final listing")
    d12 = [ln for ln in difflib.unified_diff(v1.split("\n"), v2.split("\n"), lineterm="", n=0)
           if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    check(d12 == ["-    verbose=True", "+    verbose=False"], f"v1 -> v2 diff: {d12}")
    d34 = [ln for ln in difflib.unified_diff(v3.split("\n"), v4.split("\n"), lineterm="", n=0)
           if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    minus = [ln[1:] for ln in d34 if ln[0] == "-"]
    plus = [ln[1:] for ln in d34 if ln[0] == "+"]
    check(len(minus) == len(plus) == 3, f"v3 -> v4 changes {len(minus)}/{len(plus)} lines")
    check([m.replace("int*", "int64_t*").replace("int p", "int64_t p").replace("<int>", "<int64_t>")
           for m in minus] == plus, "v3 -> v4 is not int -> int64_t")
    return versions, per_turn


# ------------------------------------------------------------------------------------------- effects


def gpu_specs_effect() -> dict:
    summary = "\n  ".join(
        [f"GPU specs for {DEVICE_NAME}:", "total memory (runtime): 79.1 GB", "spec entry: H100"]
        + [f"{k}: {v}" for k, v in GPU_SPEC]
    )
    return {
        "ok": True,
        "tool": "get_gpu_specs",
        "device_name": DEVICE_NAME,
        "total_memory_gb": 79.1,
        "spec": dict(GPU_SPEC),
        "summary": summary,
    }


def compile_effect() -> dict:
    return {"ok": True, "tool": "compile_kernel", "summary": "compile_kernel PASSED: kernel compiled without errors."}


def correctness_fail_effect(runtime_error: str) -> dict:
    issue = "? trials did not all match."
    return {
        "ok": False,
        "tool": "run_correctness",
        "summary": f"run_correctness FAILED: {issue}",
        "details": {
            "correctness_issue": issue,
            "runtime_error": runtime_error,
            "max_difference": [],
            "avg_difference": [],
        },
    }


def correctness_pass_effect() -> dict:
    return {
        "ok": True,
        "tool": "run_correctness",
        "summary": "run_correctness PASSED: (5 / 5) trials all matched the reference.\n" + PRECISION_LINE,
        "numerical_precision": dict(NUMERICAL_PRECISION),
        "trials_passed": 5,
        "trials_total": 5,
    }


def static_check_effect() -> dict:
    return {
        "ok": True,
        "tool": "static_check",
        "summary": "static_check PASSED: no violations or warnings detected.",
        "errors": [],
        "warnings": [],
    }


RUNTIME_MS = 0.0312      # stored under *runtime_us but really ms (format doc §7); 3 significant figures
REF_RUNTIME_MS = 0.0384
SPEEDUP = round(REF_RUNTIME_MS / RUNTIME_MS, 4)


def submit_effect() -> dict:
    summary = "\n".join([
        "submit_kernel PASSED: (5 / 5) correctness trials all passed.",
        "Kernel runtime: 0.03 μs",
        "Runtime stats: mean=0.03μs median=?μs std=0.00μs",
        PRECISION_LINE,
        "Memory: 33.0 MB peak (ref: 33.0 MB, ratio: 1.0x)",
        "Kernel launches: 5 (ref: 8, fusion ratio: 1.6)",
        "SOL score: 0.0004",
    ])
    return {
        "ok": True,
        "tool": "submit_kernel",
        "summary": summary,
        "runtime_us": RUNTIME_MS,
        "ref_runtime_us": REF_RUNTIME_MS,
        "speedup": SPEEDUP,
        "excessive_speedup": False,
        "correctness_trials": {"passed": 5, "total": 5},
        # kernelbench.timing.get_timing_stats: ms, 3 significant figures, no "median" key.
        "runtime_stats": {"mean": RUNTIME_MS, "std": 0.0, "min": 0.0307, "max": 0.0331, "num_trials": 100,
                          "hardware": DEVICE_NAME, "device": "cuda:0"},
        "ref_runtime_stats": {"mean": REF_RUNTIME_MS, "std": 0.0, "min": 0.0379, "max": 0.0407, "num_trials": 100,
                              "hardware": DEVICE_NAME, "device": "cuda:0"},
        "numerical_precision": dict(NUMERICAL_PRECISION),
        "memory": {"kernel_peak_mb": 33.0, "ref_peak_mb": 33.0, "ratio": 1.0},
        "kernel_launch_stats": {"num_kernels": 5, "ref_num_kernels": 8, "fusion_ratio": 1.6, "total_cuda_time_us": 217.0},
        "sol": {"sol_score": 0.0004, "dram_util_pct": 0.0, "compute_util_pct": 0.0, "bottleneck": "unknown",
                "dominant_pipe": None, "arithmetic_intensity": None, "ridge_point": 20.0},
        "roofline": {
            "dram_bandwidth_gbs": 1.45, "dram_util_pct": 0.0, "fp32_tflops": None, "fp32_util_pct": None,
            "fp16_tflops": None, "occupancy_pct": 10.6, "bottleneck": "unknown", "dominant_pipe_pct": None,
            "arithmetic_intensity": None, "ridge_point": 20.0, "l1_hit_pct": None, "l2_hit_pct": 99.3,
            "ld_sectors_per_req": 7.5, "st_sectors_per_req": None, "regs_per_thread": None,
            "smem_per_block_bytes": 1024, "block_size": 256, "peak_bw_gbs": 3350.0, "peak_fp32_tflops": 67.0,
            "peak_fp16_tflops": 1979.0,
        },
        # The page's shares are over 100 %: kept as recorded.
        "warp_stalls_pct": {"long_scoreboard": 2856.6, "short_scoreboard": 1703.8},
    }


def page_text_of(effect: dict) -> str:
    """How the run page prints a tool result (whitespace collapsed)."""
    s = effect["summary"]
    if not effect["ok"] and "details" in effect:
        s += " runtime_error: " + effect["details"]["runtime_error"]
    return collapse(s)


def check_metrics_against_page(text: str, eff: dict) -> None:
    """Spot-check the submit effect against the page's metric sections."""
    def shown(label: str, value: str) -> None:
        pat = "\n" + label + "\n\n" + value + "\n"
        check(pat in text, f"page does not show {label!r} = {value!r}")

    shown("kernel runtime", "0.03 μs")
    shown("ref runtime", "0.04 μs")
    shown("speedup", f"{eff['speedup']:.2f}x")
    shown("kernel mean / median / std", f"{eff['runtime_stats']['mean']:.2f} / — / {eff['runtime_stats']['std']:.2f} μs")
    shown("ref mean / median / std", f"{eff['ref_runtime_stats']['mean']:.2f} / — / {eff['ref_runtime_stats']['std']:.2f} μs")
    shown("kernel peak", f"{eff['memory']['kernel_peak_mb']:.2f} MB")
    shown("ref peak", f"{eff['memory']['ref_peak_mb']:.2f} MB")
    shown("kernel / ref", f"{eff['memory']['ratio']:.2f}x")
    shown("fusion ratio (ref / kernel)", f"{eff['kernel_launch_stats']['fusion_ratio']:.2f}x")
    shown("total cuda time", f"{eff['kernel_launch_stats']['total_cuda_time_us']:.0f} μs")
    shown("SOL score (0–1)", f"{eff['sol']['sol_score']:.3e}")
    shown("occupancy %", f"{eff['roofline']['occupancy_pct']:.1f}%")
    shown("L2 hit %", f"{eff['roofline']['l2_hit_pct']:.1f}%")
    shown("ld sectors / req", f"{eff['roofline']['ld_sectors_per_req']:.2f}")
    shown("dram bandwidth", f"{eff['roofline']['dram_bandwidth_gbs']:.2f} GB/s")
    shown("smem / block", f"{eff['roofline']['smem_per_block_bytes']} B")
    shown("block size", f"{eff['roofline']['block_size']}")
    shown("peak bw", f"{eff['roofline']['peak_bw_gbs']:.2f} GB/s")
    shown("peak fp32 tflops", f"{eff['roofline']['peak_fp32_tflops']:.2f}")
    shown("peak fp16 tflops", f"{eff['roofline']['peak_fp16_tflops']:.2f}")
    shown("ridge point", f"{eff['sol']['ridge_point']:.2f}")
    shown("long_scoreboard", f"{eff['warp_stalls_pct']['long_scoreboard']:.1f}%")
    shown("short_scoreboard", f"{eff['warp_stalls_pct']['short_scoreboard']:.1f}%")


# --------------------------------------------------------------------------------------------- trace


def build_events(page: dict) -> list[dict]:
    turns = page["turns"]
    check(len(turns) == len(TURN_MS) == 9, "turn count")
    check(page["max_turns"] == 12, "max turns")
    versions, per_turn = kernel_versions(page)

    # timing: every chosen ms value must round to what the page shows
    for t, (llm_ms, tool_ms) in zip(turns, TURN_MS, strict=True):
        check(tenths(llm_ms) == t["llm"], f"turn {t['turn']}: LLM {llm_ms} ms vs page {t['llm'] / 10}")
        check(tenths(tool_ms) == t["tools"], f"turn {t['turn']}: tools {tool_ms} ms vs page {t['tools'] / 10}")
        check(tenths(llm_ms + tool_ms) == t["wall"], f"turn {t['turn']}: wall vs page {t['wall'] / 10}")
    total_ms = SETUP_MS["kickoff"] + sum(a + b for a, b in TURN_MS) + TAIL_MS["grader"]
    check(tenths(total_ms) == page["wall_tenths"], f"wall clock {total_ms} ms vs page {page['wall_tenths'] / 10}")
    check(sum(t["tokens_total"] for t in turns) == page["tokens_total"], "token totals")

    events: list[dict] = []
    batch_tick = [0]
    counters = {"tool": 0, "message": 0}
    running: dict[str, float] = {}

    def emit(ts: int, actor, payload: dict, *, message: bool = False, new_batch: bool = False) -> None:
        # tick: the watcher's lagging event count; events written together share the batch's count
        if new_batch:
            batch_tick[0] = len(events)
        mid = None
        if message:
            mid = hexid("message", counters["message"])
            counters["message"] += 1
        events.append({"tick": batch_tick[0], "ts_ms": ts, "actor": actor, "message_id": mid, "payload": payload})

    def cost(ts: int, unit: str, amount: float) -> None:
        running[unit] = round(running.get(unit, 0.0) + amount, 3)
        emit(ts, ACTOR, {"kind": "cost", "unit": unit, "amount": float(amount), "running_total": running[unit]})

    def new_call_id() -> str:
        cid = hexid("tool_call", counters["tool"])
        counters["tool"] += 1
        return cid

    t0 = page["start_ms"]
    emit(t0 + SETUP_MS["backend"], None, {"kind": "system", "note": "ensemble: backend=xai"}, new_batch=True)
    spawned = {
        "kind": "agent_spawned", "actor_id": ACTOR, "model": MODEL, "tools": TOOLS,
        "system_prompt": SYSTEM_PROMPT, "params": {"max_turns": page["max_turns"], "persona": "normal"},
    }
    # JSON note bodies are written by the Python side with json.dumps defaults (", " / ": "), as in the
    # recorded traces; only the envelope is compact.
    emit(t0 + SETUP_MS["spawned"], None, {"kind": "system", "note": json.dumps(spawned, ensure_ascii=False)})

    # seeded fetch_problem
    fid = new_call_id()
    fargs = {"level": 1, "problem_id": 27, "dataset_src": "local"}
    emit(t0 + SETUP_MS["fetch_call"], ACTOR,
         {"kind": "tool_call", "id": fid, "name": "fetch_problem", "args": fargs, "seed": True})
    ref = page["ref_arch_src"]
    feff = {"ok": True, "level": 1, "problem_id": 27, "name": page["name"], "ref_arch_chars": len(ref),
            "ref_arch_src": ref, "backend": "cuda", "precision": "fp32", "variant": "popcorn"}
    emit(t0 + SETUP_MS["fetch_result"], ACTOR,
         {"kind": "tool_result", "id": fid, "name": "fetch_problem", "result": feff, "is_error": False, "seed": True})
    emit(t0 + SETUP_MS["fetch_result"], ACTOR,
         {"kind": "state_diff",
          "diff": {"field": "problem", "old": None, "new": {"level": 1, "problem_id": 27, "name": page["name"]}},
          "seed": True})
    emit(t0 + SETUP_MS["kickoff"], "user", {"kind": "user_message", "text": KICKOFF}, message=True)

    cursor = t0 + SETUP_MS["kickoff"]
    fails = iter(["Expected a 'cuda' device type for generator but found 'cpu'",
                  "expected scalar type Int but found Long"])
    for t, (llm_ms, tool_ms), vi in zip(turns, TURN_MS, per_turn, strict=True):
        k = t["turn"]
        ts = cursor + llm_ms
        reasoning_tokens = t["tokens_total"] - t["tokens_in"] - t["tokens_out"]
        check(reasoning_tokens > 0, f"turn {k}: reasoning tokens")
        batch_tick[0] = len(events)  # the completion's costs and message are written together
        cost(ts, "tokens_in", t["tokens_in"])
        cost(ts, "tokens_out", t["tokens_out"])
        cost(ts, "tokens_reasoning", reasoning_tokens)
        emit(ts, ACTOR, {"kind": "agent_message", "text": t["reasoning"]}, message=True)

        name = t["tool"]
        args = {} if vi < 0 else {"kernel_code": versions[vi]}
        check(set(args) == set(t["args"]), f"turn {k}: argument keys")
        cid = new_call_id()
        emit(ts, ACTOR, {"kind": "tool_call", "id": cid, "name": name, "args": args, "seed": False}, new_batch=True)

        if name == "get_gpu_specs":
            eff = gpu_specs_effect()
        elif name == "compile_kernel":
            eff = compile_effect()
        elif name == "run_correctness":
            eff = correctness_pass_effect() if t["result_ok"] else correctness_fail_effect(next(fails))
        elif name == "static_check":
            eff = static_check_effect()
        elif name == "submit_kernel":
            eff = submit_effect()
        else:
            raise PageError(f"unknown tool {name}")
        check(eff["ok"] == t["result_ok"], f"turn {k}: ok flag")
        check(page_text_of(eff) == t["result_page"],
              f"turn {k}: result text differs from the page:\n{page_text_of(eff)!r}\n{t['result_page']!r}")
        rts = ts + tool_ms
        emit(rts, ACTOR, {"kind": "tool_result", "id": cid, "name": name, "result": eff, "is_error": False,
                          "seed": False}, new_batch=True)
        if name == "submit_kernel":
            emit(rts, ACTOR, {"kind": "state_diff", "diff": {
                "field": "kernel_submissions", "old": None,
                "new": {"kernel_hash": sha1(args["kernel_code"]), "compiled": True, "correctness": True,
                        "runtime_us": eff["runtime_us"], "ref_runtime_us": eff["ref_runtime_us"],
                        "speedup": eff["speedup"]}}})
        if name in GPU_TOOLS:
            cost(rts, "gpu_seconds", tool_ms / 1000)
        cursor = rts

    emit(cursor + TAIL_MS["halt"], None, {"kind": "system", "note": "scheduler quiescent; halting"}, new_batch=True)
    grader = {"kind": "grader", "scenario": "popcorn.single_problem",
              "scores": {"submitted": 1.0, "submission_passed": 1.0, "any_correct": 1.0, "lint_skipped": 0.0,
                         "excessive_speedup_flagged": 0.0}}
    emit(cursor + TAIL_MS["grader"], None, {"kind": "system", "note": "grader: " + json.dumps(grader)})

    # whole-trace invariants
    check(events[-1]["ts_ms"] - events[0]["ts_ms"] == total_ms, "total span")
    ticks = [e["tick"] for e in events]
    check(ticks == sorted(ticks), "ticks decrease")
    tss = [e["ts_ms"] for e in events]
    check(tss == sorted(tss), "timestamps decrease")
    return events


def render(events: list[dict]) -> str:
    return "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)


def build(seed: Path) -> str:
    text = seed.read_text(encoding="utf-8")
    page = parse_page(text)
    check_metrics_against_page(text, submit_effect())
    return render(build_events(page))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=Path, default=DEFAULT_SEED, help="the run page (text)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="trace to write")
    ns = ap.parse_args(argv)
    out = build(ns.seed)
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    with open(ns.out, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(out)
    print(f"wrote {ns.out} ({out.count(chr(10))} events, {len(out)} chars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
