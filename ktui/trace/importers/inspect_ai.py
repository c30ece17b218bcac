"""Inspect AI JSON eval logs (``logs/*.json``; not the zipped ``.eval`` form).

A single object: ``version``, ``status``, ``eval`` (task, model, created...), ``plan``,
``results`` (scorers and metrics), ``stats`` (run start / end, token totals) and ``samples``.
Each sample's ``messages`` (OpenAI-like roles, ``tool_calls`` with dict arguments, ``tool``
messages with ``tool_call_id``) become turns, one per assistant message, sample after sample;
its ``events`` give per-call tokens and times (``model`` events in order, ``tool`` events by id);
its ``scores`` give the outcome. ``attachment://<hash>`` references are resolved from the
sample's ``attachments``. "Lines" of an Inspect run are the messages' ordinals (1, 2, ... over
all samples); problems carry a JSON path.
"""

from __future__ import annotations

from typing import Any

from ktui.trace.importers import chat_messages
from ktui.trace.importers.common import Assembler, as_int, as_num, as_str, iso_ms
from ktui.trace.model import OUTCOME_FAILED, PASSED, Run, ToolCall

NAME = "inspect"
LABEL = "Inspect AI eval log (JSON)"
LINE_BASED = False
_SCORE_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def detect_object(obj: Any) -> bool:
    ev = obj.get("eval") if isinstance(obj, dict) else None
    return isinstance(ev, dict) and ("task" in ev or "model" in ev) and \
        any(k in obj for k in ("samples", "results", "stats", "plan"))


def _resolve(v: Any, att: dict, depth: int = 0) -> Any:
    if depth > 40:
        return v
    if isinstance(v, str):
        if v.startswith("attachment://"):
            got = att.get(v[len("attachment://"):])
            return got if isinstance(got, str) else v
        return v
    if isinstance(v, list):
        return [_resolve(x, att, depth + 1) for x in v]
    if isinstance(v, dict):
        return {k: _resolve(x, att, depth + 1) for k, x in v.items()}
    return v


def score_value(v: Any) -> float | None:
    if isinstance(v, str):
        return _SCORE_VALUES.get(v.strip().upper())
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    n = as_num(v)
    if n is not None:
        return n
    if isinstance(v, dict):  # several values: their mean
        vals = [score_value(x) for x in v.values()]
        vals = [x for x in vals if x is not None]
        return sum(vals) / len(vals) if vals else None
    return None


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if not isinstance(obj, dict) or not isinstance(obj.get("eval"), dict):
        asm.problem(0, "not an Inspect log: expected an object with an 'eval' object", "", "error", "$.eval")
        return asm.finish()
    ev = obj["eval"]
    run.model = as_str(ev.get("model"))
    task = as_str(ev.get("task"))
    run.problem.name = task
    run.scenario = task
    stats = obj.get("stats") if isinstance(obj.get("stats"), dict) else {}
    asm.ts(iso_ms(stats.get("started_at")) or iso_ms(ev.get("created")))
    pk = ev.get("packages") if isinstance(ev.get("packages"), dict) else {}
    asm.note(0, f"inspect_ai {as_str(pk.get('inspect_ai')) or '?'} · task {task or '?'} · status "
                f"{as_str(obj.get('status')) or '?'}")
    if obj.get("status") not in (None, "success"):
        err = obj.get("error")
        msg = as_str(err.get("message")) if isinstance(err, dict) else as_str(err)
        asm.outcome("incomplete", None, f"eval status {obj.get('status')}: {msg or ''}".strip(), 0, "backend_error")
    samples = obj.get("samples")
    if samples is None:
        samples = []
        asm.warn(0, "the log has no samples (written with log_samples off, or a header-only log)", "$.samples")
    if not isinstance(samples, list):
        asm.problem(0, f"'samples' is a JSON {type(samples).__name__}, not a list", "$.samples")
        samples = []
    base = 0
    per_scorer: dict[str, list[float]] = {}
    for k, s in enumerate(samples):
        where = f"$.samples[{k}]"
        if not isinstance(s, dict):
            asm.warn(0, f"sample {k} is a JSON {type(s).__name__}", where)
            continue
        msgs = s.get("messages")
        if not isinstance(msgs, list):
            asm.warn(base, "sample without a messages list", where + ".messages")
            continue
        att = s.get("attachments") if isinstance(s.get("attachments"), dict) else {}
        if att:
            msgs = _resolve(msgs, att)
        first = base + 1
        asm.event(first, 0, 0, "sample", None)
        run.messages.append((first, "sample", None, f"sample {s.get('id')} (epoch {s.get('epoch')})"))
        n_turns = len(run.turns)
        b0 = base
        turns = chat_messages._conversation(asm, msgs, lambda i, b0=b0: b0 + i + 1,
                                            lambda i, k=k: f"$.samples[{k}].messages[{i}]")
        for i in range(len(msgs)):
            asm.event(base + i + 1, 0, 0, "message", None, None, None)
        base += len(msgs)
        _events(asm, s, turns, where)
        for t in run.turns[n_turns:]:
            t.actor = f"sample {s.get('id')}" if len(samples) > 1 else "agent"
        scores = s.get("scores") if isinstance(s.get("scores"), dict) else {}
        if not scores and isinstance(s.get("score"), dict):
            scores = {"score": s["score"]}
        for name, sc in scores.items():
            val = score_value(sc.get("value") if isinstance(sc, dict) else sc)
            if val is None:
                continue
            per_scorer.setdefault(str(name), []).append(val)
            expl = as_str(sc.get("explanation")) if isinstance(sc, dict) else None
            ans = as_str(sc.get("answer")) if isinstance(sc, dict) else None
            run.terminal.append(_term(f"sample {s.get('id')}: {name} = {sc.get('value') if isinstance(sc, dict) else sc}"
                                      + (f" (answer {ans!r})" if ans else "") + (f": {expl}" if expl else ""),
                                      base, val))
        if isinstance(s.get("error"), (dict, str)) and s.get("error"):
            e = s["error"]
            asm.problem(base, f"sample {s.get('id')} failed: {as_str(e.get('message')) if isinstance(e, dict) else e}",
                        "", "warning", where + ".error")
    for name, vals in per_scorer.items():
        run.scores[name] = sum(vals) / len(vals)
    res = obj.get("results") if isinstance(obj.get("results"), dict) else {}
    for sc in res.get("scores") or []:
        if isinstance(sc, dict) and isinstance(sc.get("metrics"), dict):
            for mname, m in sc["metrics"].items():
                v = as_num(m.get("value")) if isinstance(m, dict) else as_num(m)
                if v is not None:
                    run.scores[f"{sc.get('name')}.{mname}"] = v
    if per_scorer:
        first_name = next(iter(per_scorer))
        vals = per_scorer[first_name]
        mean = sum(vals) / len(vals)
        asm.outcome(PASSED if all(v >= 1 for v in vals) else OUTCOME_FAILED, mean,
                    f"{first_name}: mean {mean:g} over {len(vals)} sample(s)", base, "score")
    end = iso_ms(stats.get("completed_at"))
    if end is not None:
        asm.ts(end)
    return asm.finish()


def _term(text: str, line: int, value: float):
    from ktui.trace.model import Terminal

    return Terminal("grader", text, line, value)


def _events(asm: Assembler, s: dict, turns: list, where: str) -> None:
    """Per-call tokens and times: model events in order onto the sample's turns, tool events by id."""
    events = s.get("events")
    if not isinstance(events, list):
        return
    calls: dict[str, ToolCall] = {c.id: c for t in turns for c in t.calls if c.id}
    model_events = [e for e in events if isinstance(e, dict) and e.get("event") == "model"]
    for t, e in zip(turns, model_events, strict=False):
        out = e.get("output") if isinstance(e.get("output"), dict) else {}
        u = out.get("usage") if isinstance(out.get("usage"), dict) else {}
        tin = as_int(u.get("input_tokens"))
        if tin is not None:
            t.tokens_in = tin + (as_int(u.get("input_tokens_cache_read")) or 0) + \
                (as_int(u.get("input_tokens_cache_write")) or 0)
        t.tokens_out = as_int(u.get("output_tokens"))
        tr = as_int(u.get("reasoning_tokens"))
        if tr:
            t.tokens_reasoning = tr
        start, end = iso_ms(e.get("timestamp")), iso_ms(e.get("completed"))
        if start is not None:
            t.start_ms = start
            t.end_ms = end if end is not None else start
            asm.ts(start)
        if end is not None:
            t.llm_ms = max(0, end - start) if start is not None else None
            asm.ts(end)
        elif as_num(out.get("time")) is not None:
            t.llm_ms = int(as_num(out["time"]) * 1000)
    if len(model_events) != len(turns):
        asm.warn(turns[0].first_line if turns else 0,
                 f"{len(model_events)} model event(s) for {len(turns)} assistant message(s); tokens matched in order",
                 where + ".events")
    for e in events:
        if not isinstance(e, dict) or e.get("event") != "tool":
            continue
        c = calls.get(e.get("id")) if isinstance(e.get("id"), str) else None
        if c is None:
            continue
        start, end = iso_ms(e.get("timestamp")), iso_ms(e.get("completed"))
        c.ts_ms = start
        if c.result is not None and end is not None:
            c.result.ts_ms = end
        if c.turn is not None and end is not None:
            t = asm.run.turns[c.turn]
            t.end_ms = max(t.end_ms or end, end)
            t.tool_ms = (t.tool_ms or 0) + max(0, end - (start or end))
    for t in turns:  # samples run concurrently: a turn's time is its own span, not since the previous event
        if t.start_ms is not None and t.end_ms is not None:
            t.wall_ms = max(0, t.end_ms - t.start_ms)
