"""Defects found in a held-out reading pass on real traces nobody on the project wrote (issue 21):
newer Claude Code (2.0.7x-2.1.1xx), Codex CLI (0.50-0.121) and Inspect logs. Each test reads a
minimal file with the real structure (tests/fixtures/formats/structural, see its README; the real
files' sources are in benchmarks/results/real_traces.md) and fails on the code before the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ktui.trace.importers import detect, load

ST = Path(__file__).resolve().parent / "fixtures" / "formats" / "structural"
CC_IDE = ST / "claude_code_2.0.76_ide_history_rewritten_shared_ids_quote_matched_edit.jsonl"
CC_CONT = ST / "claude_code_2.1.19_compacted_continuation_system_lines.jsonl"


# ---- Claude Code ---------------------------------------------------------------------------------
def test_claude_code_history_written_again_under_new_uuids_is_read_once():
    run = load(CC_IDE)
    # the IDE wrote the first five records again (new uuids, the same times, message ids and
    # content; one response's two blocks split over two records) before the new prompt
    assert len(run.turns) == 5 and len(run.calls) == 5
    assert all(c.result is not None for c in run.calls)
    assert run.tokens_in == 1200 + 1600 + 1900 + 2300 + 2400  # each response's usage once
    assert [c.name for c in run.calls] == ["Write", "Bash", "Bash", "Edit", "Bash"]
    assert any("written again under new uuids" in n for _, n in run.notes)
    span = (run.wall_ms or 0) / 1000
    assert sum(t.llm_ms or 0 for t in run.turns) / 1000 <= span


def test_parallel_calls_sharing_one_id_pair_with_their_results_in_order():
    run = load(CC_IDE)
    check, bench = [c for c in run.calls if c.name == "Bash"][:2]
    assert check.id == bench.id == "tooluse_DUP"
    assert check.result.summary.startswith("PASS") and check.result.status == "ok"
    assert "out of memory" in bench.result.summary and bench.result.is_error
    assert run.problems == []
    assert any("1 tool call shares the id of an earlier call" in n for _, n in run.notes)


def test_claude_code_edit_the_tool_matched_its_own_way_uses_its_structured_patch():
    run = load(CC_IDE)
    # the model's old_string has ASCII quotes where the file has typographic ones; the tool
    # matched it (its result: originalFile + structuredPatch), so the edit is a whole version
    assert [k.partial for k in run.kernels] == [False, False]
    v2 = run.kernels[1].code
    assert '"""Elementwise "relu" over a flat view (vectorised)."""' in v2
    assert "    tl.multiple_of(i, 16)\n    m = i < n" in v2 and v2.startswith("import torch\n")
    assert v2.endswith("        return y\n") and "\u201c" not in v2


def test_structured_patch_that_does_not_fit_falls_back_to_the_edit_as_written(tmp_path):
    rows = [json.loads(x) for x in CC_IDE.read_text().splitlines()]
    for r in rows:
        tur = r.get("toolUseResult")
        if isinstance(tur, dict) and tur.get("structuredPatch"):
            tur["structuredPatch"][0]["oldStart"] = 2  # not where its lines are
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load(p)
    assert run.kernels[1].partial and any("old text not found" in x.message for x in run.problems)


def test_claude_code_compaction_summary_is_not_the_prompt_and_system_lines_say_what_they_are():
    run = load(CC_CONT)
    assert run.problem.prompt == "Now fuse the bias add into the kernel and re-run the check."
    assert [m[1] for m in run.messages] == ["user:compact-summary", "user"]
    notes = [n for _, n in run.notes]
    assert "Conversation compacted (trigger auto, preTokens 155,012)" in notes
    assert ("API error: status 429 rate_limit_error Too many requests for this key; retry 1/10 in 60.0 s"
            in notes)
    assert "API error: ECONNRESET; retry 2/10 in 1.2 s" in notes
    assert "stop hook: [Hook] WARNING: console.log found in src/app.ts" in notes
    assert any(n.startswith("Context microcompacted (trigger auto") for n in notes)
    assert "system" not in notes and len(notes) == 5  # a turn's duration and a silent hook: no note
    assert run.problems == [] and run.model == "claude-sonnet-4-5-20250929"


def test_claude_code_session_teleported_from_the_web_with_no_message_yet(tmp_path):
    p = tmp_path / "0e973150-6151-404d-968f-a07b3f204eb3.jsonl"
    p.write_text('{"type":"teleported-from","remoteSessionId":"session_01AbC","branch":"claude/x","messageCount":0}\n')
    assert detect(str(p)).name == "claude-code"
    run = load(p)
    assert run.format == "claude-code" and run.problems == [] and run.turns == []


# ---- Codex CLI -----------------------------------------------------------------------------------
CX_FORK = ST / "codex_0.119_forked_subagent_thread_inherited_history.jsonl"
CX_ERR = ST / "codex_0.121_backend_errors_ended_on_one.jsonl"


def test_codex_forked_thread_does_not_count_its_parents_history_as_its_own():
    run = load(CX_FORK)
    # the parent's session_meta, prompt, turn context and token totals (234,714 / 2,323) were
    # copied at the start of the subagent's rollout; its own rounds start from those totals
    assert run.tokens_in == (274056 - 234714) + (320000 - 274056) and run.tokens_out == 3100 - 2323
    assert run.problem.prompt == "Inspect softmax.py and report only what blocks a correct fused kernel."
    assert run.model == "gpt-5.4-mini" and len(run.turns) == 2 and len(run.calls) == 1
    assert run.persona == "subagent Archimedes (explorer)"
    assert any("history of the thread it was forked from (019d9249-e0ee" in n for _, n in run.notes)
    assert ("system", "You are Codex, a coding agent based on GPT-5.") in [(m[1], m[3]) for m in run.messages]
    assert run.problems == []


def test_codex_fork_without_time_ordered_ids_is_read_as_before(tmp_path):
    rows = [json.loads(x) for x in CX_FORK.read_text().splitlines()]
    rows[0]["payload"]["id"] = "thread-1"  # not a UUIDv7: nothing tells the copied history apart
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    run = load(p)
    assert run.tokens_in == 320000 and run.problems == []


def test_codex_run_that_ended_on_a_backend_error_says_so():
    run = load(CX_ERR)
    ends = [(t.kind, t.text) for t in run.terminal]
    assert ends == [("backend_error", "exceeded retry limit, last status: 429 Too Many Requests, request id: "
                                      "2501f768-260b-4fb8-846b-42dbb1674731 (response_too_many_failed_attempts)")]
    notes = [n for _, n in run.notes]
    # the first error (the provider's JSON body, read) was followed by a new prompt and a round
    assert "error: registry.ollama.ai/library/mistral:7b-instruct-q4_K_M does not support tools" in notes
    assert run.problems == []


def test_codex_error_followed_by_a_response_is_a_note_only(tmp_path):
    rows = CX_ERR.read_text().splitlines()
    cut = [r for r in rows if '"exceeded retry limit' not in r]
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(cut) + "\n")
    run = load(p)
    assert "backend_error" not in [t.kind for t in run.terminal]
    assert any(n.startswith("error: registry.ollama.ai") for _, n in run.notes)


# ---- Inspect AI ----------------------------------------------------------------------------------
IN_GRADED = Path(__file__).resolve().parent / "fixtures" / "formats" / "real" / \
    "inspect_0.3.95_security-guide_model_graded_scorer.json"


def test_inspect_model_graded_scorer_calls_are_not_the_agents_turns():
    run = load(IN_GRADED)  # a real log: each sample's grader (model_graded_fact) calls the model too
    assert run.problems == []  # it was "2 model event(s) for 1 assistant message(s)" three times
    assert [(t.tokens_in, t.tokens_out) for t in run.turns] == [(61, 17), (60, 9), (61, 23)]
    graded = [n for _, n in run.notes if "scorer model_graded_fact" in n]
    assert graded[0] == "1 model call of the scorer model_graded_fact (not the agent's turns): 259 tokens in, 292 out"
    assert len(graded) == 3


def test_inspect_scorer_steps_of_older_logs_are_the_graders_too(tmp_path):
    obj = json.loads(IN_GRADED.read_text())
    for s in obj["samples"]:  # as logs before spans had it: step begin / end events around the scorer
        evs, scorer = [], None
        for e in s["events"]:
            if e["event"] == "span_begin" and e.get("type") == "scorer":
                scorer = e["id"]
                evs.append({"event": "step", "action": "begin", "type": "scorer", "name": e["name"]})
            elif e["event"] == "span_end" and e.get("id") == scorer:
                evs.append({"event": "step", "action": "end", "type": "scorer", "name": "model_graded_fact"})
            elif e["event"] not in ("span_begin", "span_end"):
                evs.append({k: v for k, v in e.items() if k != "span_id"})
        s["events"] = evs
    p = tmp_path / "log.json"
    p.write_text(json.dumps(obj))
    run = load(p)
    assert run.problems == [] and [(t.tokens_in, t.tokens_out) for t in run.turns][0] == (61, 17)
    assert sum("scorer model_graded_fact" in n for _, n in run.notes) == 3


def test_codex_web_search_is_a_call_with_its_query(tmp_path):
    rows = CX_ERR.read_text().splitlines()
    at = next(i for i, r in enumerate(rows) if '"function_call"' in r)
    search = {"timestamp": "2026-04-20T04:06:05.000Z", "type": "response_item", "payload": {
        "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": "triton tl.maximum NaN", "queries": ["triton tl.maximum NaN"]}}}
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(rows[:at] + [json.dumps(search)] + rows[at:]) + "\n")
    run = load(p)
    c = run.calls[0]
    assert c.name == "web_search" and c.args["query"] == "triton tl.maximum NaN"
    assert c.result is not None and c.result.status == "ok" and c.result.summary == "search completed"
    assert len(run.turns) == 1 and run.calls[1].name == "shell" and run.problems == []


def _persisted_session(root: Path) -> Path:
    """A session whose benchmark output Claude Code saved to <session>/tool-results/ (its result
    holds a 2 KB preview), laid out as ~/.claude/projects/<project>/ keeps it."""
    sid = "7a1e0c2d-0000-4000-8000-0000000000c3"
    proj = root / "-home-dev-kb"
    (proj / sid / "tool-results").mkdir(parents=True)
    autotune = "".join(f"autotune BLOCK={b} num_warps={w}: {b * w / 1000:.3f} ms\n" for b in (64, 128, 256, 512)
                       for w in (1, 2, 4, 8)) * 40
    full = autotune + "[KernelBench] correct: True, speedup: 1.42x\n"
    (proj / sid / "tool-results" / "toolu_01P.txt").write_text(full)
    saved = (f"<persisted-output>\nOutput too large ({len(full) / 1024:.1f}KB). Full output saved to: "
             f"/home/dev/.claude/projects/-home-dev-kb/{sid}/tool-results/toolu_01P.txt\n\nPreview (first 2KB):\n"
             f"{full[:2048]}\n...\n</persisted-output>")
    env = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/kb", "sessionId": sid, "version": "2.1.19"}
    code = "import torch\nimport triton\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    rows = [
        {**env, "parentUuid": None, "type": "user", "uuid": "u1", "timestamp": "2026-01-25T17:00:00.000Z",
         "message": {"role": "user", "content": "Autotune solution.py and benchmark it."}},
        {**env, "parentUuid": "u1", "type": "assistant", "uuid": "a1", "timestamp": "2026-01-25T17:00:10.000Z",
         "message": {"model": "claude-sonnet-4-5", "id": "msg_1", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_01W", "name": "Write",
              "input": {"file_path": "/home/dev/kb/solution.py", "content": code}}]}},
        {**env, "parentUuid": "a1", "type": "user", "uuid": "u2", "timestamp": "2026-01-25T17:00:10.100Z",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_01W", "type": "tool_result", "content": "ok"}]},
         "toolUseResult": {"type": "create", "filePath": "/home/dev/kb/solution.py", "content": code}},
        {**env, "parentUuid": "u2", "type": "assistant", "uuid": "a2", "timestamp": "2026-01-25T17:00:20.000Z",
         "message": {"model": "claude-sonnet-4-5", "id": "msg_2", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_01P", "name": "Bash", "input": {"command": "python bench.py"}}]}},
        {**env, "parentUuid": "a2", "type": "user", "uuid": "u3", "timestamp": "2026-01-25T17:02:20.000Z",
         "message": {"role": "user", "content": [{"tool_use_id": "toolu_01P", "type": "tool_result", "content": saved}]},
         "toolUseResult": {"stdout": saved, "stderr": "", "interrupted": False, "isImage": False}},
    ]
    p = proj / f"{sid}.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_claude_code_result_saved_to_a_file_is_read_from_it_where_it_lies_beside_the_trace(tmp_path):
    p = _persisted_session(tmp_path)
    run = load(p)
    bench = run.calls[1]
    # the verdict was printed at the end of the output: only in the saved file, not in the preview
    assert "[KernelBench] correct: True, speedup: 1.42x" in bench.result.summary
    assert "saved output's end" in bench.result.summary and len(bench.result.summary) < 2048 + 9000
    assert run.kernels[0].uses and any(u.verdict for u in run.kernels[0].uses)
    assert run.metrics is not None and run.metrics.speedup == 1.42
    # without the folder (the session file alone), the preview is what there is
    alone = tmp_path / "alone.jsonl"
    alone.write_text(p.read_text())
    assert "1.42x" not in load(alone).calls[1].result.summary


def test_claude_code_side_agent_copy_of_its_sessions_conversation_is_not_its_work(tmp_path):
    sid = "7a1e0c2d-0000-4000-8000-0000000000d4"
    proj = tmp_path / "-home-dev-kb"
    (proj / sid / "subagents").mkdir(parents=True)
    env = {"userType": "external", "cwd": "/home/dev/kb", "sessionId": sid, "version": "2.1.88"}
    u = [f"00000000-0000-4000-8000-{i:012d}" for i in range(20)]

    def rec(i, parent, typ, ts, content, side=False, agent=None, mid=None, usage=None):
        r = {"parentUuid": parent, "isSidechain": side, **env, "type": typ, "uuid": u[i], "timestamp": ts}
        if agent:
            r["agentId"] = agent
        r["message"] = {"role": typ, "content": content} if typ == "user" else {
            "model": "claude-opus-4-6", "id": mid, "role": "assistant", "content": content, "usage": usage}
        return r

    use = {"input_tokens": 5, "cache_read_input_tokens": 90000, "output_tokens": 400}
    session = [
        rec(1, None, "user", "2026-03-31T01:00:00.000Z", "Tune the softmax kernel."),
        rec(2, u[1], "assistant", "2026-03-31T01:00:30.000Z",
            [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "python bench.py"}}],
            mid="msg_1", usage=use),
        rec(3, u[2], "user", "2026-03-31T01:02:00.000Z",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Speedup: 1.10x"}]),
        # the session quotes a regular subagent's record inside a progress line (nested uuid)
        {"parentUuid": u[3], "isSidechain": False, **env, "type": "progress", "timestamp": "2026-03-31T01:03:00.000Z",
         "data": {"type": "agent_progress", "message": {"type": "user", "uuid": u[10],
                                                          "message": {"role": "user", "content": "Find the reduction."}}},
         "uuid": u[4]},
    ]
    (proj / f"{sid}.jsonl").write_text("\n".join(json.dumps(r) for r in session) + "\n")
    copied = [dict(r, isSidechain=True, agentId="acompact-1f2e") for r in session[:3]]
    own = [rec(5, u[3], "user", "2026-03-31T02:00:00.000Z", "CRITICAL: Respond with TEXT ONLY. Summarise.",
               side=True, agent="acompact-1f2e"),
           rec(6, u[5], "assistant", "2026-03-31T02:00:20.000Z", [{"type": "text", "text": "<summary>...</summary>"}],
               side=True, agent="acompact-1f2e", mid="msg_9", usage={"input_tokens": 3, "output_tokens": 900})]
    side = proj / sid / "subagents" / "agent-acompact-1f2e.jsonl"
    side.write_text("\n".join(json.dumps(r) for r in copied + own) + "\n")
    regular = [rec(10, None, "user", "2026-03-31T01:03:00.000Z", "Find the reduction.", side=True, agent="a77"),
               rec(11, u[10], "assistant", "2026-03-31T01:03:09.000Z", [{"type": "text", "text": "Line 40."}],
                   side=True, agent="a77", mid="msg_7", usage={"input_tokens": 7, "output_tokens": 20})]
    reg = proj / sid / "subagents" / "agent-a77.jsonl"
    reg.write_text("\n".join(json.dumps(r) for r in regular) + "\n")

    run = load(side)
    assert len(run.turns) == 1 and run.calls == [] and run.tokens_in == 3 and run.tokens_out == 900
    assert run.problem.prompt == "CRITICAL: Respond with TEXT ONLY. Summarise."
    assert any("3 records at its start: a copy of its session's conversation" in n for _, n in run.notes)
    assert (run.wall_ms or 0) <= 20_000
    r2 = load(reg)  # a subagent whose records the session only quotes: all its own
    assert len(r2.turns) == 1 and r2.tokens_in == 7 and r2.problem.prompt == "Find the reduction."
    assert not any("copy of its session" in n for _, n in r2.notes)
    alone = tmp_path / "agent-acompact-1f2e.jsonl"  # without its session beside it: read as before
    alone.write_text(side.read_text())
    assert len(load(alone).turns) == 2


def test_claude_code_saved_output_path_cannot_leave_the_session_folder(tmp_path):
    p = _persisted_session(tmp_path)
    secret = tmp_path / "tool-results"  # beside the project folder: outside every session
    secret.mkdir()
    (secret / "toolu_01P.txt").write_text("SECRET outside the session folder\n")
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    for r in rows:  # the result names ".." as its session folder
        c = r["message"]["content"]
        if isinstance(c, list) and c[0].get("type") == "tool_result" and "persisted" in c[0]["content"]:
            c[0]["content"] = c[0]["content"].replace("7a1e0c2d-0000-4000-8000-0000000000c3/tool-results", "../tool-results")
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert "SECRET" not in load(p).calls[1].result.summary


# ---- the new shapes, hostile: cut anywhere, wrong types anywhere (nothing raises) -----------------
_NEW = [(CC_IDE, "claude-code"), (CC_CONT, "claude-code"), (CX_FORK, "codex-cli"), (CX_ERR, "codex-cli")]
_WRONG = [None, 7, -1.5, True, "x", [], {}, [1, "a"], {"k": [None]}]


def _paths(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield path + (i,)
            yield from _paths(v, path + (i,))


@pytest.mark.parametrize("src,fmt", _NEW, ids=[p.name for p, _ in _NEW])
def test_new_shapes_cut_anywhere_and_wrong_types_anywhere_never_raise(src, fmt):
    import random

    from ktui.trace.reader import load_bytes

    data = src.read_bytes()
    for cut in range(0, len(data), max(1, len(data) // 40)):
        assert load_bytes(data[:cut], "cut", format=fmt).format == fmt
    rows = [json.loads(x) for x in data.splitlines()]
    rnd = random.Random(21)
    for trial in range(60):
        mutated = json.loads(json.dumps(rows))
        i = rnd.randrange(len(mutated))
        paths = list(_paths(mutated[i]))
        if not paths:
            continue
        *head, last = rnd.choice(paths)
        node = mutated[i]
        for k in head:
            node = node[k]
        node[last] = rnd.choice(_WRONG)
        run = load_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in mutated), f"m{trial}", format=fmt)
        assert run.format == fmt


def test_claude_code_subagent_meta_and_images_are_said(tmp_path):
    sub = tmp_path / "-home-dev-kb" / "7a1e0c2d-0000-4000-8000-0000000000e5" / "subagents"
    sub.mkdir(parents=True)
    env = {"userType": "external", "cwd": "/home/dev/kb", "sessionId": "7a1e0c2d-0000-4000-8000-0000000000e5",
           "version": "2.1.92", "isSidechain": True, "agentId": "a5c1"}
    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    rows = [
        {**env, "parentUuid": None, "type": "user", "uuid": "s1", "timestamp": "2026-04-02T10:00:00.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "What does this profile show?"}, png]}},
        {**env, "parentUuid": "s1", "type": "assistant", "uuid": "s2", "timestamp": "2026-04-02T10:00:05.000Z",
         "message": {"model": "claude-sonnet-4-6", "id": "msg_s2", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_s", "name": "mcp__playwright__browser_take_screenshot", "input": {}}]}},
        {**env, "parentUuid": "s2", "type": "user", "uuid": "s3", "timestamp": "2026-04-02T10:00:07.000Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s",
                                                   "content": [{"type": "text", "text": "Took a screenshot"}, png]}]}},
    ]
    t = sub / "agent-a5c1.jsonl"
    t.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (sub / "agent-a5c1.meta.json").write_text('{"agentType":"Explore","description":"Read the Nsight profile"}')
    run = load(t)
    assert run.persona == "subagent Explore a5c1"
    assert "subagent Explore asked: Read the Nsight profile" in [n for _, n in run.notes]
    assert run.problem.prompt.startswith("What does this profile show?") and "[image: image/png]" in run.messages[0][3]
    assert run.calls[0].result.summary == "Took a screenshot\n[image: image/png]"
    (sub / "agent-a5c1.meta.json").write_text("{not json")  # a broken meta file: the transcript reads as before
    assert load(t).persona == "subagent a5c1"
