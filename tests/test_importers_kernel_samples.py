"""Kernel-generation sample records (issue 21, held-out pass of helper traces).

Real files read: github.com/Prathmesh234/MultiTurnKernel-SFT (snapshot fe4f1e8; no licence file:
not copied, see ``benchmarks/results/real_traces.md``), ``reasoning_traces_*.json``: one JSON list
of sample records a run of its trace generator (GLM-4.5-Air / Qwen3-235B writing Triton kernels
for KernelBench and KernelBook problems, benchmarked on a Modal H100), single-turn and multi-turn
(``turns`` of a feedback loop). Before: "not a trace (looks like a JSON array of 9 item(s)
(dict))", and the 1.28 MB multi-turn GLM file, cut inside its 106th record, "1001 bad lines". The
records below are minimal ones of the same structure (field names and value shapes as in the real
files, values made up).
"""

from __future__ import annotations

import json
import random

from ktui.trace import load
from ktui.trace.importers import detect
from ktui.trace.importers.registry import runs_in_file
from ktui.trace.importers.salvage import salvage_array

REF = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def __init__(self):\n"
       "        super().__init__()\n\n    def forward(self, x):\n        return torch.relu(x) * 2\n\n"
       "def get_inputs():\n    return [torch.rand(1024, 1024)]\n\ndef get_init_inputs():\n    return []\n")


def _k(block: int, bug: str = "") -> str:
    return ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\n"
            "def relu2(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n"
            "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n    m = offs < n\n"
            f"    x = tl.load(x_ptr + offs, mask=m{bug})\n    tl.store(y_ptr + offs, tl.maximum(x, 0) * 2, mask=m)\n\n"
            "def triton_kernel_wrapper(x):\n    y = torch.empty_like(x)\n"
            f"    relu2[(triton.cdiv(x.numel(), {block}),)](x, y, x.numel(), BLOCK={block})\n    return y\n")


def _res(ts, correct, speedup=0.0, kt=None, rt=None, error=None):
    return {"kernel_name": "generated_kernel", "timestamp": ts, "correctness": correct, "speedup": speedup,
            "reference_time_ms": rt, "kernel_time_ms": kt, "fast_0": bool(correct), "fast_1": bool(correct and speedup > 1),
            "fast_2": bool(correct and speedup > 2), "error": error}


def _multi(key="kernelbench_19", last_ok=True):
    turns = [
        {"turn": 1, "reasoning": None, "triton_code": _k(1024, bug=", other=None[0]"),
         "full_completion": "<triton>\n" + _k(1024, bug=", other=None[0]") + "</triton>",
         "result": _res("2026-03-02T00:30:45.395765", False, error="CompilationError: at 9:8:\n..."),
         "feedback_given": "Compilation/runtime error:\nCompilationError: at 9:8:\n\nFix and regenerate the corrected "
                           "code inside <triton>...</triton> tags."},
        {"turn": 2, "reasoning": "the mask argument was wrong", "triton_code": _k(1024),
         "full_completion": "Fixed.\n<triton>\n" + _k(1024) + "</triton>",
         "result": _res("2026-03-02T00:31:38.940019", True, 0.88, 0.107, 0.094),
         "feedback_given": "Correct but slow (0.88x PyTorch). Optimize and regenerate the improved code inside "
                           "<triton>...</triton> tags."},
        {"turn": 3, "reasoning": None, "triton_code": _k(4096) if last_ok else _k(4096, bug=", other=None[1]"),
         "full_completion": "Bigger blocks.\n<triton>\n" + _k(4096) + "</triton>",
         "result": _res("2026-03-02T00:32:46.275180", True, 1.31, 0.072, 0.094) if last_ok else
         _res("2026-03-02T00:32:46.275180", False, error="CompilationError: at 9:8"),
         "feedback_given": None},
    ]
    msgs = [{"role": "system", "content": "You are an expert GPU kernel engineer."},
            {"role": "user", "content": "Convert the following PyTorch code to an optimized Triton kernel:\n\n```python\n"
                                        + REF + "```"}]
    for t in turns:
        msgs.append({"role": "assistant", "content": t["full_completion"]})
        if t["feedback_given"]:
            msgs.append({"role": "user", "content": t["feedback_given"]})
    return {"sample_key": key, "source": "kernelbench", "level": 1, "name": "19_ReLU", "problem_id": 19,
            "pytorch_code": REF, "num_turns": 3, "stop_reason": "success_fast" if last_ok else "max_turns_reached",
            "final_triton_code": turns[-1]["triton_code"], "final_result": turns[-1]["result"], "turns": turns,
            "full_messages": msgs, "timestamp": "2026-03-02T00:32:49.000000"}


def _single(key="kernelbook_1174", ok=True):
    # older single-turn records keep the result as Python's repr of a dict
    res = {"correctness": ok, "speedup": 0.919 if ok else 0.0, "fast_0": ok, "fast_1": False, "fast_2": False,
           "error": None if ok else "TypeError: triton_kernel_wrapper() missing 1 required positional argument"}
    return {"sample_key": key, "source": "kernelbook", "level": "None", "name": "None", "problem_id": "None",
            "pytorch_code": REF, "thinking": "[Step-by-step reasoning about the conversion]",
            "model_reasoning": "Let me analyze the PyTorch code", "triton_code": _k(1024),
            "full_completion": "<triton>\n" + _k(1024) + "</triton>", "result": repr(res),
            "timestamp": "2026-02-16T02:13:03.770924"}


def _write(tmp_path, name, records, indent=2):
    p = tmp_path / name
    p.write_text(json.dumps(records, indent=indent))
    return p


def test_a_multi_turn_record_is_a_run_with_its_turns_kernels_and_verdicts(tmp_path):
    p = _write(tmp_path, "reasoning_traces_qwen3_multiturn.json", [_multi(), _single()])
    assert detect(str(p)).name == "kernel-samples"
    whole = load(str(p))
    assert "holds 2 runs" in whole.problems[0].message
    assert runs_in_file(str(p))[1] == ["kernelbench_19", "kernelbook_1174"]
    run = load(f"{p}#kernelbench_19")
    assert not run.problems
    assert (run.problem.level, run.problem.problem_id, run.problem.name) == (1, 19, "19_ReLU")
    assert run.problem.reference_source == REF and "pytorch_code" in run.problem.reference_origin
    assert len(run.turns) == 3 and [c.name for c in run.calls] == ["write_kernel", "benchmark"] * 3
    assert [c.result.status for c in run.calls if c.name == "benchmark"] == ["failed", "ok", "ok"]
    assert len(run.kernels) == 3
    assert [[u.status for u in k.uses if u.verdict] for k in run.kernels] == [["failed"], ["ok"], ["ok"]]
    assert run.outcome == "passed" and abs(run.metrics.speedup - 1.31) < 1e-9
    assert abs(run.metrics.runtime_us - 72.0) < 1e-6 and abs(run.metrics.ref_runtime_us - 94.0) < 1e-6
    users = [m[3] for m in run.messages if m[1] == "user"]
    assert users[0].startswith("Convert the following") and users[1].startswith("Compilation/runtime error")
    assert run.terminal and run.terminal[-1].text.startswith("stop_reason: success_fast")
    assert run.turns[1].reasoning == "the mask argument was wrong"


def test_the_files_verdict_is_the_final_kernels_not_an_earlier_turns(tmp_path):
    p = _write(tmp_path, "t.json", [_multi(last_ok=False)])
    run = load(f"{p}#kernelbench_19")
    # turn 2 was correct at 0.88x, the last turn (the final kernel) did not compile: failed
    assert run.outcome == "failed" and run.metrics.speedup is None
    assert run.final_kernel is not None and [u.status for u in run.final_kernel.uses if u.verdict] == ["failed"]


def test_single_turn_records_and_repeated_keys(tmp_path):
    p = _write(tmp_path, "reasoning_traces_glm45_correct.json", [_single(), _single(ok=False), _single("kernelbook_66")])
    assert runs_in_file(str(p))[1] == ["kernelbook_1174", "kernelbook_1174.2", "kernelbook_66"]
    a, b = load(f"{p}#kernelbook_1174"), load(f"{p}#kernelbook_1174.2")
    assert a.outcome == "passed" and abs(a.metrics.speedup - 0.919) < 1e-9 and len(a.turns) == 1
    assert a.turns[0].reasoning == "Let me analyze the PyTorch code"
    assert b.outcome == "failed" and "missing 1 required" in b.calls[-1].result.summary
    assert a.problem.name == "kernelbook_1174" and a.problem.dataset_variant == "KernelBook"
    assert "no run" in load(f"{p}#nope").problems[0].message


def test_a_list_cut_while_being_written_reads_its_whole_records(tmp_path):
    data = json.dumps([_multi("kernelbench_19"), _multi("kernelbench_20"), _multi("kernelbench_21")], indent=2)
    cut = data[: data.index('"kernelbench_21"') + 400]  # inside the third record
    p = tmp_path / "reasoning_traces_glm45_multiturn.json"
    p.write_text(cut)
    assert detect(str(p)).name == "kernel-samples"
    assert runs_in_file(str(p))[1] == ["kernelbench_19", "kernelbench_20"]
    run = load(f"{p}#kernelbench_20")
    assert len(run.turns) == 3 and run.outcome == "passed"
    assert any("breaks off after item 2" in pr.message and pr.severity == "warning" for pr in run.problems)
    # a whole array, an object, garbage: nothing salvaged
    assert salvage_array(b'[{"a": 1}, {"b": 2}]') is None and salvage_array(b'{"a": [1, 2') is None
    assert salvage_array(b'[{"a": 1}, {"b": [1, 2') == [{"a": 1}] and salvage_array(b"[{") is None
    assert salvage_array(b'\xef\xbb\xbf [1, 2, {"x": "ab') == [1, 2]
    # other JSON cut short is still not a trace of this format
    q = tmp_path / "events.json"
    q.write_text(json.dumps([{"kind": "x", "v": 1}, {"kind": "y"}])[:-5])
    assert detect(str(q)).name != "kernel-samples"


def test_bad_input_never_raises(tmp_path):
    base = [_multi(), _single()]
    data = json.dumps(base)
    for i, frac in enumerate((0.01, 0.2, 0.5, 0.77, 0.999)):
        p = tmp_path / f"cut{i}.json"
        p.write_text(data[: int(len(data) * frac)])
        for key in ["kernelbench_19", "kernelbook_1174"]:
            run = load(f"{p}#{key}")
            assert run.problems or run.turns is not None
    rng = random.Random(7)
    wrong = [None, 7, -1.5, True, "x", [], {}, [1, "a"], {"k": [None]}, "{'correctness': True, 'speedup': 'x'}"]

    def nodes(o):
        if isinstance(o, dict):
            for k, v in o.items():
                yield o, k
                yield from nodes(v)
        elif isinstance(o, list):
            for j, v in enumerate(o):
                yield o, j
                yield from nodes(v)

    for trial in range(80):
        m = json.loads(data)
        ns = list(nodes(m))
        for _ in range(1 + trial % 4):
            parent, k = ns[rng.randrange(len(ns))]
            parent[k] = rng.choice(wrong)
        p = tmp_path / f"m{trial}.json"
        p.write_text(json.dumps(m))
        for key in ["kernelbench_19", "kernelbook_1174"]:
            run = load(f"{p}#{key}")
            assert not any(pr.message.startswith("could not interpret") for pr in run.problems), (trial, run.problems)
