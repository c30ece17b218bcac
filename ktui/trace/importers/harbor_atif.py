"""Harbor ATIF trajectories (``trajectory.json``, schema ``ATIF-v1.x``; terminus-2 and others).

A single object ``{schema_version, session_id, agent: {name, version, model_name}, steps[],
final_metrics}``. A ``user`` (or ``system``) step is a prompt; an ``agent`` step is one turn: its
``message`` (the model's analysis and plan), ``reasoning_content``, ``tool_calls``
(``{tool_call_id, function_name, arguments}``; terminus sends ``keystrokes``, where kernels travel
in ``cat > solution.py << 'EOF'`` heredocs), ``observation.results`` and ``metrics``
(prompt / completion / cached tokens, cost). A result pairs by ``source_call_id``; a step with
several calls returns one combined terminal output with no id: it is attached to the step's last
call, and the other calls say so. A ``system`` (or ``user``) step's observation (a check the
harness ran itself, ATIF 1.2+) is an observation message. A result is an error where the converter says so:
``extra.tool_result_is_error`` on the step (Harbor's Claude Code converter) or on the result, or
``tool_result_metadata.is_error``, or an exit code other than 0 where Harbor's Codex converter
keeps it (``extra.tool_call_details[id].metadata.exit_code``, ``extra.tool_metadata``: the output
text no longer says it); a write, edit or patch with an error result is not applied. A
placeholder model (Claude Code's ``<synthetic>``: a message the CLI made itself, "Not logged in",
an API error) names no model and is not a model's response (a note); a run that ends on one ended
on an error (``backend_error``). A step is stamped once, when written (terminus-2: after its
commands ran): a turn's time runs from the step before it to its own, model and commands together;
ATIF records no LLM time. "Lines" are step ordinals; problems carry a JSON path.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    as_int,
    as_num,
    as_str,
    decoded_arguments,
    iso_ms,
    shell_status,
    text_of,
)
from ktui.trace.importers.textcalls import text_calls
from ktui.trace.model import OK, Actor, Run, Terminal, ToolCall, Turn
from ktui.trace.words import count, plural

NAME = "harbor-atif"
LABEL = "Harbor ATIF trajectory (JSON)"
LINE_BASED = False


def detect_object(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        return False
    sv = obj.get("schema_version")
    if isinstance(sv, str) and sv.upper().startswith("ATIF"):
        return True
    st = obj["steps"][:1]
    return isinstance(obj.get("agent"), dict) and bool(st) and isinstance(st[0], dict) and \
        "step_id" in st[0] and "source" in st[0]


def _is_err(d: Any) -> bool:
    """An ``extra`` that says the tool reported an error: ``tool_result_is_error`` (Harbor's
    Claude Code converter), ``is_error``, or ``tool_result_metadata.is_error`` /
    ``tool_result_metadata.raw_tool_result.is_error``."""
    if not isinstance(d, dict):
        return False
    if d.get("tool_result_is_error") is True or d.get("is_error") is True:
        return True
    meta = d.get("tool_result_metadata")
    if isinstance(meta, dict):
        raw = meta.get("raw_tool_result")
        return meta.get("is_error") is True or (isinstance(raw, dict) and raw.get("is_error") is True)
    return False


def _exit_code(step_extra: dict, cid: str | None, n_calls: int) -> int | None:
    """The exit code Harbor's Codex converter keeps beside a call: ``extra.tool_call_details[id]
    .metadata.exit_code`` (a step of several calls), ``extra.tool_metadata.exit_code`` (one)."""
    details = _dict(step_extra.get("tool_call_details"))
    meta = _dict(_dict(details.get(cid)).get("metadata")) if cid else {}
    if not meta and n_calls == 1:
        meta = _dict(step_extra.get("tool_metadata"))
    return as_int(meta.get("exit_code"))


def _failed_ids(step_extra: dict, results: list, calls: list) -> set:
    """Ids of the step's calls whose result is an error, or whose exit code is not 0."""
    out: set = {c.id for c in calls if c.id and (_exit_code(step_extra, c.id, len(calls)) or 0) != 0}
    for r in results:
        if isinstance(r, dict) and _is_err(r.get("extra")) and isinstance(r.get("source_call_id"), str):
            out.add(r["source_call_id"])
    if _is_err(step_extra):
        meta = _dict(step_extra.get("tool_result_metadata"))
        raw = _dict(meta.get("raw_tool_result"))
        named = raw.get("tool_use_id")
        ids = [c.id for c in calls if c.id]
        if isinstance(named, str) and named in ids:
            out.add(named)
        elif len(ids) == 1:  # the step's one call
            out.add(ids[0])
    return out


def _writes(c) -> bool:
    """A call that writes a file by its arguments: a write, an edit, a patch (Codex's
    ``apply_patch``: ``{"input": "*** Begin Patch ..."}``)."""
    a = c.args
    return any(isinstance(a.get(k), str) for k in ("content", "new_string", "file_text")) or \
        isinstance(a.get("edits"), list) or "*** Begin Patch" in Assembler.command_of(c)


def _observe(asm: Assembler, step_extra: dict, results: list, c) -> None:
    """File content the converter kept from Claude Code's ``toolUseResult``
    (``tool_result_metadata.tool_use_result``): an edit's ``originalFile`` (the file just before
    it), a whole-file ``Read``'s ``file.content``."""
    for d in [step_extra] + [r.get("extra") for r in results if isinstance(r, dict) and r.get("source_call_id") == c.id]:
        meta = d.get("tool_result_metadata") if isinstance(d, dict) else None
        tur = meta.get("tool_use_result") if isinstance(meta, dict) else None
        if not isinstance(tur, dict):
            continue
        from ktui.trace.importers.kernels import norm_path

        if isinstance(tur.get("originalFile"), str):
            fp = tur.get("filePath") or c.args.get("file_path")
            if isinstance(fp, str) and fp:
                asm.files.observe(norm_path(fp), tur["originalFile"])
        f = tur.get("file")
        if isinstance(f, dict) and isinstance(f.get("content"), str) and isinstance(f.get("filePath"), str):
            start, n, total = f.get("startLine"), f.get("numLines"), f.get("totalLines")
            if start in (None, 1) and (not isinstance(n, int) or not isinstance(total, int) or n >= total):
                asm.files.observe(norm_path(f["filePath"]), f["content"])  # a whole-file Read


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if not isinstance(obj, dict) or not isinstance(obj.get("steps"), list):
        asm.problem(0, "not an ATIF trajectory: expected an object with a 'steps' list", "", "error", "$.steps")
        return asm.finish()
    agent = _dict(obj.get("agent"))
    run.model = _model(agent.get("model_name"))
    run.persona = as_str(agent.get("name"))
    run.actors.append(Actor(id="agent", model=run.model, persona=run.persona,
                            params={k: v for k, v in agent.items() if k not in ("model_name", "name")}))
    asm.note(0, f"{as_str(obj.get('schema_version')) or 'ATIF'} · session {as_str(obj.get('session_id')) or '?'} · "
                f"{run.persona or '?'} {as_str(agent.get('version')) or ''}")
    turns: list[Turn] = []
    prev_ts: int | None = None
    for i, s in enumerate(obj["steps"]):
        n = len(turns)
        _step(asm, s, i, turns, agent.get("model_name"))
        ts = iso_ms(s.get("timestamp")) if isinstance(s, dict) else None
        if len(turns) > n:
            _turn_time(asm, turns[-1], prev_ts, ts, i)
        if ts is not None:
            prev_ts = ts
    agent_steps = [(i, s) for i, s in enumerate(obj["steps"]) if isinstance(s, dict) and s.get("source") == "agent"]
    if agent_steps and turns:
        i, last = agent_steps[-1]
        named = last.get("model_name") if isinstance(last.get("model_name"), str) and last["model_name"] else \
            agent.get("model_name")
        if _placeholder(named) and turns[-1].first_line == i + 1:  # the run ended on the agent's own message
            said = last.get("message") if isinstance(last.get("message"), str) else text_of(last.get("message"))
            run.terminal.append(Terminal("backend_error", (said or f"a message of model {named}")[:400], i + 1))
    _main_model(asm, obj["steps"], agent.get("model_name"))
    _finished(asm)
    asm.llm_time_recorded = False
    asm.turn_times_set = True
    if any(t.wall_ms is not None for t in turns):
        asm.note(0, "turn times: ATIF stamps each step once, when it is written (Harbor's terminus "
                    "agents: after the step's commands ran); a turn's time runs from the step before "
                    "it to its own and holds the model's reply and the commands together; ATIF "
                    "records no LLM time of its own")
    fm = _dict(obj.get("final_metrics"))
    if fm:
        asm.note(len(obj["steps"]), "final metrics: " + ", ".join(f"{k}={v}" for k, v in fm.items()
                                                                 if isinstance(v, (int, float))))
        cost = as_num(fm.get("total_cost_usd"))
        if cost is not None:
            run.tokens_by_actor["agent"] = {"usd": cost}
    for key in ("reward", "rewards", "verifier_result"):
        v = obj.get(key) if key in obj else (obj.get("extra") or {}).get(key) if isinstance(obj.get("extra"), dict) else None
        r = as_num(v) if not isinstance(v, dict) else as_num(v.get("reward"))
        if r is not None:
            run.scores["reward"] = r
            asm.outcome("passed" if r > 0 else "failed", r, f"reward {r:g}", len(obj["steps"]), "score")
            break
    return asm.finish()


def _main_model(asm: Assembler, steps: list, named: Any) -> None:
    """The run's model where ``agent.model_name`` names a side chain's: Harbor's claude-code
    converter writes the first model it meets, which can be a subagent's (the Explore agent's
    haiku) while every step of the main line says another model (the one the trial was run with)."""
    named = _model(named)
    main: dict[str, int] = {}
    side: set[str] = set()
    for s in steps:
        if not isinstance(s, dict) or s.get("source") != "agent" or _model(s.get("model_name")) is None:
            continue
        m = _model(s.get("model_name"))
        assert m is not None
        if _dict(s.get("extra")).get("is_sidechain") is True:
            side.add(m)
        else:
            main[m] = main.get(m, 0) + 1
    if named is None or not main or named in main or named not in side:
        return
    best = max(main, key=lambda k: main[k])
    asm.run.model = best
    for a in asm.run.actors:
        if a.id == "agent":
            a.model = best
    asm.note(0, f"agent.model_name is {named}, the model of side-chain (subagent) steps only; the main "
                f"line's {count(main[best], 'step')} {plural(main[best], 'says', 'say')} {best}: the run's model")


def _turn_time(asm: Assembler, t: Turn, prev_ts: int | None, ts: int | None, i: int) -> None:
    """A turn's time: from the step before it to its own step's timestamp (a step is stamped when
    it is written: Harbor's terminus-2 appends an agent step once its LLM reply came and its
    commands ran). The model's and the tools' shares are not told apart (``timing_reliable``
    False: "(model + tools)"). A step stamped before the one before it is not timed (a note)."""
    t.timing_reliable = False
    if ts is None or prev_ts is None:
        return
    if ts < prev_ts:
        asm.note(i + 1, f"step {i + 1} is stamped {(prev_ts - ts) / 1000:.1f}s before the step before it: "
                        "its turn is not timed")
        return
    t.wall_ms = ts - prev_ts


FINISH_TOOLS = ("finish",)  # OpenHands' tool that ends the run; it has no observation by design


def _finished(asm: Assembler) -> None:
    """The run's last call is the agent's ``finish`` with no result: the agent ended the run (its
    message the run's last word), not a call cut off while running."""
    calls = asm.run.calls
    if not calls or calls[-1].result is not None or calls[-1].name not in FINISH_TOOLS:
        return
    c = calls[-1]
    said = c.args.get("message") if isinstance(c.args, dict) and isinstance(c.args.get("message"), str) else ""
    asm.result(c, "(finish returns nothing: the agent ended the run)", c.line, None, status=OK)
    asm.run.terminal.append(Terminal("halt", (f"{c.name}: {said}" if said else c.name)[:400], c.line))


def _step(asm: Assembler, s: Any, i: int, turns: list[Turn], agent_model: Any = None) -> None:
    """One step: a user or system message, or an agent turn with its calls and their results."""
    run = asm.run
    line, where = i + 1, f"$.steps[{i}]"
    if not isinstance(s, dict):
        asm.warn(line, f"step {i} is a JSON {type(s).__name__}, not an object", where)
        return
    ts = iso_ms(s.get("timestamp"))
    src = s.get("source")
    asm.event(line, 0, 0, f"step:{src}", ts, src if isinstance(src, str) else None,
              len(run.turns) if src == "agent" else None)
    msg = s.get("message")
    text = msg if isinstance(msg, str) else text_of(msg)
    if src != "agent":
        if src == "system":
            run.messages.append((line, "system", None, text))
        else:
            asm.message(line, "user", text)
        for r in _list(_dict(s.get("observation")).get("results"))[:200]:  # a check the harness ran itself
            if isinstance(r, dict) and r.get("content") not in (None, "", [], {}):
                run.messages.append((line, "observation", src if isinstance(src, str) else None,
                                     _content_text(r["content"])))
        asm.ts(ts)
        return
    t = asm.turn(line, ts)
    turns.append(t)
    if _model(s.get("model_name")) and not run.model:
        run.model = _model(s.get("model_name"))
    named = s.get("model_name") if isinstance(s.get("model_name"), str) and s.get("model_name") else agent_model
    if _placeholder(named):  # the agent wrote this message itself ("Not logged in", an API error)
        asm.note(line, f"step {s.get('step_id')}: a message the agent made itself (model {named}), "
                       "not a model's response")
    asm.add_reasoning(t, as_str(s.get("reasoning_content")))
    asm.assistant_text(t, text, line)
    m = _dict(s.get("metrics"))
    t.tokens_in = as_int(m.get("prompt_tokens"))
    t.tokens_out = as_int(m.get("completion_tokens"))
    if as_num(m.get("cost_usd")) is not None:
        t.usd = as_num(m["cost_usd"])
    calls = []
    tcs = s.get("tool_calls")
    if tcs is not None and not isinstance(tcs, list):
        asm.warn(line, f"'tool_calls' is a JSON {type(tcs).__name__}, not a list", where + ".tool_calls")
        tcs = []
    for j, tc in enumerate(tcs or []):
        if not isinstance(tc, dict):
            asm.warn(line, f"tool call {j} is not an object", f"{where}.tool_calls[{j}]")
            continue
        c = asm.call(t, tc.get("function_name") or tc.get("name"), tc.get("arguments"), line, ts,
                     tc.get("tool_call_id") or tc.get("id"))
        calls.append(c)
    obs = _dict(s.get("observation"))
    results = _list(obs.get("results"))
    step_extra = _dict(s.get("extra"))
    if not tcs and isinstance(step_extra.get("tool_use_name"), str) and step_extra["tool_use_name"]:
        results = _extra_call(asm, t, s, step_extra, results, calls, line, ts)
    elif not tcs:  # calls the model wrote as text (OpenHands without native function calling)
        for k, (name, args) in enumerate(text_calls(text or "")):
            calls.append(asm.call(t, name, args, line, ts, f"step{s.get('step_id')}-text{k}"))
        if calls:
            asm.note(line, f"step {s.get('step_id')}: {count(len(calls), 'call')} written in the message as "
                           "<function=...> text (no native function calling)")
    failed = _failed_ids(step_extra, results, calls)
    for c in calls:  # a write or edit the tool refused changed nothing
        _observe(asm, step_extra, results, c)
        if not (c.id in failed and _writes(c)):
            asm.track_call(c)
    _pair_results(asm, s, line, calls, results, failed)


def _extra_call(asm: Assembler, t: Turn, s: dict, step_extra: dict, results: list, calls: list[ToolCall],
                line: int, ts: int | None) -> list:
    """A converter that kept the call only in the step's extra (tool_use_name, raw_arguments): the
    call, added to ``calls``; the step's results, paired with it."""
    raw = decoded_arguments(step_extra.get("raw_arguments"), "input")
    meta = _dict(step_extra.get("tool_result_metadata"))
    rawr = _dict(meta.get("raw_tool_result"))
    cid = rawr.get("tool_use_id") if isinstance(rawr.get("tool_use_id"), str) else f"step{s.get('step_id')}"
    calls.append(asm.call(t, step_extra["tool_use_name"], raw if isinstance(raw, dict) else {}, line, ts, cid))
    if not results and isinstance(meta.get("content"), (str, list)):
        results = [{"source_call_id": cid, "content": meta["content"]}]
    elif len(results) == 1 and isinstance(results[0], dict) and not results[0].get("source_call_id"):
        results = [dict(results[0], source_call_id=cid)]
    return results


def _pair_results(asm: Assembler, s: dict, line: int, calls: list[ToolCall], results: list, failed: set) -> None:
    """Each result to its call; results without one: one combined terminal output (Harbor's), or
    an observation message."""
    unpaired = []
    for r in results:
        if not isinstance(r, dict):
            continue
        content = r.get("content")
        c = asm.pending(r.get("source_call_id"))
        if c is None:
            unpaired.append(content)
            continue
        code = _exit_code(_dict(s.get("extra")), c.id, len(calls))
        err = c.id in failed and code in (None, 0)  # the converter says the tool errored
        text = content if isinstance(content, str) else text_of(content) if isinstance(content, list) else ""
        asm.result(c, content, line, None, is_error=err,  # the kept exit code, and what the output says
                   status=shell_status(text, err, code) if code is not None else None)
    left = [c for c in calls if c.result is None]
    if unpaired and left:
        combined = "\n".join(x if isinstance(x, str) else text_of(x) for x in unpaired)
        last = left[-1]
        if len(left) > 1:
            for c in left[:-1]:
                asm.result(c, f"(Harbor returns one combined terminal output for the {len(left)} calls of "
                              f"step {s.get('step_id')}: it is shown under call #{last.index})", line, None,
                           status=OK)
            asm.note(line, f"step {s.get('step_id')}: one combined observation for {len(left)} calls, "
                           f"attached to call #{last.index}")
        asm.result(last, combined, line, None)
    elif unpaired and not calls:
        asm.message(line, "observation", "\n".join(x if isinstance(x, str) else text_of(x) for x in unpaired))
    # Harbor's Claude Code converter writes no observation for a tool result with no content (a
    # command that printed nothing) but keeps the raw result in the step's extra
    ex = _dict(s.get("extra"))
    for key in ("tool_result_metadata", "metadata"):
        raw = _dict(_dict(ex.get(key)).get("raw_tool_result"))
        c = asm.pending(raw.get("tool_use_id")) if raw else None
        if c is not None and any(c is x for x in calls):
            content = raw.get("content")
            asm.result(c, content if isinstance(content, (str, list)) else "", line, None,
                       is_error=raw.get("is_error") is True)


def _content_text(v: Any) -> str:
    """An observation's content as text: a string as it is, blocks as their text, an object as
    ``key: value`` lines (a long ``output`` last)."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return text_of(v)
    if isinstance(v, dict):
        short = [f"{k}: {x}" for k, x in v.items() if not (isinstance(x, str) and ("\n" in x or len(x) > 200))]
        long_ = [f"{k}:\n{x}" for k, x in v.items() if isinstance(x, str) and ("\n" in x or len(x) > 200)]
        return "\n".join(short + long_)
    return str(v)


def _placeholder(v: Any) -> bool:
    """A model name that names no model: Claude Code's ``<synthetic>`` (a message the CLI made
    itself: "Not logged in", an API error, an interrupted request), any ``<...>``."""
    return isinstance(v, str) and v.strip().startswith("<")


def _model(v: Any) -> str | None:
    """The model a name names; None for an empty name or a placeholder."""
    return v.strip() if isinstance(v, str) and v.strip() and not _placeholder(v) else None


def _dict(v: Any) -> dict:
    """``v`` when it is an object, else an empty one."""
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list:
    """``v`` when it is a list, else an empty one."""
    return v if isinstance(v, list) else []
