"""Inspect AI eval logs: the JSON form (``logs/*.json``) and the zipped ``.eval`` form.

An ``.eval`` file is a zip: ``header.json`` (the log without its samples; absent while the eval
runs, when ``_journal/start.json`` gives the eval and plan), one ``samples/<id>_epoch_<n>.json``
per sample, ``summaries.json`` and ``reductions.json``. It is read into the same object as the
JSON form (bounded: entry count, sizes and compression ratio are checked before reading).

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

import io
import re
import zipfile
from typing import Any

from ktui.trace.importers import chat_messages
from ktui.trace.importers.common import (
    MAX_OBJECT_BYTES,
    Assembler,
    JSONError,
    TooBig,
    as_dict,
    as_int,
    as_num,
    as_str,
    iso_ms,
    parse_json,
    reasoning_apart,
)
from ktui.trace.model import OUTCOME_FAILED, PASSED, Run, ToolCall
from ktui.trace.words import count

NAME = "inspect"
LABEL = "Inspect AI eval log (JSON)"
LINE_BASED = False
_SCORE_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def detect_object(obj: Any) -> bool:
    ev = obj.get("eval") if isinstance(obj, dict) else None
    return isinstance(ev, dict) and ("task" in ev or "model" in ev) and \
        any(k in obj for k in ("samples", "results", "stats", "plan"))


ZIP_MAGIC = b"PK\x03\x04"
_MAX_ENTRIES = 200_000
_MAX_RATIO = 200  # a member that inflates more than this is not read (a zip bomb)
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")


def is_eval_zip(names: list[str]) -> bool:
    return "header.json" in names or "_journal/start.json" in names


def zip_names(path: str | None = None, data: bytes | None = None) -> list[str] | None:
    """The member names of a zip file (None when it is not a readable zip)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data) if data is not None else _needed(path)) as z:
            return z.namelist()[:_MAX_ENTRIES]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None


def _natural(v: str) -> tuple:
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"(\d+)", v))


def read_eval_zip(path: str | None = None, data: bytes | None = None) -> tuple[dict, list[str]]:
    """An ``.eval`` zip as the JSON log's object, and the problems met reading it."""
    problems: list[str] = []
    obj: dict[str, Any] = {}
    total = 0
    with zipfile.ZipFile(io.BytesIO(data) if data is not None else _needed(path)) as z:
        infos = {i.filename: i for i in z.infolist()[:_MAX_ENTRIES]}

        def member(name: str) -> Any:
            nonlocal total
            info = infos.get(name)
            if info is None:
                return None
            if info.file_size > MAX_OBJECT_BYTES or (info.compress_size and info.file_size / info.compress_size > _MAX_RATIO
                                                     and info.file_size > (64 << 20)):
                problems.append(f"{name}: {info.file_size:,} bytes uncompressed; not read")
                return None
            total += info.file_size
            if total > MAX_OBJECT_BYTES:
                raise TooBig(f"larger than {MAX_OBJECT_BYTES >> 20} MiB uncompressed: too big to read")
            try:
                return parse_json(z.read(info))
            except JSONError as exc:
                problems.append(f"{name}: not valid JSON ({str(exc)[:80]})")
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
                problems.append(f"{name}: cannot be read from the zip ({str(exc)[:80]})")
            return None

        head = member("header.json")
        if not isinstance(head, dict):
            start = member("_journal/start.json")
            head = dict(start) if isinstance(start, dict) else {}
            head.setdefault("status", "started")
            problems.append("no header.json (the eval had not finished when this was written): eval and plan "
                            "from _journal/start.json")
        obj.update(head)
        matched = [(n, m) for n in infos if (m := _SAMPLE.match(n))]
        names = [n for n, _ in sorted(matched, key=lambda nm: (_natural(nm[1].group(1)), int(nm[1].group(2))))]
        samples = []
        for n in names:
            sm = member(n)
            if isinstance(sm, dict):
                samples.append(sm)
        obj["samples"] = samples
        red = member("reductions.json")
        if red is not None and "reductions" not in obj:
            obj["reductions"] = red
    return obj, problems


def load_zip(path: str, data: bytes | None = None) -> Run:
    """Read an ``.eval`` zip."""
    try:
        obj, problems = read_eval_zip(None if data is not None else path, data)
    except TooBig as exc:
        run = Run(path=path)
        run.format = run.variant = NAME
        from ktui.trace.model import TraceProblem

        run.problems.append(TraceProblem(0, str(exc)))
        return run
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        run = Run(path=path)
        run.format = run.variant = NAME
        from ktui.trace.model import TraceProblem

        run.problems.append(TraceProblem(0, f"not a readable .eval zip ({str(exc)[:80]})"))
        return run
    if not isinstance(obj.get("eval"), dict):
        obj["eval"] = {}
    run = load_object(obj, path)
    from ktui.trace.model import TraceProblem

    for msg in problems:
        sev = "warning" if msg.startswith("no header.json") else "error"
        run.problems.append(TraceProblem(0, msg, "", sev))
    return run


def _input_tokens(u: dict, openai_inclusive: bool) -> int | None:
    """A call's whole input: ``input_tokens`` plus the cache reads and writes where they are
    counted apart. Inspect before 0.3.184 recorded OpenAI-style ``input_tokens`` with the cached
    tokens inside (its changelog: "input tokens now excludes cached tokens whereas previously it
    included them for some providers"); ``total_tokens`` tells the two apart where it is given."""
    tin = as_int(u.get("input_tokens"))
    if tin is None:
        return None
    read = as_int(u.get("input_tokens_cache_read")) or 0
    write = as_int(u.get("input_tokens_cache_write")) or 0
    if not (read or write):
        return tin
    out = as_int(u.get("output_tokens")) or 0
    total = as_int(u.get("total_tokens"))
    if total is not None:
        if total == tin + out or (total == tin + out + (as_int(u.get("reasoning_tokens")) or 0) and total != tin + read + write + out):
            return tin  # the cached tokens are inside input_tokens
        if total == tin + read + write + out:
            return tin + read + write
    return tin if openai_inclusive else tin + read + write


def model_of(e: dict) -> str:
    return as_str(e.get("model")) or ""


def _google(model: str) -> bool:
    """A model whose output token count leaves its thinking out (Inspect's google / vertex providers)."""
    return model.lower().split("/", 1)[0] in ("google", "vertex", "gemini")


def _inclusive_cache(ev: dict) -> bool:
    """Whether this log's OpenAI-style usage counts cached tokens inside input_tokens."""
    pk = as_dict(ev.get("packages"))
    ver = as_str(pk.get("inspect_ai")) or ""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", ver)
    if not m or tuple(int(x) for x in m.groups()) >= (0, 3, 184):
        return False
    model = (as_str(ev.get("model")) or "").lower()
    return model.split("/", 1)[0] in ("openai", "azureai", "openai-api", "grok", "together", "groq", "fireworks",
                                      "openrouter", "vllm", "sglang", "llama-cpp-python", "perplexity", "deepseek")


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
        vals = [x for x in (score_value(y) for y in v.values()) if x is not None]
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
    stats = as_dict(obj.get("stats"))
    asm.ts(iso_ms(stats.get("started_at")) or iso_ms(ev.get("created")))
    pk = as_dict(ev.get("packages"))
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
        att = as_dict(s.get("attachments"))
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
        _events(asm, s, turns, where, _inclusive_cache(ev))
        for t in run.turns[n_turns:]:
            t.actor = f"sample {s.get('id')}" if len(samples) > 1 else "agent"
        scores = as_dict(s.get("scores"))
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
    res = as_dict(obj.get("results"))
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
                    f"{first_name}: mean {mean:g} over {count(len(vals), 'sample')}", base, "score")
    end = iso_ms(stats.get("completed_at"))
    if end is not None:
        asm.ts(end)
    run = asm.finish()
    _concurrent_model_time(run)
    return run


def _concurrent_model_time(run: Run) -> None:
    """Samples run at once: the run's model time is the time some model call was running (the
    union of the calls' spans), not their sum (which was up to 10x the eval's wall time); each turn
    keeps its own call's time."""
    spans = sorted((t.start_ms, t.start_ms + t.llm_ms) for t in run.turns
                   if t.start_ms is not None and t.llm_ms is not None)
    total = sum(b - a for a, b in spans)
    busy, cur_a, cur_b = 0, None, None
    for a, b in spans:
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                busy += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None and cur_b is not None:
        busy += cur_b - cur_a
    # calls with a duration but no start (an older log's ``output.time``) cannot overlap what is known
    busy += sum(t.llm_ms for t in run.turns if t.start_ms is None and t.llm_ms is not None)
    if spans and busy < total:
        run.llm_busy_ms = busy
        run.notes.append((0, f"samples ran concurrently: the model time is the {busy / 1000:.1f} s in which a model "
                             f"call was running, not the {total / 1000:.1f} s the {count(len(spans), 'call')} took "
                             "together (each turn keeps its own call's time)"))


def _term(text: str, line: int, value: float):
    from ktui.trace.model import Terminal

    return Terminal("grader", text, line, value)


def _events(asm: Assembler, s: dict, turns: list, where: str, inclusive: bool = False) -> None:
    """Per-call tokens and times: model events in order onto the sample's turns, tool events by id."""
    events = s.get("events")
    if not isinstance(events, list):
        return
    calls: dict[str, ToolCall] = {c.id: c for t in turns for c in t.calls if c.id}
    graded = _scorer_events(events)
    model_events = [e for i, e in enumerate(events) if isinstance(e, dict) and e.get("event") == "model"
                    and i not in graded]
    if graded:  # a model-graded scorer's calls: the grader's, not the agent's turns
        g = [events[i] for i in sorted(graded) if isinstance(events[i], dict) and events[i].get("event") == "model"]
        if g:
            use = [as_dict(as_dict(e.get("output")).get("usage")) for e in g]
            names = sorted({str(graded[i]) for i in graded if graded[i]})
            asm.note(turns[0].first_line if turns else 0,
                     f"{count(len(g), 'model call')} of the scorer{'s' if len(names) > 1 else ''} "
                     f"{', '.join(names) or '?'} (not the agent's turns): "
                     f"{sum(as_int(u.get('input_tokens')) or 0 for u in use):,} tokens in, "
                     f"{sum(as_int(u.get('output_tokens')) or 0 for u in use):,} out")
    for t, e in zip(turns, model_events, strict=False):
        out = as_dict(e.get("output"))
        u = as_dict(out.get("usage"))
        tin = _input_tokens(u, inclusive)
        if tin is not None:
            t.tokens_in = tin
        t.tokens_out = as_int(u.get("output_tokens"))
        raw_in = as_int(u.get("input_tokens")) or 0
        cache = (as_int(u.get("input_tokens_cache_read")) or 0) + (as_int(u.get("input_tokens_cache_write")) or 0)
        total = as_int(u.get("total_tokens"))
        base = raw_in + (t.tokens_out or 0)
        # Google's output count leaves the thinking out; OpenAI's and Anthropic's include it
        t.tokens_reasoning = reasoning_apart(as_int(u.get("reasoning_tokens")), total, (base, base + cache),
                                             inside_by_default=not _google(model_of(e)))
        start, end = iso_ms(e.get("timestamp")), iso_ms(e.get("completed"))
        if start is not None:
            t.start_ms = start
            t.end_ms = end if end is not None else start
            asm.ts(start)
        if end is not None:
            t.llm_ms = max(0, end - start) if start is not None else None
            asm.ts(end)
        elif (secs := as_num(out.get("time"))) is not None:
            t.llm_ms = int(secs * 1000)
    if len(model_events) != len(turns):
        asm.warn(turns[0].first_line if turns else 0,
                 f"{count(len(model_events), 'model event')} for {count(len(turns), 'assistant message')}; tokens matched in order",
                 where + ".events")
    for e in events:
        if not isinstance(e, dict) or e.get("event") != "tool":
            continue
        eid = e.get("id")
        c = calls.get(eid) if isinstance(eid, str) else None
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


def _scorer_events(events: list) -> dict[int, str]:
    """The events a scorer made (index -> its name): those inside a ``scorer`` span (``span_begin``
    ``type: scorer``, or under one through ``parent_id``), or, in older logs, between a ``step``
    ``begin`` / ``end`` of ``type: scorer``."""
    spans: dict[str, tuple[str | None, str | None, str | None]] = {}  # id -> (type, name, parent)
    for e in events:
        if isinstance(e, dict) and e.get("event") == "span_begin" and isinstance(e.get("id"), str):
            spans[e["id"]] = (as_str(e.get("type")), as_str(e.get("name")), as_str(e.get("parent_id")))

    def scorer_of(sid: str | None) -> str | None:
        for _ in range(64):
            if sid is None or sid not in spans:
                return None
            typ, name, parent = spans[sid]
            if typ == "scorer":
                return name or "scorer"
            sid = parent
        return None

    out: dict[int, str] = {}
    step: str | None = None
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        if e.get("event") == "step" and e.get("type") == "scorer":
            step = (as_str(e.get("name")) or "scorer") if e.get("action") == "begin" else None
            continue
        who = scorer_of(as_str(e.get("span_id"))) if spans else None
        if who or step:
            out[i] = who or step or "scorer"
    return out


def _needed(path: str | None) -> str:
    """The path, where no data was given (without one, a TypeError)."""
    if path is None:
        raise TypeError("a path or data is needed")
    return path
