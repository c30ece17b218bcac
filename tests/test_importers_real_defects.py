"""Defects found by reading real traces of other harnesses (issue 21). Each test uses a real file
copied under tests/fixtures/formats/real (licence allowing: see its SOURCES.md) or a minimal file
with the same structure under tests/fixtures/formats/structural (see its README), and fails on the
code before the fix."""

from __future__ import annotations

from pathlib import Path

from ktui.trace.importers import detect, load

HERE = Path(__file__).resolve().parent
ST = HERE / "fixtures" / "formats" / "structural"
REAL = HERE / "fixtures" / "formats" / "real"


def warnings(run) -> list[str]:
    return [p.message for p in run.problems]


# ---- Claude Code ---------------------------------------------------------------------------------
CC2 = ST / "claude_code_2x_failed_edits_original_file.jsonl"


def test_claude_code_failed_edits_and_writes_change_nothing_and_original_file_is_the_base():
    run = load(CC2)
    assert run.format == "claude-code"
    # the refused Edit (old text not in the file) and the refused Write are not versions; the
    # later Edit applies to toolUseResult.originalFile (the formatter's output), not to v1
    assert len(run.kernels) == 2 and not any(k.partial for k in run.kernels)
    v1, v2 = run.kernels
    assert "ModelNewRefused" not in v1.code + v2.code and "BLOCK=4096" not in v1.code + v2.code
    assert "grid = (triton.cdiv(n, 2048),)\n        relu_kernel[grid](x, y, n, BLOCK=2048)" in v2.code
    assert v2.code.startswith("import torch\nimport triton\n") and "class ModelNew" in v2.code
    assert run.final_kernel_number == 2 and run.metrics is not None and run.metrics.speedup == 1.31
    # the refused calls are still calls, with their error status
    edits = [c for c in run.calls if c.name in ("Edit", "Write")]
    assert [c.result.is_error for c in edits] == [False, True, True, False]
    assert [c.kernel for c in edits] == [1, None, None, 2]


def test_claude_code_2x_bookkeeping_lines_are_not_problems():
    run = load(CC2)
    assert run.problems == []
    assert any("queued while the agent was busy: use 2048" in n for _, n in run.notes)
    # the head of the file is queue-operation lines: still Claude Code
    assert detect(str(CC2)).name == "claude-code"


def test_claude_code_unknown_line_type_is_reported_once(tmp_path):
    raw = CC2.read_text().splitlines()
    extra = ['{"type":"brand-new-thing","sessionId":"s","value":1}'] * 3
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(raw[:5] + extra + raw[5:]) + "\n")
    run = load(p)
    msgs = warnings(run)
    assert len(msgs) == 1 and "'brand-new-thing'" in msgs[0]
    assert run.problems[0].severity == "warning" and len(run.kernels) == 2


def test_validate_passes_the_claude_code_2x_file():
    from click.testing import CliRunner

    from ktui.cli import main

    res = CliRunner().invoke(main, ["validate", str(CC2)])
    assert res.exit_code == 0, res.output
    assert "0 with problems" in res.output


# ---- Codex CLI ------------------------------------------------------------------------------------
CODEX55 = ST / "codex_0.55_rounds_flushed_with_one_timestamp.jsonl"
CODEX40 = ST / "codex_0.40_older_rollout_kind_key.jsonl"


def test_codex_rounds_written_in_one_batch_are_timed_from_their_token_counts():
    run = load(CODEX55)
    assert run.format == "codex-cli" and len(run.turns) == 3
    # token_count lines (12.0 s, 30.0 s, 41.0 s) are when each response completed; the rounds'
    # items were all written at 41.2 s
    assert [t.llm_ms for t in run.turns] == [11_790, 18_000, 11_000]
    assert all(t.wall_ms and t.wall_ms >= t.llm_ms for t in run.turns)
    total = sum(t.llm_ms for t in run.turns)
    assert 0.9 * run.wall_ms <= total <= run.wall_ms
    # one token_count per round, in order (not all three on the first round)
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(6000, 900), (7100, 100), (7400, 100)]


def test_codex_token_count_lines_do_not_move_the_previous_stamp():
    run = load(CODEX40)
    assert run.format == "codex-cli"
    # round 2's input is call_a's output (7.2 s), not the token_count written at 7.0 s after it
    assert [t.llm_ms for t in run.turns] == [6_900, 7_800, 4_000]
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(5000, 700), (6000, 60), (6500, 40)]


def test_codex_040_rollout_with_a_kind_key_is_codex_and_read():
    assert detect(str(CODEX40)).name == "codex-cli"
    run = load(CODEX40)
    assert run.problems == [] and len(run.turns) == 3 and len(run.calls) == 2
    assert run.model == "gpt-5-codex" and len(run.kernels) == 1
    assert run.metrics is not None and run.metrics.speedup == 1.52


# ---- single-line chat rollouts; assistant text drawn once; the header's result ------------------
CHAT1 = ST / "chat_rollout_one_line_final_never_evaluated.jsonl"


def test_single_line_rollout_spreads_its_turns_and_messages():
    from ktui.view.build import build_view, messages_by_turn

    run = load(CHAT1)
    assert run.format == "chat-messages" and len(run.turns) == 6
    # message i is "line" i + 1: each assistant message its own turn span
    assert [(t.first_line, t.last_line) for t in run.turns] == [(3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 13)]
    before, by = messages_by_turn(run)
    assert [m[1] for m in before] == ["system", "user"] and by == {}
    # each assistant text is drawn once: in its own turn's text block, not also as a message block
    view = build_view(run)
    for t, tv in zip(run.turns, view.turns, strict=True):
        drawn = [b for b in tv.blocks if t.text in str(b)]
        assert len(drawn) == 1, (t.index, len(drawn))
    assert view.turns[5].index == 5 and "out of turns" in run.turns[5].text


def test_header_does_not_credit_the_final_kernel_with_another_versions_result():
    from ktui.view.build import header_view

    run = load(CHAT1)
    assert run.final_kernel.label == "v3" and [u.status for u in run.kernel(2).uses if u.verdict] == ["ok"]
    assert run.metrics is None  # v2 passed at 0.50x; v3 (final) never ran
    h = header_view(run)
    assert h.speedup is None and h.correct is None and h.final_kernel == "v3"
    fl = [f for f in run.flags if f.code == "final_unevaluated"]
    assert len(fl) == 1 and "v3" in fl[0].message and "about v2" in fl[0].message


def test_a_final_kernel_with_its_own_result_keeps_it():
    run = load(ST / "atif_terminus_inplace_script_edits.trajectory.json")
    assert run.final_kernel_number == 4 and run.metrics is not None and run.metrics.correct is False
    assert "about v4" in run.metrics.source
    assert not [f for f in run.flags if f.code == "final_unevaluated"]


# ---- in-place scripts: python heredoc, sed -i, a change ktui cannot replay ----------------------
ATIF_INPLACE = ST / "atif_terminus_inplace_script_edits.trajectory.json"


def test_versions_written_by_in_place_scripts_and_their_verifier_results():
    run = load(ATIF_INPLACE)
    assert [k.label for k in run.kernels] == ["v1", "v2", "v3", "v4"]
    v1, v2, v3, v4 = run.kernels
    assert "g = offs // GROUP" in v1.code
    assert v2.code == v1.code.replace("g = offs // GROUP", "g = offs // 128") and not v2.partial
    assert v3.code == v2.code.replace("g = offs // 128", "g = (offs // 128).to(tl.int32)") and not v3.partial
    assert "python script" in v2.origin and "sed -i" in v3.origin
    # re.sub: not replayed, but a version all the same, marked as of unknown content
    assert v4.partial and v4.code == "" and v4.attachment and "not in the trace" in v4.attachment
    # each verifier output is pinned to the version it ran on
    verdicts = {k.label: [u.summary for u in k.uses if u.verdict] for k in run.kernels}
    assert "CompilationError" in verdicts["v2"][0] and "CompilationError" not in verdicts["v1"][0]
    assert '"correct": true' in verdicts["v3"][0]
    assert "[KernelBench] Error: RuntimeError" in verdicts["v4"][0]
    assert [f.code for f in run.flags if f.kernel == 4] == ["code_unavailable"]


def test_in_place_change_forms():
    from ktui.trace.importers.inplace import changes

    base = "a = 1\nb = GROUP\nc = GROUP\n"

    def one(cmd):
        got = changes(cmd)
        assert len(got) == 1, got
        return got[0]

    c = one("sed -i 's/GROUP/128/' k.py")
    assert c.path == "k.py" and c.apply(base) == "a = 1\nb = 128\nc = 128\n"  # per line, first match
    assert one("sed -i.bak -e 's/= \\(GROUP\\)/= 2*\\1/g' k.py").apply(base) == "a = 1\nb = 2*GROUP\nc = 2*GROUP\n"
    assert one("sed -E -i 's#(b) = [A-Z]+#\\1 = 64#' k.py").apply(base) == "a = 1\nb = 64\nc = GROUP\n"
    assert one("sed -i '' 's/a = 1/a = 2/' k.py").apply(base).startswith("a = 2\n")  # BSD form
    assert one("perl -pi -e 's/GROUP/G/g' k.py").apply(base) == "a = 1\nb = G\nc = G\n"
    assert one("sed -i '/GROUP/d' k.py").apply is None  # not a substitution: not replayed
    py = one("python3 - <<'EOF'\nfrom pathlib import Path\np = Path('k.py')\ns = p.read_text()\n"
             "old = 'b = GROUP'\np.write_text(s.replace(old, 'b = 7').replace('c = GROUP', 'c = 8', 1))\nEOF\n")
    assert py.apply(base) == "a = 1\nb = 7\nc = 8\n"
    w = one("python -c \"open('k.py','w').write('x = 1\\n')\"")
    assert w.whole == "x = 1\n"
    wf = one("python3 <<PY\nwith open('k.py') as f:\n    s = f.read()\ns = s.replace('a', 'z')\n"
             "with open('k.py', 'w') as f:\n    f.write(s)\nPY")
    assert wf.apply(base) == base.replace("a", "z")
    u = one("python3 - <<'PY'\ns = open('k.py').read()\ns += '# more'\nopen('k.py', 'w').write(s)\nPY")
    assert u.apply is None and u.whole is None
    # reading only, and sed without -i, change nothing
    assert changes("python3 - <<'PY'\nprint(open('k.py').read())\nPY\nsed 's/a/b/' k.py") == []


def test_kernelbench_error_line_is_a_test_result():
    from ktui.trace.importers.evidence import evidence
    from ktui.trace.model import FAILED

    ev = evidence("[KernelBench] Compiling kernel...\n[KernelBench] Error: RuntimeError: CUDA kernel failed: "
                  "too many resources requested for launch\n")
    assert ev is not None and ev.status == FAILED
    assert ev.lines == ["[KernelBench] Error: RuntimeError: CUDA kernel failed: too many resources requested for launch"]
    assert evidence("[INFO] Error: retrying download") is None  # a log level is not a harness's name
    assert evidence('{\n  "reward": 0,\n  "correct": false\n}').correct is False


# ---- Harbor ATIF from another agent: extra.tool_result_is_error -----------------------------------
def test_atif_tool_result_is_error_is_honoured_and_refused_edits_are_not_applied():
    run = load(ST / "atif_claude_code_tool_result_is_error.trajectory.json")
    assert run.problems == []
    st = [(c.name, c.status, c.result.is_error) for c in run.calls]
    assert st == [("Write", "ok", False), ("Edit", "error", True), ("Bash", "error", True), ("Edit", "ok", False),
                  ("Bash", "ok", False)]
    # the refused Edit is no version; the later Edit applies to the file (tool_use_result.originalFile)
    assert [(k.label, k.partial) for k in run.kernels] == [("v1", False), ("v2", False)]
    assert "* 2.0, mask" in run.kernels[1].code and "B=512" not in run.kernels[1].code
    assert [c.kernel for c in run.calls] == [1, None, 1, 2, 2]


# ---- Inspect: .eval zips, cached tokens ------------------------------------------------------------
EVAL_TOOLS = REAL / "inspect_log_message_deduplication.eval"
EVAL_10 = REAL / "inspect_2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"


def test_inspect_eval_zip_is_read():
    assert detect(str(EVAL_TOOLS)).name == "inspect"
    run = load(EVAL_TOOLS)
    assert run.format == "inspect" and run.problems == []
    assert len(run.turns) == 6 and len(run.calls) == 5 and all(c.result is not None for c in run.calls)
    assert run.problem.prompt == "Guess the number"
    run = load(EVAL_10)
    assert run.problems == [] and len(run.turns) == 10 and run.model == "openai/gpt-4o-mini"
    # samples in id order (the zip holds them 9, 6, 10, 5, ...)
    assert [t.actor for t in run.turns][:3] == ["sample 1", "sample 2", "sample 3"]
    assert sum(t.tokens_in or 0 for t in run.turns) == 620


def test_inspect_eval_zip_without_header_uses_the_journal(tmp_path):
    import zipfile

    src = zipfile.ZipFile(EVAL_10)
    p = tmp_path / "running.eval"
    with zipfile.ZipFile(p, "w") as z:
        for n in src.namelist():
            if n not in ("header.json", "summaries.json", "reductions.json"):
                z.writestr(n, src.read(n))
    run = load(p)
    assert run.format == "inspect" and len(run.turns) == 10 and run.model == "openai/gpt-4o-mini"
    assert [p.severity for p in run.problems] == ["warning"] and "_journal/start.json" in run.problems[0].message


def test_a_zip_that_is_not_an_eval_log_is_not_a_trace(tmp_path):
    import zipfile

    p = tmp_path / "x.eval"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("readme.txt", "hello")
    run = load(p)
    assert len(run.problems) == 1 and run.problems[0].message.startswith("not a trace (looks like a zip file")


def test_inspect_cached_tokens_are_counted_once():
    older = load(ST / "inspect_0.3.120_openai_cached_tokens_inside_input.json")
    assert [t.tokens_in for t in older.turns] == [5000, 6000]  # not 9096 and 10992
    apart = load(ST / "inspect_0.3.190_anthropic_cached_tokens_apart.json")
    assert [t.tokens_in for t in apart.turns] == [5020, 5030]


# ---- SWE-agent 0.x ----------------------------------------------------------------------------------
SWE0 = REAL / "swe_agent_0x_gpt4_pydicom__pydicom-1458.traj"


def test_swe_agent_0x_demonstration_is_not_the_problem_and_tokens_come_from_model_stats():
    run = load(SWE0)
    assert run.format == "swe-agent" and len(run.turns) == 12
    assert run.problem.prompt.startswith("We're currently solving the following issue within our repository")
    assert "Pixel Representation attribute should be optional" in run.problem.prompt
    assert [m[1] for m in run.messages].count("demonstration") == 1
    assert (run.tokens_in, run.tokens_out) == (122_612, 1_369)
    assert run.tokens_by_actor["agent"]["usd"] == 1.26719


# ---- validate DIR covers what runs DIR lists ---------------------------------------------------------
def test_validate_dir_covers_the_json_traj_and_eval_traces_runs_lists(tmp_path):
    import shutil

    from click.testing import CliRunner

    from ktui.cli import main
    from ktui.trace.index import SweepIndex

    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(ST / "atif_claude_code_tool_result_is_error.trajectory.json", tmp_path / "a")
    shutil.copy(SWE0, tmp_path / "a" / "b")
    shutil.copy(EVAL_TOOLS, tmp_path / "a" / "b")
    shutil.copy(CC2, tmp_path)
    (tmp_path / "a" / "reward.json").write_text('{"reward": 1.0, "correct": true}')  # a result, not a trace
    listed = sorted(r.path for r in SweepIndex(tmp_path, use_cache=False, jobs=0).summaries())
    assert len(listed) == 4
    res = CliRunner().invoke(main, ["validate", "--json", str(tmp_path)])
    import json

    files = sorted(str(Path(e["file"]).relative_to(tmp_path)) for e in json.loads(res.stdout))
    assert files == listed


# ---- mini-swe-agent: 2.x tool calls, the messages list alone, other action fences -------------------
def test_mini_swe_agent_2x_tool_calls_are_calls():
    run = load(ST / "mini_swe_agent_2x_tool_calls.traj.json")
    assert run.format == "mini-swe-agent" and len(run.turns) == 4 and len(run.calls) == 4
    # extra.returncode and the outputs; the submit call has no tool message
    assert [c.status for c in run.calls] == ["ok", "failed", "ok", "missing"]
    assert [k.origin.split(" ")[0] for k in run.kernels] == ["heredoc", "sed"]
    assert run.final_kernel_number == 2 and run.metrics.speedup == 1.2
    # extra.timestamp (the agent's clock) times the turns from the previous tool output (the first
    # has none before it)
    assert [t.llm_ms for t in run.turns] == [None, 6_000, 6_000, 4_000]


def test_mini_swe_agent_messages_list_with_another_fence_is_read():
    p = REAL / "mini_swe_agent_messages_list_mswea_bash_command_github_issue.traj.json"
    assert detect(str(p)).name == "mini-swe-agent"
    run = load(p)
    assert len(run.turns) == 10 and len(run.calls) == 10 and all(c.result is not None for c in run.calls)
    assert run.calls[0].args["command"].startswith("cat /Users/")
    assert run.calls[0].status == "failed"  # <returncode>1</returncode>


def test_in_place_changes_never_run_a_dangerous_pattern_or_crash_on_hostile_scripts():
    from ktui.trace.importers.inplace import changes
    from ktui.trace.importers.tracker import FileTracker

    # catastrophic backtracking on content under ktui's control: not replayed (content unknown)
    tr = FileTracker()
    tr.write("/w/k.cu", "__global__ void k() {}\n" + "a" * 50_000 + "!\n", None, 0, 1)
    tr.shell("sed -E -i 's/(a+)+$/x/' /w/k.cu", None, 1, 2)
    tr.shell("perl -pi -e 's/(\\w*)*z/y/' /w/k.cu", None, 2, 3)
    cands = [a.candidate for a in tr.actions if a.kind == "candidate"]
    assert [c.unknown for c in cands] == [False, True, True]
    # deeply nested or huge scripts: no crash, nothing replayed
    deep = "python3 - <<'PY'\np='k.py'\ns=open(p).read()\ns=s.replace(" + "'a'+" * 5000 + "'a', 'b')\nopen(p,'w').write(s)\nPY\n"
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)  # whatever the process's limit is (another test may raise it)
    try:
        got = changes(deep)
    finally:
        sys.setrecursionlimit(limit)
    assert len(got) <= 1 and all(c.apply is None for c in got)
    assert changes("python3 - <<'PY'\n" + "(" * 10_000 + "\nPY\n") == []
    assert changes("sed -i 's/unterminated k.py") == []


def test_atif_read_content_kept_by_the_converter_is_the_base_of_a_later_edit(tmp_path):
    import json

    code = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"

    def step(i, name, args, content, tur=None):
        extra = {"tool_use_name": name}
        if tur is not None:
            extra["tool_result_metadata"] = {"is_error": False, "tool_use_result": tur}
        return {"step_id": i, "timestamp": f"2025-12-02T08:00:{i:02d}Z", "source": "agent", "message": "",
                "tool_calls": [{"tool_call_id": f"t{i}", "function_name": name, "arguments": args}],
                "observation": {"results": [{"source_call_id": f"t{i}", "content": content}]}, "extra": extra}

    steps = [{"step_id": 1, "source": "user", "message": "speed up /app/solution.py"},
             step(2, "Read", {"file_path": "/app/solution.py"}, "1\timport torch ...",
                  {"type": "text", "file": {"filePath": "/app/solution.py", "content": code, "numLines": 4,
                                            "startLine": 1, "totalLines": 4}}),
             step(3, "Edit", {"file_path": "/app/solution.py", "old_string": "x * 2", "new_string": "x + x"},
                  "The file /app/solution.py has been updated.")]
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps({"schema_version": "ATIF-v1.5", "agent": {"name": "claude-code"}, "steps": steps}))
    run = load(p)
    assert [(k.label, k.partial) for k in run.kernels] == [("v1", False)]
    assert run.kernels[0].code == code.replace("x * 2", "x + x")


def test_unified_diffs_and_dedented_literals_are_versions():
    from ktui.trace.importers.tracker import FileTracker
    from ktui.trace.model import Run

    base = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n"
    tr = FileTracker()
    tr.write("/app/solution.py", base, None, 0, 1)
    tr.shell("cd /app && patch -p1 <<'EOF'\n--- a/solution.py\n+++ b/solution.py\n@@ -3,2 +3,2 @@\n"
             "     def forward(self, x):\n-        return x * 2\n+        return x + x\nEOF\npython check.py", None, 1, 2, "/app")
    tr.shell("cat > /app/fix.diff <<'EOF'\n--- solution.py\n+++ solution.py\n@@ -1 +1,2 @@\n import torch\n+import triton\n"
             "EOF\ngit apply fix.diff", None, 2, 3, "/app")
    tr.shell("git apply <<'EOF'\n--- a/solution.py\n+++ b/solution.py\n@@ -1 +1 @@\n-no such line\n+x\nEOF", None, 3, 4, "/app")
    tr.shell("python3 - <<'PY'\nimport textwrap\nfrom pathlib import Path\nPath('/app/k2.py').write_text(textwrap.dedent('''\n"
             "    import triton\n    class ModelNew: pass\n'''))\nPY", None, 4, 5)
    run = Run(path="x")
    tr.finish(run)
    got = [(k.path, k.origin.split(" (")[0].split(" applied")[0], bool(k.attachment)) for k in run.kernels]
    assert got == [("/app/solution.py", "write", False), ("/app/solution.py", "patch", False),
                   ("/app/solution.py", "patch", False), ("/app/solution.py", "modified in place by patch", True),
                   ("/app/k2.py", "python script", False)]
    assert run.kernels[2].code == base.replace("x * 2", "x + x").replace("import torch\n", "import torch\nimport triton\n")
    assert run.kernels[4].code == "\nimport triton\nclass ModelNew: pass\n"


def test_atif_call_kept_only_in_the_steps_extra_is_a_call(tmp_path):
    import json

    steps = [{"step_id": 1, "source": "user", "message": "go"},
             {"step_id": 2, "source": "agent", "message": "",
              "extra": {"tool_use_name": "Bash", "raw_arguments": {"command": "python check.py"},
                        "tool_result_metadata": {"content": "Exit code 1\ncorrectness: FAIL", "is_error": True}}},
             {"step_id": 3, "source": "agent", "message": "",
              "observation": {"results": [{"content": "ok"}]},
              "extra": {"tool_use_name": "Bash", "raw_arguments": "{\"command\": \"ls\"}"}}]
    p = tmp_path / "trajectory.json"
    p.write_text(json.dumps({"schema_version": "ATIF-v1.2", "agent": {"name": "claude-code"}, "steps": steps}))
    run = load(p)
    assert [(c.name, c.args.get("command"), c.status) for c in run.calls] == [("Bash", "python check.py", "error"),
                                                                              ("Bash", "ls", "ok")]
    assert run.calls[0].result.summary.startswith("Exit code 1")


def test_swe_agent_history_only_file_is_read():
    run = load(REAL / "swe_agent_demonstration_history_only_function_calling_simple.traj")
    assert run.format == "swe-agent" and len(run.turns) == 5 and len(run.calls) == 5
    assert run.calls[0].args["command"] == "find_file missing_colon.py"
    assert run.calls[0].result.summary.startswith('Found 1 matches for "missing_colon.py"')
    assert run.problem.prompt.startswith("We're currently solving the following issue")


# ---- found on more real sessions (Codex 0.2x-0.58 and 2026 rollouts, Claude Code 2.1.88-2.1.92) ---
CODEX_REAL_02X = REAL / "codex_0.2x_bare_items_refused_patches_rollout-2025-08-24T10-37-46.jsonl"
CODEX_057 = ST / "codex_0.57_refused_patches_exec_exit_codes_formatter.jsonl"
CC21 = ST / "claude_code_2.1_result_before_call_repeated_and_torn_records.jsonl"


def test_codex_real_rollout_refused_patches_change_nothing():
    run = load(CODEX_REAL_02X)
    assert run.format == "codex-cli" and len(run.turns) == 77 and len(run.calls) == 65
    # eight apply_patch calls the tool refused ("error: Failed to find expected lines ...", an
    # invalid hunk): they are failed calls and change nothing, so the later patches of the same
    # files apply cleanly (two "context is not in the last known content" warnings before)
    assert run.problems == []
    patches = [c for c in run.calls if "Begin Patch" in str(c.args)]
    refused = [c for c in patches if c.result.status == "failed"]
    assert len(patches) == 32 and len(refused) == 8
    assert all(c.result.summary.startswith(("error:", "failed in sandbox")) for c in refused)


def test_codex_refused_patch_changes_nothing_and_a_patch_stopped_at_a_file_wrote_the_ones_before():
    run = load(CODEX_057)
    assert run.format == "codex-cli"
    codes = [k.code for k in run.kernels]
    # verification failed: nothing written (no BLOCK=4096 version)
    assert not any("4096" in c for c in codes)
    # stopped at utils.py: solution.py, before it in the patch, was written (v2, BLOCK=2048)
    assert "BLOCK=2048" in codes[1] and "BLOCK=1024" not in codes[1]
    by_id = {c.id: c for c in run.calls}
    assert by_id["call_c1"].result.status == "failed" and by_id["call_c1"].kernel is None
    assert by_id["call_d1"].result.status == "failed" and by_id["call_d1"].kernel == 2


def test_codex_patch_hunks_are_applied_as_the_tool_applies_them():
    run = load(CODEX_057)
    v3 = run.kernels[2].code
    # '@@ class ModelNew...' anchors the first chunk; the chunk of additions only goes at the end
    assert "    def forward(self, x):\n        x = x.contiguous()\n        y = torch.empty_like(x)" in v3
    assert v3.endswith("        return y\n\n\ndef get_inputs():\n    return [torch.randn(1 << 20, device=\"cuda\")]\n")
    assert not run.kernels[2].partial


def test_codex_patch_unit_semantics():
    from ktui.trace.importers.patches import apply_codex_patch

    base = "a\nb\nc\n"
    assert apply_codex_patch(base, ["@@", "+z"]) == ("a\nb\nc\nz\n", None)  # additions only: at the end
    assert apply_codex_patch(base, ["@@ b", "-c", "+C"]) == ("a\nb\nC\n", None)
    # the anchor moves the search past its line: the 'x' after 'mark' is replaced, not the first
    assert apply_codex_patch("x\nmark\nx\n", ["@@ mark", "-x", "+y"]) == ("x\nmark\ny\n", None)
    # typographic punctuation matches its ASCII form, as Codex's seek_sequence does
    assert apply_codex_patch("say \u201chi\u201d \u2014 ok\n", ["@@", '-say "hi" - ok', "+bye"]) == ("bye\n", None)
    assert apply_codex_patch(base, ["@@ nowhere", "-a", "+b"])[1] is not None


def test_a_formatter_run_makes_a_later_mismatch_a_partial_version_not_a_problem():
    run = load(CODEX_057)
    assert run.problems == []
    v4 = run.kernels[3]
    assert v4.partial and "BLOCK=8192" in v4.code
    assert any("rewritten by `black" in n for _, n in run.notes)


def test_formatter_scope():
    from ktui.trace.importers.tracker import FileTracker

    ft = FileTracker()
    for p in ("/w/a.py", "/w/b.py", "/w/k.cu", "/w/sub/c.py"):
        ft.observe(p, "x = 1\n")
    ft.shell("black --check . && pytest -q", None, 0, 1, "/w")
    assert ft.reformatted == {}  # a check only
    ft.shell("black sub/ && python a.py", None, 0, 1, "/w")
    assert set(ft.reformatted) == {"/w/sub/c.py"}
    ft.shell("clang-format -i k.cu", None, 0, 1, "/w")
    assert "/w/k.cu" in ft.reformatted and "/w/a.py" not in ft.reformatted
    ft.shell("cd /w && ruff format", None, 0, 1, "/w")
    assert {"/w/a.py", "/w/b.py"} <= set(ft.reformatted)
    ft.observe("/w/a.py", "y = 2\n")  # seen again: known again
    assert "/w/a.py" not in ft.reformatted


def test_codex_plain_text_exit_headers_give_the_status():
    from ktui.trace.importers.codex_cli import _output

    assert _output("Exit code: 1\nWall time: 0.1 seconds\nOutput:\nboom\n")[1:] == ("failed", 1)
    assert _output("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok\n")[1:] == ("ok", 0)
    assert _output("Chunk ID: ab\nWall time: 0.05 seconds\nProcess exited with code 2\nOutput:\n")[1:] == ("failed", 2)
    assert _output("Chunk ID: ab\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n")[1] is None
    assert _output("failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error")[1] == "failed"
    run = load(CODEX_057)
    assert {c.id: c for c in run.calls}["call_b1"].result.status == "failed"


def test_codex_token_totals_restarting_are_not_a_problem():
    run = load(CODEX_057)
    assert not any("token" in p.message for p in run.problems)
    assert any("token totals restarted" in n for _, n in run.notes)
    assert run.turns[-1].tokens_in == 900 and run.tokens_in == 1000 + 6 * 1000 + 900


def test_claude_code_result_written_before_its_call_is_paired_and_a_refused_write_is_not_applied():
    run = load(CC21)
    assert run.format == "claude-code"
    w2 = {c.id: c for c in run.calls}["call_w2"]
    assert w2.result is not None and w2.result.is_error and w2.kernel is None
    assert not any("999999" in k.code for k in run.kernels)
    assert not any("no pending tool_use" in m or "no tool_use" in m for m in warnings(run))
    # the two lines of one response around the early result are one turn, its usage counted once
    assert len(run.turns) == 5 and run.tokens_in == 5000


def test_claude_code_record_written_twice_is_read_once():
    run = load(CC21)
    edits = [c for c in run.calls if c.name == "Edit"]
    assert len(edits) == 1 and not any("repeats" in m for m in warnings(run))
    assert [k.partial for k in run.kernels] == [False, False] and "BLOCK=2048" in run.kernels[1].code
    assert run.final_kernel_number == 2 and run.metrics.speedup == 1.42


def test_a_line_with_a_torn_write_before_a_whole_record_keeps_the_record(tmp_path):
    run = load(CC21)
    msgs = warnings(run)
    assert len(msgs) == 1 and "first 40 bytes are an unfinished record" in msgs[0]
    assert run.problems[0].severity == "warning"
    # the Edit's result is on that line: it is paired
    assert {c.id: c for c in run.calls}["call_e3"].result is not None
    from ktui.trace.importers.common import torn_prefix

    assert torn_prefix(b'{"a": 1, "b": [1, 2') == (0, None)
    assert torn_prefix(b'{"a":"x{"a":"xy","b":2}') == (7, {"a": "xy", "b": 2})
    assert torn_prefix(b'nothing like a record') == (0, None)


def test_formatter_lines_are_bounded():
    from ktui.trace.importers.tracker import FileTracker

    ft = FileTracker()
    ft.observe("/w/a.py", "x = 1\n")
    ft.shell("echo " + "ruff " * 2000 + "--fix", None, 0, 1, "/w")  # a 10 kB line: not a command line
    assert ft.reformatted == {}
    ft.shell("ruff check --fix a.py", None, 0, 1, "/w")
    assert set(ft.reformatted) == {"/w/a.py"}


def test_claude_code_subagent_transcript_is_named_as_one():
    sub = load(ST / "claude_code_2.1_subagent_transcript.jsonl")
    assert sub.format == "claude-code" and sub.persona == "subagent a5b9b81828ffd4442"
    assert len(sub.turns) == 2 and sub.problems == [] and sub.calls[0].result is not None
    assert load(CC21).persona is None  # a main session is not a subagent


# ---- Harbor ATIF written by Claude Code: a message the CLI made itself ----------------------------
SYNTH = ST / "harbor_claude_code_synthetic_not_logged_in" / "check-kernel-task__Xy7Qk2m"


def test_atif_synthetic_model_is_no_model_and_no_model_call():
    """Claude Code writes ``<synthetic>`` as the model of a message it made itself ("Not logged in ·
    Please run /login", an API error): not a model, and not a model's response (Saud008/
    terminal-bench-2.1, a Harbor `tasks check` trial whose claude-code never logged in)."""
    import json

    from ktui.trace.importers import harbor_atif

    path = SYNTH / "agent" / "trajectory.json"
    run = harbor_atif.load_object(json.loads(path.read_text()), str(path))  # the trace alone
    assert run.format == "harbor-atif"
    assert run.model is None and all(a.model is None for a in run.actors)
    assert len(run.turns) == 1
    assert any("made itself (model <synthetic>)" in text for _, text in run.notes)
    assert run.turns[0].text == "Not logged in · Please run /login"
    assert run.terminal_state == "backend_error"  # the run ended on that message, not on a quiet eof


def test_atif_synthetic_run_takes_its_model_from_the_trial_result():
    """The trial's result.json names the model Harbor ran (``agent_info.model_info``): the run, which
    names none, takes it; the outcome and the harness's error are the result file's."""
    from ktui.trace.reader import load as read

    run = read(str(SYNTH / "agent" / "trajectory.json"))
    assert run.model == "openai/gpt-5.6"
    assert run.outcome == "failed"
    rows = {m.key: m.value for m in run.metrics.groups["result"]}
    assert str(rows["result.error"]).startswith("NonZeroAgentExitCodeError Command failed (exit 1)")


def test_atif_a_named_model_is_not_replaced_by_the_result_files():
    """Where the trajectory names its model, the result file's name does not replace it."""
    from ktui.trace.reader import load as read

    trial = HERE / "fixtures" / "real" / "harbor_minimal" / "jobs" / "2026-06-30__02-00-00"
    traj = next(trial.glob("*/agent/trajectory.json"))
    named = load(traj).model
    assert named and read(str(traj)).model == named


# ---- Claude Code 2.1.285: its own messages and its new bookkeeping lines -------------------------
CC_NOLOGIN = ST / "claude_code_2.1.285_not_logged_in_cost_state.jsonl"
CC_RESUMED = ST / "claude_code_2.1.285_api_error_then_resumed.jsonl"


def test_claude_code_atis_latch_and_cost_state_are_bookkeeping_not_problems():
    """Claude Code 2.1.285 ends a session with ``atis-latch`` and ``cost-state`` lines (the real
    session beside Saud008/terminal-bench-2.1's Harbor trial): not problems; the totals a note."""
    run = load(CC_NOLOGIN)
    assert run.format == "claude-code"
    assert warnings(run) == []
    assert any("Claude Code's totals: cost 0 USD, API time 0 s, tool time 0 s, session 0.499 s" in text
               for _, text in run.notes)


def test_claude_code_session_that_ends_on_its_own_error_message_ended_on_that_error():
    """The only assistant line is Claude Code's own (``isApiErrorMessage``, model ``<synthetic>``):
    no model, and the run ended on that error, not on a quiet end of file."""
    run = load(CC_NOLOGIN)
    assert run.model is None
    assert len(run.turns) == 1
    assert run.terminal_state == "backend_error"
    assert [t.text for t in run.terminal if t.kind == "backend_error"] == \
        ["authentication_failed: Not logged in · Please run /login"]


def test_claude_code_an_error_message_the_session_went_on_after_is_not_how_it_ended():
    """An API error message followed by more of the session: a note, and the end is not
    ``backend_error``; the later response's model and time are the run's."""
    run = load(CC_RESUMED)
    assert run.model == "claude-opus-4-8"
    assert len(run.turns) == 2 and run.turns[1].llm_ms == 4500
    assert run.terminal_state != "backend_error"
    assert any("made itself" in text and "overloaded: API Error: 529" in text for _, text in run.notes)


CODEX55_REAL = ST / "codex_0.55_real_shape_round_flush_repeated_token_count.jsonl"


def test_codex_055_real_shape_model_time_per_round_and_tokens_once():
    """The shape of the real Codex 0.55.0 rollout the issue names (brianlan/paper2md 0a5d04b,
    `.codex/sessions/2025/11/07/rollout-2025-11-07T22-27-23-...jsonl`: 0.1 s of model time over a
    295 s run before, 278.8 s after): each round's token_count, items, call output and next
    turn_context share one stamp, and the same usage is written again about a second later. A
    round's model time runs from when its input was ready to its token_count; the repeated usage
    counts once."""
    run = load(CODEX55_REAL)
    assert run.format == "codex-cli" and run.model == "gpt-5-codex"
    assert [t.llm_ms for t in run.turns] == [7209, 2324, 6649, 5500]
    assert run.turns[2].tool_ms == 4100  # the check ran 4.1 s (its output's stamp)
    assert sum(t.tokens_in or 0 for t in run.turns) == 20184
    assert sum(t.tokens_out or 0 for t in run.turns) == 1036
    assert len(run.kernels) == 1 and "relu_kernel" in run.kernels[0].code  # the apply_patch Add File
    assert warnings(run) == []


# ---- Claude Code --print --output-format=stream-json (Harbor's agent/claude-code.txt) --------------
SJ_NOLOGIN = ST / "claude_code_2.1.285_stream_json_not_logged_in.txt"
SJ_RUN = ST / "claude_code_2.1_stream_json_print_output.txt"


def test_stream_json_of_a_run_that_never_logged_in():
    """The real claude-code.txt of Saud008/terminal-bench-2.1's trial (init line, a stderr line
    captured with 2>&1, the CLI's own error message, the result line): "not a trace" before."""
    assert detect(str(SJ_NOLOGIN)).name == "claude-code"
    run = load(SJ_NOLOGIN)
    assert run.format == "claude-code" and not run.problems
    assert run.model == "gpt-5.6"  # the init line's; the only message is "<synthetic>"
    assert run.terminal_state == "backend_error"
    assert any(t.startswith("other output of the CLI") and "unrecognized_model" in t for _, t in run.notes)


def test_stream_json_of_a_kernel_run_with_a_subagent():
    run = load(SJ_RUN)
    assert run.format == "claude-code" and not run.problems and run.model == "claude-opus-4-8"
    assert [t.actor for t in run.turns] == ["agent", "agent", "agent", "subagent", "agent", "agent", "agent"]
    assert [(c.name, c.status) for c in run.calls] == [("Write", "ok"), ("Bash", "failed"), ("Task", "ok"),
                                                        ("Read", "ok"), ("Edit", "ok"), ("Bash", "ok")]
    assert len(run.kernels) == 2 and run.final_kernel_number == 2
    assert "tl.maximum(v, 0.0)" in run.kernels[1].code
    assert [u.status for u in run.kernels[0].uses if u.verdict] == ["failed"]
    assert [u.status for u in run.kernels[1].uses if u.verdict] == ["ok"]
    assert run.turns[1].llm_ms == 2900 and run.turns[1].tokens_in == 18500
    assert run.terminal_state == "halt" and "passes check.py at 1.40x" in run.terminal[-1].text
    assert any("total_cost_usd 0.4321" in t for _, t in run.notes)


def test_stream_json_of_older_versions_without_stamps_or_uuids(tmp_path):
    """Older CLIs print the same lines with no ``timestamp`` and no ``uuid``: the same run,
    untimed."""
    import json

    lines = []
    for raw in SJ_RUN.read_text().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            lines.append(raw)
            continue
        obj.pop("timestamp", None)
        obj.pop("uuid", None)
        lines.append(json.dumps(obj))
    p = tmp_path / "claude-code.txt"
    p.write_text("\n".join(lines) + "\n")
    run = load(p)
    assert not run.problems and len(run.turns) == 7 and len(run.calls) == 6 and len(run.kernels) == 2
    assert all(t.llm_ms is None for t in run.turns)


# ---- Harbor ATIF written by Harbor's Codex converter: exit codes beside the calls -------------------
ATIF_CODEX = ST / "atif_codex_converter_exit_codes_in_extra.trajectory.json"


def test_atif_codex_exit_codes_kept_in_extra_decide_status_and_refused_patches():
    """Harbor's Codex converter strips Codex's ``{"output", "metadata"}`` output to its text and
    keeps ``metadata.exit_code`` in ``extra.tool_call_details[call id]`` (the shape of its
    ``_convert_events_to_trajectory``): a refused ``apply_patch`` (exit code 1, "verification
    failed") was applied anyway (a partial version, a warning, ``validate`` failed) and shown ok."""
    run = load(ATIF_CODEX)
    assert run.format == "harbor-atif" and warnings(run) == []
    assert [(c.name, c.status) for c in run.calls] == [
        ("shell", "ok"), ("apply_patch", "ok"), ("shell", "failed"),
        ("apply_patch", "failed"), ("apply_patch", "ok"), ("shell", "ok")]
    assert len(run.kernels) == 2 and not any(k.partial for k in run.kernels)
    assert "tl.maximum(v, 0.0)" in run.kernels[1].code and run.final_kernel_number == 2
    assert [[u.status for u in k.uses if u.verdict] for k in run.kernels] == [["failed"], ["ok"]]
