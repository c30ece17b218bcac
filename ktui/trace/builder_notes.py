"""The builder's system notes (:class:`ktui.trace.builder.Builder`): a ``system`` event's note
read into run-level facts (the problem prompt, spawned actors, scenario, scores, the backend,
halts), and kept as one of the run's notes. Functions of the builder, kept apart from its turn,
call and result pairing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ktui.trace import derive
from ktui.trace.model import V2, V3, Actor, Event, Terminal
from ktui.trace.notes import parse_note
from ktui.trace.rows import Rows
from ktui.trace.text import redact

if TYPE_CHECKING:
    from ktui.trace.builder import Builder


def on_system(self: Builder, ev: Event, p: dict[str, Any]) -> None:
    """A system event: its note read (:func:`ktui.trace.notes.parse_note`) into run-level facts
    (problem, spawned actors, scenario, scores, backend, halts) and kept as a note."""
    note = p.get("note")
    if not isinstance(note, str):
        self.problem(ev.line, "system event without a string 'note'", "", "warning")
        return
    run = self.run
    info = parse_note(note)
    form = info["form"]
    shown = redact(note) if form in ("text", "backend", "backend_error", "halt") else note
    if form == "json":
        kind = info.get("kind")
        if kind == "problem_prompt":
            txt = info.get("text")
            if isinstance(txt, str):
                run.problem.prompt = self._s(txt)
                derive.problem_from_prompt(run.problem, txt)
            shown = "problem_prompt: " + (f"{len(txt):,} chars" if isinstance(txt, str) else "?")
        elif kind in ("agent_spawned", "user_spawned"):
            spawn(self, info, "agent" if kind == "agent_spawned" else "user")
            shown = f"{kind}: {info.get('actor_id')} model={info.get('model')}"
        elif kind == "scenario":
            self._evid(V3)
            if isinstance(info.get("id"), str):
                run.scenario = info["id"]
                if not run.problem.name:
                    run.problem.name = info["id"]
            if isinstance(info.get("model"), str):
                run.model = run.model or info["model"]
        elif kind == "score":
            self._evid(V3)
            val = info.get("value")
            val = float(val) if isinstance(val, (int, float)) else None
            run.terminal.append(Terminal("score", str(info.get("explanation", "")), ev.line, val))
            run.final_score = val
            self._close_turns()
    elif form == "grader":
        run.scores.update(info["scores"])
        if info.get("scenario"):
            run.scenario = str(info["scenario"])
        run.terminal.append(Terminal("grader", self._one(shown[len("grader: "):]), ev.line))
        self._close_turns()
    elif form == "agent_spawn":
        spawn(self, info, "agent")
        shown = f"agent_spawn: id={info['actor_id']} persona={info['persona']} model={info['model']}"
    elif form == "problem_prompt":
        run.problem.prompt = self._s(info["text"])
        derive.problem_from_prompt(run.problem, info["text"])
        shown = f"problem_prompt: {len(info['text']):,} chars"
    elif form == "final_score":
        self._evid(V2)
        run.final_score = info.get("final")
        run.terminal.append(Terminal("final_score", info["explanation"], ev.line, info.get("final")))
        self._close_turns()
    elif form == "header":
        self._evid(V2)
        run.model = run.model or info["model"]
        derive.problem_from_slug(run.problem, info["problem"])
    elif form == "backend_error":
        run.terminal.append(Terminal("backend_error", redact(note), ev.line))
        self._close_turns()
    elif form == "backend":
        run.backend = info["backend"]
    elif form == "halt":
        run.terminal.append(Terminal("halt", info["reason"], ev.line))
        if info.get("turn_limit") and run.max_turns is None:
            run.max_turns = info["turn_limit"]
        self._close_turns()
    notes = run.notes
    if type(notes) is Rows:
        notes.add_note(ev.line, self._one(shown))
    else:  # a run whose notes were replaced by a list
        notes.append((ev.line, self._one(shown)))

def spawn(self: Builder, info: dict[str, Any], role: str) -> None:
    """An actor spawned (agent or user): its model, persona, tools, turn limit, the problem prompt."""
    aid = info.get("actor_id")
    if not isinstance(aid, str):
        return
    params = info.get("params")
    params = params if isinstance(params, dict) else {}
    persona = info.get("persona") or params.get("persona")
    tools = info.get("tools") if isinstance(info.get("tools"), list) else None
    sp = info.get("system_prompt")
    model = info.get("model")
    if tools is not None and all(type(x) is str for x in tools):  # one list per distinct tool set
        tools = self._tool_sets.setdefault(tuple(tools), tools)
    actor = Actor(id=self._one(aid), model=self._one(model) if isinstance(model, str) else None,
                  role=role, persona=self._one(persona) if isinstance(persona, str) else None, tools=tools,
                  system_prompt=self._s(sp) if isinstance(sp, str) else None, params=params)
    self.run.actors.append(actor)
    if role == "agent":
        if self.run.model is None and actor.model:
            self.run.model = actor.model
        if self.run.persona is None and actor.persona:
            self.run.persona = actor.persona
        mt = params.get("max_turns")
        if isinstance(mt, int) and not isinstance(mt, bool):
            self.run.max_turns = mt
        if isinstance(sp, str) and "\n\n---\n\n" in sp and not self.run.problem.prompt:
            prompt = sp.split("\n\n---\n\n", 1)[1]
            self.run.problem.prompt = self._s(prompt)
            derive.problem_from_prompt(self.run.problem, prompt)
