"""Search every transcript, tool call, tool result and kernel of a trace or a whole sweep.

``ktui search PATH PATTERN`` and the runs screen's search key use :func:`search`: it walks
``PATH`` like ``ktui runs`` (:func:`ktui.trace.index.iter_traces`: the same layouts, links and
duplicate rules) and yields :class:`Hit` rows as it goes, one trace at a time. A sweep is not
reloaded in full for every search:

1. the index cache (what ``ktui runs`` wrote for this directory, when it is still valid for a
   file: same size and mtime) says which ``.json`` files are not traces and names each run's
   model and problem, so those are never opened;
2. every other file is read as raw bytes and tested first: a literal pattern's longest piece
   that JSON never escapes must occur in the bytes (``bytes.find``, or an ASCII case-insensitive
   regex), then the pattern must match the file's text with JSON's string escapes undone
   (``\\n``, ``\\"``, ``\\uXXXX`` ...). Text a trace holds in a string field is a substring of
   that unescaped text, so a file that fails either test holds no hit and is never parsed;
3. only a file that passes is parsed (:func:`ktui.trace.load`, every format ktui reads) and its
   turns searched field by field, so a hit has its run, turn and field.

Fields (``--in``): ``reasoning`` and ``text`` (the agent's reasoning and message of a turn;
``text`` also every system note of the run, e.g. a backend's error or a persona's fallback in the
middle of it, other actors' messages, the actors' system prompts and the problem's prompt),
``calls`` (a tool call's name and arguments, the kernel code argument excepted), ``results``
(a tool result's text and its structured effect / meta strings) and ``kernels`` (each kernel
version's code, at the turn that first wrote it). Matching is smart-case, like ripgrep's: case
is ignored unless the pattern has an upper-case letter (``case_sensitive`` overrides).

Excerpts are trace text, kept raw here (on one line: newlines and tabs become spaces): whoever
shows a hit cleans it (``ktui search``'s lines and ``--json`` in :mod:`ktui.report.search`, the
search screen in :mod:`ktui.tui.screens.search`, with :mod:`ktui.view.text`). No Textual, no Rich.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("reasoning", "text", "calls", "results", "kernels")
EXCERPT = 160  # characters of context shown around a hit (the whole line when shorter)
MAX_PER_RUN = 50  # hits kept per run by default (the rest are counted)
MAX_FILE = 1 << 30  # bytes: bigger files are skipped (and said so)
_MAX_DEPTH = 16  # nesting walked in a call's arguments / a result's effect

# JSON writers may escape these inside strings (\" \\ \/ and Go's \u003c \u003e \u0026); a
# literal's longest run of other printable ASCII is what the raw bytes must contain
_UNSAFE = set('"\\/<>&')
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})(?:\\u([dD][c-fC-F][0-9a-fA-F]{2}))?|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# patterns that depend on where a field starts or ends cannot be tested on the whole file
_ANCHORS = re.compile(r"(?<!\\)(?:\\\\)*(?:\^|\$|\\[AZBb]|\(\?<[=!])")


def _unescape_match(m: re.Match[str]) -> str:
    if m.group(3):
        return _SIMPLE[m.group(3)]
    hi = int(m.group(1), 16)
    if m.group(2) and 0xD800 <= hi <= 0xDBFF:
        lo = int(m.group(2), 16)
        return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
    return chr(hi)


def json_unescaped(raw: bytes) -> str:
    """The file's text with JSON's string escapes undone (structure characters stay)."""
    return _unescape_text(raw.decode("utf-8", "replace"))


def _unescape_text(text: str) -> str:
    return _ESCAPE.sub(_unescape_match, text) if "\\" in text else text


class PatternError(ValueError):
    """A pattern that does not compile (one line for the user)."""


class Matcher:
    """A compiled search: what it looks for, and the cheap tests a file must pass first."""

    def __init__(self, pattern: str, *, regex: bool = False, case_sensitive: bool | None = None) -> None:
        if not pattern:
            raise PatternError("empty pattern")
        self.pattern = pattern
        self.regex = regex
        if case_sensitive is None:  # smart case
            case_sensitive = any(ch.isupper() for ch in pattern)
        self.case_sensitive = case_sensitive
        flags = re.MULTILINE if case_sensitive else re.MULTILINE | re.IGNORECASE  # ^ $: a line, as in grep
        try:
            self.rx = re.compile(pattern if regex else re.escape(pattern), flags)
        except re.error as exc:
            raise PatternError(f"bad regular expression: {exc}") from None
        except RecursionError:
            raise PatternError("bad regular expression: nested too deeply") from None
        if self.rx.search("") is not None:
            raise PatternError("the pattern matches the empty string (it would match everything)")
        # the byte prefilter: a literal's longest piece JSON writes as it is
        self.needle: bytes | None = None
        self.needle_rx: re.Pattern[bytes] | None = None
        if not regex:
            piece = max(_safe_pieces(pattern), key=len, default="")
            if len(piece) >= 2:
                self.needle = piece.encode("ascii")
                if not case_sensitive:
                    self.needle_rx = re.compile(re.escape(self.needle), re.IGNORECASE)
        # the text prefilter: only sound when a hit does not depend on where a field starts or ends
        self.whole_file = not (regex and _ANCHORS.search(pattern))

    def may_match(self, raw: bytes) -> bool:
        """False only when no field of this file can hold a hit."""
        if self.needle is not None:
            found = self.needle_rx.search(raw) is not None if self.needle_rx is not None else self.needle in raw
            if not found:
                return False
        if not self.whole_file:
            return True
        text = json_unescaped(raw)
        if self.rx.search(text) is not None:
            return True
        # text a note or a result carries as JSON inside a JSON string is escaped twice in the
        # file (a system note's ``{"kind": "kickoff", "message": "say \\"hi\\""}``): undone twice
        return "\\" in text and self.rx.search(_unescape_text(text)) is not None

    def finditer(self, text: str) -> Iterator[tuple[int, int]]:
        for m in self.rx.finditer(text):
            if m.end() > m.start():
                yield m.start(), m.end()


def _safe_pieces(pattern: str) -> Iterator[str]:
    cur: list[str] = []
    for ch in pattern:
        if 0x20 <= ord(ch) < 0x7F and ch not in _UNSAFE:
            cur.append(ch)
        else:
            if cur:
                yield "".join(cur)
            cur = []
    if cur:
        yield "".join(cur)


@dataclass
class Hit:
    """One match: where (run, turn, field) and the line around it, raw (on one line)."""

    run: str  # the trace as found under the searched path
    real: str  # its real path (what replay opens)
    turn: int | None  # 0-based, None: before the first turn (a seeded call) or not in a turn
    field: str  # one of FIELDS
    before: str
    match: str
    after: str
    where: str = ""  # which call / version ("compile_kernel", "v3")
    line: int | None = None  # the trace file's line number of the event, when known
    model: str | None = None
    problem: str | None = None

    @property
    def excerpt(self) -> str:
        return self.before + self.match + self.after

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "path": self.real, "turn": self.turn, "field": self.field, "where": self.where,
                "line": self.line, "model": self.model, "problem": self.problem, "excerpt": self.excerpt,
                "match": [len(self.before), len(self.before) + len(self.match)]}


def _flat(s: object) -> str:
    """On one line (newlines and tabs become spaces); not sanitized: a renderer cleans it."""
    s = s if isinstance(s, str) else ("" if s is None else str(s))
    if "\n" in s or "\t" in s:
        s = s.replace("\n", " ").replace("\t", " ")
    return s


def excerpt(text: str, start: int, end: int, width: int = EXCERPT) -> tuple[str, str, str]:
    """The line of ``text`` around ``[start, end)``, cut to about ``width`` characters, as
    (before, match, after), each on one line (raw: see :class:`Hit`)."""
    ls = text.rfind("\n", 0, start) + 1
    le = text.find("\n", end)
    le = len(text) if le < 0 else le
    if end - start > width:
        end = start + width
    room = max(0, width - (end - start))
    left = max(0, min(start - ls, max(room // 3, room - (le - end))))
    right = max(0, min(le - end, room - left))
    a, b = start - left, min(le, end + right)
    before = ("…" if a > ls else "") + text[a:start].lstrip()
    after = text[end:b].rstrip() + ("…" if b < le else "")
    return _flat(before), _flat(text[start:end]), _flat(after)


def _strings(obj: Any, depth: int = 0) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif depth < _MAX_DEPTH and isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v, depth + 1)


def _texts(run: Any, fields: Iterable[str]) -> Iterator[tuple[int | None, str, str, int | None, str]]:
    """(turn, field, where, line, text) for every searchable text of a loaded run, in turn order."""
    want = set(fields)
    turns = list(getattr(run, "turns", None) or [])
    seeded = [c for c in getattr(run, "calls", None) or [] if getattr(c, "turn", None) is None]
    kernels_at: dict[int | None, list[Any]] = {}
    if "kernels" in want:
        for kv in getattr(run, "kernels", None) or []:
            kernels_at.setdefault(kv.first_turn, []).append(kv)

    def calls(cs: Iterable[Any], turn: int | None) -> Iterator[tuple[int | None, str, str, int | None, str]]:
        for c in cs:
            name = str(getattr(c, "name", "") or "")
            if "calls" in want:
                yield turn, "calls", name, c.line, name
                args = c.args if isinstance(c.args, dict) else {}
                for k, v in args.items():
                    if k == "kernel_code" and getattr(c, "kernel", None) is not None:
                        continue  # the kernel's code: the "kernels" field
                    for s in _strings(v):
                        yield turn, "calls", name, c.line, s
            res = getattr(c, "result", None)
            if res is not None and "results" in want:
                seen = {res.summary}
                yield turn, "results", name, res.line, res.summary or ""
                for s in _strings([res.effect or {}, res.meta or {}]):
                    if s not in seen:
                        seen.add(s)
                        yield turn, "results", name, res.line, s

    others = _other_texts(run, turns) if "text" in want else {}
    yield from calls(seeded, None)
    yield from others.pop(None, [])
    for kv in kernels_at.pop(None, []):
        yield None, "kernels", kv.label, kv.first_line, kv.code or ""
    for t in turns:
        line = getattr(t, "first_line", None)
        if "reasoning" in want and t.reasoning:
            yield t.index, "reasoning", "", line, t.reasoning
        if "text" in want and t.text:
            yield t.index, "text", "", line, t.text
        yield from others.pop(t.index, [])
        yield from calls(t.calls, t.index)
        for kv in kernels_at.pop(t.index, []):
            yield t.index, "kernels", kv.label, kv.first_line, kv.code or ""
    for kvs in kernels_at.values():  # versions whose first turn is past the last (should not happen)
        for kv in kvs:
            yield kv.first_turn, "kernels", kv.label, kv.first_line, kv.code or ""


# the messages a turn holds itself (its text or reasoning): searched there, once
_TURN_KINDS = frozenset({"agent_message", "assistant_message"})


def _other_texts(run: Any, turns: list[Any]) -> dict[int | None, list[tuple[int | None, str, str, int | None, str]]]:
    """The transcript's text outside the turns' own messages, by the turn the app shows it with
    (field "text", ``where`` saying which):

    - the messages of other actors (the user's, a tool's) and every system note (``note``), at the
      turn they lead into (the first turn that ends at or after their line, else the last; None
      before the first turn); the notes that say how the run ended (a backend's error, a halt, the
      grader) at the last turn, where the replay shows "run ended". A note in the middle of a run
      (a persona's fallback, a retried backend, an actor spawned late) is searched like any other;
      a note whose body is JSON is searched in its string values too (its escapes undone);
    - each actor's system prompt (``system prompt ID``) at the first turn, whose document the
      run's preamble leads, and the problem's prompt (``problem prompt``) before the first turn
      (the spawn and prompt notes name them only: "agent_spawned: rep1 model=...").

    Every note of a run with no turns, every message and prompt before its first turn: None."""
    items: list[tuple[int, str, str, str]] = []  # (line, where, text, placement)
    ended = {getattr(x, "line", None) for x in getattr(run, "terminal", None) or []}
    for note in getattr(run, "notes", None) or []:
        if isinstance(note, tuple) and len(note) == 2 and isinstance(note[0], int) and isinstance(note[1], str):
            place = "end" if turns and note[0] in ended else "flow"
            items.append((note[0], "note", note[1], place))
            for s in _note_strings(note[1]):
                items.append((note[0], "note", s, place))
    for msg in getattr(run, "messages", None) or []:
        if isinstance(msg, tuple) and len(msg) == 4 and msg[1] not in _TURN_KINDS and isinstance(msg[0], int):
            items.append((msg[0], " ".join(str(x) for x in msg[1:3] if x), msg[3], "flow"))
    spans = sorted((t for t in turns if isinstance(getattr(t, "first_line", None), int)
                    and isinstance(getattr(t, "last_line", None), int)), key=lambda t: t.first_line)
    for a in getattr(run, "actors", None) or []:
        sp = getattr(a, "system_prompt", None)
        if isinstance(sp, str) and sp:
            items.append((-1, f"system prompt {getattr(a, 'id', '')}", sp, "first"))
    prompt = getattr(getattr(run, "problem", None), "prompt", None)
    if isinstance(prompt, str) and prompt and not any(
            prompt in (getattr(a, "system_prompt", None) or "") for a in getattr(run, "actors", None) or []):
        items.append((-1, "problem prompt", prompt, "before"))
    reach: list[int] = []  # the largest last line of spans[:i + 1]: never decreases
    for t in spans:
        reach.append(t.last_line if not reach else max(reach[-1], t.last_line))
    out: dict[int | None, list[tuple[int | None, str, str, int | None, str]]] = {}
    for ln, where, text, place in sorted(items, key=lambda x: x[0]):
        if not isinstance(text, str) or not text:
            continue
        turn: int | None
        if place == "end":  # the run's end: the replay shows it with its last turn
            turn = len(turns) - 1 if turns else None
        elif place == "first":
            turn = spans[0].index if spans else None
        elif place == "before" or not spans or ln < spans[0].first_line:
            turn = None
        else:
            i = bisect.bisect_left(reach, ln)
            turn = spans[i].index if i < len(spans) else spans[-1].index
        out.setdefault(turn, []).append((turn, "text", where, ln if ln >= 0 else None, text))
    return out


def notes_in_turns(run: Any) -> dict[int, list[tuple[int, list[str]]]]:
    """The system notes in the middle of a run, by the turn they lead into (the rule of
    :func:`_other_texts`): not how it ended (shown with the last turn), not those before its
    first turn. Each as (line, texts): the note, then the strings of a JSON body that the note
    holds escaped. The replay shows them with their turn, where the sweep search opens its hits."""
    turns = list(getattr(run, "turns", None) or [])
    if not turns:
        return {}
    return run.lookup("notes_in_turns", _notes_in_turns) if hasattr(run, "lookup") else _notes_in_turns(run)


def _notes_in_turns(run: Any) -> dict[int, list[tuple[int, list[str]]]]:
    turns = list(run.turns)
    ended = {getattr(x, "line", None) for x in getattr(run, "terminal", None) or []}
    out: dict[int, list[tuple[int, list[str]]]] = {}
    for turn, _fld, where, line, text in (x for xs in _other_texts(run, turns).values() for x in xs):
        if where == "note" and turn is not None and line is not None and line not in ended:
            got = out.setdefault(turn, [])
            if got and got[-1][0] == line:  # a JSON note's strings, after the note
                got[-1][1].append(text)
            else:
                got.append((line, [text]))
    return out


def _note_strings(note: str) -> list[str]:
    """The string values of a note whose body is JSON (``{...}``, ``grader: {...}``) that the
    note's own text does not hold as they are (a quote, a newline, a non-ASCII character escaped
    in a message the note carries): searched besides the note, so a hit is not found twice."""
    body = note[len("grader: "):] if note.startswith("grader: ") else note
    if not body.startswith("{") or "\\" not in body:
        return []
    from ktui.trace.notes import JSONError, loads

    try:
        obj = loads(body)
    except JSONError:
        return []
    return [s for s in _strings(obj) if s and s not in note]


def search_run(run: Any, matcher: Matcher, *, fields: Iterable[str] = FIELDS, run_name: str = "", real: str = "",
               max_hits: int = MAX_PER_RUN, model: str | None = None, problem: str | None = None,
               ) -> tuple[list[Hit], int]:
    """The hits of one loaded run (at most ``max_hits``) and how many more there were."""
    hits: list[Hit] = []
    more = 0
    for turn, fld, where, line, text in _texts(run, fields):
        if not text:
            continue
        line_seen = -2
        for s, e in matcher.finditer(text):
            ls = text.rfind("\n", 0, s)
            if ls == line_seen:  # one hit a line: its first match
                continue
            line_seen = ls
            if len(hits) >= max_hits:
                more += 1
                continue
            b, m, a = excerpt(text, s, e)
            hits.append(Hit(run=run_name, real=real, turn=turn, field=fld, before=b, match=m, after=a,
                            where=_flat(where)[:60], line=line, model=model, problem=problem))
    return hits, more


@dataclass
class SearchStats:
    """What a search did (for its progress line and its last line)."""

    files: int = 0  # trace files found
    searched: int = 0  # of them, looked at so far
    parsed: int = 0  # passed the byte / text tests and were loaded
    runs_hit: int = 0
    hits: int = 0
    more: int = 0  # hits past the per-run limit (counted, not shown)
    skipped: list[str] = field(default_factory=list)  # "path: why"
    done: bool = False


def _index_entries(root: str) -> dict[str, dict[str, Any]]:
    """The index cache of ``ktui runs root`` (empty when there is none)."""
    from ktui.trace.index import cache_path, load_cache

    try:
        return load_cache(cache_path(root))
    except Exception:  # noqa: BLE001 - a cache is a hint: without it every file is tested
        return {}


def search(path: str | os.PathLike[str], matcher: Matcher, *, fields: Iterable[str] = FIELDS,
           max_per_run: int = MAX_PER_RUN, use_index: bool = True, stats: SearchStats | None = None,
           on_progress: Callable[[SearchStats], None] | None = None,
           cancelled: Callable[[], bool] | None = None) -> Iterator[Hit]:
    """Yield every hit under ``path`` (a trace or a directory), trace by trace, as found."""
    from ktui.trace import load
    from ktui.trace.address import join as join_address
    from ktui.trace.facts import not_a_trace
    from ktui.trace.importers import runs_in_file
    from ktui.trace.index import ScanIssue, iter_traces
    from ktui.trace.reader import open_regular, sniff
    from ktui.trace.results import is_sidecar

    fields = tuple(f for f in FIELDS if f in set(fields))
    st = stats if stats is not None else SearchStats()
    root = os.fspath(path)
    issues: list[ScanIssue] = []
    files = list(iter_traces(root, issues))
    st.files = len(files)
    st.skipped.extend(f"{_flat(i.path)}: {_flat(i.message)}" for i in issues if i.severity != "info")
    cached = _index_entries(root) if use_index and os.path.isdir(root) else {}
    for tf in files:
        if cancelled is not None and cancelled():
            return
        st.searched += 1
        ent = cached.get(tf.real)
        if ent is not None and not (ent.get("size") == tf.size and ent.get("mtime_ns") == tf.mtime_ns):
            ent = None
        if ((ent is not None and (ent.get("not_trace") or ent.get("format") == "result"))
                or (ent is None and is_sidecar(tf.found))):
            # not a run: a file that is no trace, a harness's result file (Harbor's reward.json
            # beside each trajectory.json): counted in no "of N runs"
            st.files -= 1
            st.searched -= 1
            if on_progress:
                on_progress(st)
            continue
        if tf.size > MAX_FILE:
            st.skipped.append(f"{_flat(tf.path)}: {tf.size} bytes, over the search limit")
            continue
        try:  # never open() a FIFO (it blocks) nor read a device (/dev/zero never ends)
            with open_regular(tf.found) as fh:
                raw = fh.read(MAX_FILE + 1)
        except OSError as exc:
            st.skipped.append(f"{_flat(tf.path)}: cannot read: {exc.strerror or exc}")
            continue
        if not matcher.may_match(raw):
            del raw
            if on_progress:
                on_progress(st)
            continue
        del raw
        # a file of many runs (ktui.trace.address): each run searched, named path#key
        many = runs_in_file(tf.found) if tf.path.endswith(".json") else None
        keys: list[str] = many[1] if many else []
        if keys:
            ent = None  # the index's entry is the file's, not its runs'
            st.files += len(keys) - 1  # counted as runs, not as one file
            st.searched += len(keys) - 1
        elif ent is None and tf.path.endswith(".json") and not_a_trace(sniff(tf.found)):
            st.files -= 1
            st.searched -= 1
            continue
        targets: list[str | None] = list(keys) if keys else [None]
        for key in targets:
            try:
                run = load(join_address(tf.found, key))
            except Exception as exc:  # noqa: BLE001 - a trace that breaks the reader is a skipped file, not a crash
                st.skipped.append(f"{_flat(tf.path)}: cannot read: {_flat(exc)}")
                continue
            st.parsed += 1
            model = ent.get("model") if ent else None
            problem = ent.get("problem") if ent else None
            if ent is None:
                try:
                    model = run.model
                    problem = run.problem.title
                except Exception:  # noqa: BLE001
                    pass
            hits, more = search_run(run, matcher, fields=fields, run_name=_flat(join_address(tf.path, key)),
                                    real=join_address(tf.real, key), max_hits=max_per_run,
                                    model=_flat(model) if model else None, problem=_flat(problem) if problem else None)
            del run
            if hits:
                st.runs_hit += 1
                st.hits += len(hits)
                st.more += more
            yield from hits
        if on_progress:
            on_progress(st)
    st.done = True
    if on_progress:
        on_progress(st)


def parse_fields(spec: str | None) -> tuple[str, ...]:
    """``--in reasoning,text``: the fields named (all when None or empty); ValueError names a bad one."""
    if not spec:
        return FIELDS
    names = [s.strip().lower() for s in spec.split(",") if s.strip()]
    alias = {"result": "results", "call": "calls", "kernel": "kernels", "code": "kernels", "message": "text",
             "messages": "text", "thinking": "reasoning"}
    out = []
    for n in names:
        n = alias.get(n, n)
        if n not in FIELDS:
            raise ValueError(f"--in {n!r}: not a field (one of {', '.join(FIELDS)})")
        out.append(n)
    return tuple(f for f in FIELDS if f in out)
