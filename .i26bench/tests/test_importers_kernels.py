"""Kernel versions from writes, edits, patches, heredocs and fenced blocks; verifier evidence;
the repro pre-check. Unit tests on ktui.trace.importers (kernels, tracker, evidence, patches), then the synthetic traces
(tests/fixtures/formats, hand-written: see their README) end to end."""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace import load
from ktui.trace.importers.evidence import evidence
from ktui.trace.importers.kernels import fenced_kernels
from ktui.trace.importers.patches import apply_hunks, parse_patch
from ktui.trace.importers.tracker import FileTracker
from ktui.trace.model import ERROR, FAILED, OK, KernelVersion, Run
from ktui.trace.platform import repro_precheck

HERE = Path(__file__).resolve().parent
SYN = HERE / "fixtures" / "formats"
CUDA = SYN / "synthetic_claude_code_write_two_edits_cuda.jsonl"
TRITON = SYN / "synthetic_codex_apply_patch_triton.jsonl"
MODEL = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


def versions(tr: FileTracker, prompt: str = "") -> Run:
    run = Run(path="x")
    run.problem.prompt = prompt
    tr.finish(run)
    return run


# ---- heredocs ----------------------------------------------------------------------------------
def test_heredoc_forms():
    tr = FileTracker()
    tr.shell("cat > solution.py << 'EOF'\n" + MODEL + "EOF\n", None, 0, 1)
    tr.shell('cat <<"END" >/tmp/k.py\n' + MODEL + "END\necho done", None, 1, 2)
    tr.shell("tee b.py <<EOF >/dev/null\n" + MODEL + "EOF", None, 2, 3)
    tr.shell("cat >> solution.py <<EOF\n# more\nEOF\n", None, 3, 4)
    tr.shell("cat <<-EOF > tabs.py\n\t" + MODEL.replace("\n", "\n\t").rstrip("\t") + "\tEOF\n", None, 4, 5)
    tr.shell("python - <<EOF\nprint('ModelNew')\nEOF\n", None, 5, 6)  # no file: not a write
    assert tr.content["solution.py"] == MODEL + "# more\n"
    assert tr.content["/tmp/k.py"] == MODEL and tr.content["b.py"] == MODEL and tr.content["tabs.py"] == MODEL
    run = versions(tr)
    assert [(k.path, k.origin) for k in run.kernels] == [("solution.py", "heredoc"), ("solution.py", "heredoc >>")]
    # /tmp/k.py, b.py and tabs.py have the same content as v1: the same version, used again
    assert len(run.kernels[0].uses) == 4


def test_heredoc_without_its_delimiter_is_partial():
    tr = FileTracker()
    tr.shell("cat > solution.py << 'EOF'\n" + MODEL, None, 0, 1)
    k = versions(tr).kernels[0]
    assert k.partial and k.code == MODEL and "no closing delimiter" in k.origin


def test_cp_and_mv_of_a_known_file():
    tr = FileTracker()
    tr.write("a.py", MODEL, None, 0, 1)
    tr.shell("cp a.py solution.py", None, 1, 2)
    assert tr.content["solution.py"] == MODEL


# ---- edits ---------------------------------------------------------------------------------------
def test_edit_applied_to_the_last_known_content_and_partial_without_base():
    tr = FileTracker()
    tr.write("k.cu", "__global__ void f() { int a = 1; }\n", None, 0, 1)
    assert tr.edit("k.cu", "int a = 1;", "int a = 2;", None, 1, 2) is None
    assert tr.content["k.cu"] == "__global__ void f() { int a = 2; }\n"
    # replace_all
    tr.write("r.cu", "__global__ x x x\n", None, 2, 3)
    tr.edit("r.cu", "x", "y", None, 3, 4, replace_all=True)
    assert tr.content["r.cu"] == "__global__ y y y\n"
    # old text not in the file: kept as a partial version, and said so
    msg = tr.edit("k.cu", "no such text", "__global__ void g()", None, 4, 5)
    assert msg and "not found" in msg
    # no base at all
    assert tr.edit("new.cu", "a", "__global__ void h()", None, 5, 6) is None
    run = versions(tr)
    partial = [k for k in run.kernels if k.partial]
    assert [(k.path, k.code) for k in partial] == [("k.cu", "__global__ void g()"), ("new.cu", "__global__ void h()")]
    assert "not in the trace" in partial[1].origin
    assert all(isinstance(k, KernelVersion) for k in run.kernels)


def test_observed_content_is_a_base_not_a_version():
    tr = FileTracker()
    tr.observe("m.py", MODEL)
    tr.edit("m.py", "pass", "def forward(self, x):\n        return x", None, 0, 1)
    run = versions(tr)
    assert len(run.kernels) == 1 and not run.kernels[0].partial
    assert run.kernels[0].code == MODEL.replace("pass", "def forward(self, x):\n        return x")


# ---- apply_patch ---------------------------------------------------------------------------------
def test_parse_and_apply_patch():
    patch = ("*** Begin Patch\n*** Update File: a.py\n@@ def f():\n     x = 1\n-    y = 2\n+    y = 3\n"
             "*** Add File: b.py\n+hello\n*** Delete File: c.py\n*** End Patch")
    ops = parse_patch(patch)
    assert [(o[0], o[1]) for o in ops] == [("update", "a.py"), ("add", "b.py"), ("delete", "c.py")]
    text, err = apply_hunks("def f():\n    x = 1\n    y = 2\n", ops[0][2])
    assert err is None and text == "def f():\n    x = 1\n    y = 3\n"
    _, err = apply_hunks("nothing alike\n", ops[0][2])
    assert err and "context" in err


def test_patch_move_and_unknown_base():
    tr = FileTracker()
    tr.write("k.py", MODEL, None, 0, 1)
    probs = tr.patch("*** Begin Patch\n*** Update File: k.py\n*** Move to: solution.py\n@@\n"
                     " class ModelNew(torch.nn.Module):\n-    pass\n+    x = 1\n*** End Patch", None, 1, 2)
    assert probs == [] and "k.py" not in tr.content
    assert tr.content["solution.py"] == MODEL.replace("pass", "x = 1")
    tr.patch("*** Begin Patch\n*** Update File: other.py\n@@\n-a\n+class ModelNew: pass\n*** End Patch", None, 2, 3)
    run = versions(tr)
    assert run.kernels[-1].partial and run.kernels[-1].code == "class ModelNew: pass"


# ---- fenced blocks ---------------------------------------------------------------------------------
def test_fenced_blocks_with_kernels_only():
    text = ("Here:\n```python\n" + MODEL + "```\nand\n```bash\ncat ModelNew\n```\n```cuda\n__global__ void k(){}\n```\n"
            "```python\nprint(1)\n```")
    assert fenced_kernels(text) == [MODEL, "__global__ void k(){}\n"]


# ---- evidence --------------------------------------------------------------------------------------
def test_evidence_forms():
    ev = evidence("Result: PASS\nCorrectness: 1/1 (100.0%)\nSpeedup: 0.23x\n")
    assert (ev.status, ev.correct, ev.speedup) == (OK, True, 0.23)
    assert ev.lines == ["Result: PASS", "Speedup: 0.23x", "Correctness: 1/1"]
    ev = evidence("[KernelBench] Correctness: False\nError: Correctness failed on trial 1: max diff = 16.5\n")
    assert (ev.status, ev.correct) == (FAILED, False)
    ev = evidence("triton.compiler.errors.CompilationError: at 10:4: bad\n")
    assert ev.status == FAILED and ev.lines[0].startswith("triton.compiler.errors.CompilationError")
    assert evidence("LLVM ERROR: IO failure on output stream: No space left on device\n").status == ERROR
    assert evidence("all good, nothing measured here\n") is None
    assert evidence("the speedup is poor") is None  # prose, not a measurement
    big = "x" * (10 << 20) + "\nResult: FAIL\n"
    assert evidence(big).status == FAILED  # the tail of a huge output is read


# ---- the synthetic traces end to end -----------------------------------------------------------------
def test_claude_code_write_then_two_edits_of_a_cuda_file():
    """SYNTHETIC fixture (hand-written): Write, Edit, Edit of add.cu, a build + check, a partial Edit."""
    lines = [json.loads(x) for x in CUDA.read_text().splitlines()]
    tool_uses = {b["id"]: b["input"] for ln in lines if ln["type"] == "assistant"
                 for b in ln["message"]["content"] if b["type"] == "tool_use"}
    v1 = tool_uses["toolu_W1"]["content"]
    e1, e2 = tool_uses["toolu_E1"], tool_uses["toolu_E2"]
    v2 = v1.replace(e1["old_string"], e1["new_string"], 1)
    v3 = v2.replace(e2["old_string"], e2["new_string"], 1)
    run = load(CUDA)
    assert run.format == "claude-code" and len(run.turns) == 6
    assert [k.code for k in run.kernels[:3]] == [v1, v2, v3]
    assert [k.line_count for k in run.kernels] == [6, 7, 7, 1]
    assert [k.origin for k in run.kernels[:3]] == ["Write content", "Edit applied to the last known content",
                                                   "Edit applied to the last known content"]
    assert [c.kernel for c in run.calls] == [1, 2, 3, 3, 4]  # the Bash check tested v3
    bash = [u for u in run.kernel("v3").uses if u.verdict]
    assert [(u.tool, u.status, u.summary) for u in bash] == [("Bash", OK, "speedup: 1.07x · correctness: PASS")]
    v4 = run.kernel("v4")
    assert v4.partial and v4.path == "/work/k/other.cu"
    assert any(t.startswith("v4 (/work/k/other.cu) is a partial version: Edit (partial") for _, t in run.notes)
    assert run.final_kernel.label == "v3"  # the task names add.cu; other.cu is only a fragment
    assert run.backend == "cuda" and run.outcome == "passed"
    # usage per message id: (10+100) + (5+110) + (5+150) + (5+180) + (5+200) + (5+220)
    assert run.tokens_in == 995 and run.tokens_out == 177
    assert run.turns[0].reasoning == "A grid-stride loop later."
    assert "partial version" in repro_precheck(v4)
    assert repro_precheck(run.kernel("v3")) is None


def test_codex_apply_patch_add_then_update_and_a_compilation_error():
    """SYNTHETIC fixture (hand-written): apply_patch Add File, Update File via shell argv, a verifier run."""
    rows = [json.loads(x) for x in TRITON.read_text().splitlines()]
    add = next(r["payload"]["input"] for r in rows if r["payload"].get("name") == "apply_patch")
    v1 = "".join(ln[1:] + "\n" for ln in add.split("\n")[2:-1])
    run = load(TRITON)
    assert run.format == "codex-cli" and len(run.turns) == 4
    assert run.kernels[0].code == v1
    v2 = run.kernels[1].code
    assert v2 == v1.replace("    x = tl.load(x_ptr + offs, mask=offs < n)\n    tl.store(y_ptr + offs, tl.maximum(x, 0), "
                            "mask=offs < n)\n", "    mask = offs < n\n    x = tl.load(x_ptr + offs, mask=mask)\n"
                            "    tl.store(y_ptr + offs, tl.maximum(x, 0), mask=mask)\n")
    assert [k.path for k in run.kernels] == ["/w/solution.py", "/w/solution.py"]
    u = [u for u in run.kernels[1].uses if u.verdict]
    assert [(x.status, x.summary.split(" · ")[0]) for x in u] == [(FAILED, "Result: FAIL")]
    assert "CompilationError" in u[0].summary
    assert run.calls[-1].status == FAILED  # exit code 1
    # cumulative totals 1200 -> 2820 -> 4600 -> 6550: input 1000, 1500, 1700, 1900; output 200, 120, 80, 50
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(1000, 200), (1500, 120), (1700, 80), (1900, 50)]
    assert run.backend == "triton" and run.outcome == "failed"


# ---- HIP pre-check --------------------------------------------------------------------------------------
def test_hip_kernels_are_refused_before_building():
    hip = KernelVersion(1, "0" * 40, '#include <hip/hip_runtime.h>\n__global__ void k(){}\nclass ModelNew: pass\n',
                        0, 1)
    msg = repro_precheck(hip)
    assert "HIP" in msg and "cannot run on an NVIDIA GPU" in msg
    assert "cannot run on a CPU" in repro_precheck(hip, "cpu")
    cuda = KernelVersion(2, "1" * 40, "#include <cuda_runtime.h>\n__global__ void k(){}\n", 0, 1)
    assert repro_precheck(cuda) is None


def test_swe_agent_trajectory():
    """SYNTHETIC fixture (hand-written): SWE-agent .traj with a heredoc, a check and a submission."""
    p = SYN / "synthetic_swe_agent.traj"
    raw = json.loads(p.read_text())
    run = load(p)
    assert run.format == "swe-agent" and len(run.turns) == 3 and [c.name for c in run.calls] == ["bash"] * 3
    heredoc = raw["trajectory"][0]["action"]
    assert run.kernels[0].code == heredoc.split("\n", 1)[1].rsplit("EOF", 1)[0]
    assert [(u.status, u.summary) for u in run.kernels[0].uses if u.verdict] == [
        (OK, "Speedup: 1.01x · Correctness: True")]
    assert run.model == "synthetic/model-x" and run.turns[1].tool_ms == 12500
    assert run.terminal[0].text == "exit status submitted; submitted a diff of 2 lines"
    assert run.problem.prompt == "SYNTHETIC: write solution.py with ModelNew"
