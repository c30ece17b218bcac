"""One line of an ensemble trace to one event: :class:`LineParser` decodes each line with orjson,
checks its envelope (:func:`validate`), turns a bad line into a :class:`TraceProblem` (line number
and excerpt) and hands every good event to the :class:`~ktui.trace.builder.Builder`. The common,
well-formed line takes one loop (:meth:`LineParser.feed_batch`) that does the checks and the
event log's columns itself (issue 25: the Python steps per line, against a bare orjson loop)."""

from __future__ import annotations

import math
from itertools import accumulate, repeat
from operator import add

from ktui.trace.builder import Builder
from ktui.trace.lines import BOM, MAX_DEPTH, cap_depth, max_line_bytes, too_long_message
from ktui.trace.model import V0, V1, Event, EventLog
from ktui.trace.notes import JSONError, loads, loads_lenient

_EXCERPT = 60


def _excerpt(raw: bytes) -> str:
    s = raw[:_EXCERPT].decode("utf-8", "replace")
    s = "".join(ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in s)
    return s + ("…" if len(raw) > _EXCERPT else "")


class LineParser:
    """Turns raw lines into validated envelopes for a Builder."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder
        self.line_no = 0
        self.offset = 0  # byte offset of the next line

    def feed_line(self, raw: bytes, terminated: bool = True) -> None:
        """One line without its newline. ``terminated`` is False for a final partial line."""
        self.line_no += 1
        line_no, offset, n = self.line_no, self.offset, len(raw)
        self.offset = offset + n + (1 if terminated else 0)
        body = raw[:-1] if raw[-1:] == b"\r" else raw
        if offset == 0 and body[:3] == BOM:  # a UTF-8 byte order mark: not part of the JSON
            body = body[3:]
        if n < 16 and not body.strip():
            return
        b = self.b
        try:
            obj = loads(body)
            if n > MAX_DEPTH and body.count(b"[") + body.count(b"{") > MAX_DEPTH:
                obj = cap_depth(obj, MAX_DEPTH)
        except JSONError as exc:
            if not terminated:
                b.run.incomplete = True
                return
            obj, why = _lossy(body)
            if obj is None:
                msg = str(exc).split(":", 1)[0] if "line 1 column" in str(exc) else str(exc)
                b.problem(line_no, f"not valid JSON ({_short(msg)})", _excerpt(body))
                return
            # one bad byte in a string, or a NaN that Python's json wrote, does not cost the event:
            # kept, read leniently, and said
            b.problem(line_no, why, _excerpt(body), severity="warning")
        except Exception as exc:  # noqa: BLE001 - the reader never raises on data
            b.problem(line_no, f"unreadable line ({type(exc).__name__})", _excerpt(body))
            return
        if b.run.incomplete:
            b.run.incomplete = False
        # the common, well-formed case without a function call per check
        if type(obj) is dict:
            payload = obj.get("payload")
            if type(payload) is dict:
                kind, tick, ts, actor = payload.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")
                if (type(kind) is str and kind and type(tick) is int and type(ts) is int
                        and (actor is None or type(actor) is str)):
                    b.add(Event(line_no, offset, n, kind, tick, ts, actor), payload, obj)
                    return
        ev = validate(obj, line_no, offset, n, b, body)
        if ev is not None:
            b.add(ev[0], ev[1], obj)

    def skip_line(self, length: int, terminated: bool = True, limit: int | None = None) -> None:
        """A line too long to read (:func:`split_lines`): counted, and a problem says why."""
        self.line_no += 1
        self.offset += length + (1 if terminated else 0)
        self.b.problem(self.line_no, too_long_message(length, max_line_bytes() if limit is None else limit))

    def feed_batch(self, lines) -> None:
        """Complete lines (without separator), one after another: :meth:`feed_line` for each, in
        one loop that does the common case itself. A line that decodes to an object with an
        object payload, a non-empty string kind, integer tick and ts_ms and a string or no actor
        goes straight to its handler and the event log's columns; every other line (blank, bad
        JSON, the first line of a file, deep nesting, odd fields) goes through :meth:`feed_line`,
        which checks it field by field and says what is wrong.

        The event log's line, offset and length columns of the lines the loop takes are appended
        in bulk (:func:`_bulk`: one run of consecutive lines at a time, before any line that goes
        through :meth:`feed_line`), the other columns line by line."""
        if type(lines) is not list and type(lines) is not tuple:
            lines = list(lines)  # indexed by _bulk: any iterable of lines is read once into a list
        b = self.b
        run = b.run
        keep = b.keep_events
        log = run.events
        ap_tick, ap_ts, ap_turn, ap_kind, ap_actor = _appenders(log)
        kinds, actors = b._kinds, b._actors
        ev = b._scratch
        none = EventLog._NONE
        deep = 2 * MAX_DEPTH  # a line this short cannot nest deeper than MAX_DEPTH
        lazy_at = b._lazy_min if b._src is not None else 1 << 62  # a tool call this long keeps no arguments
        line_no, offset, n_events = self.line_no, self.offset, b.n_events
        line0 = line_no  # lines[i] is line line0 + i + 1
        seg, seg_off = 0, offset  # the first line taken whose line, offset and length are not appended yet
        evidence = b._evidence
        v0, v1 = V0 in evidence, V1 in evidence  # what an envelope can still show (envelope_evidence)
        big = 1 << 62
        inf = math.inf  # no time yet (no integer equals it)
        tmin = inf if run.started_ms is None else run.started_ms
        tmax = -inf if run.ended_ms is None else run.ended_ms
        fed = False
        for raw in lines:
            n = len(raw)
            off = offset
            line_no += 1
            offset = off + n + 1
            try:
                obj = loads(raw) if off else None  # the first line of a file may start with a BOM
            except JSONError:
                obj = None
            if type(obj) is dict:
                p = obj.get("payload")
                if type(p) is dict:
                    kind, tick, ts, actor = p.get("kind"), obj.get("tick"), obj.get("ts_ms"), obj.get("actor")
                    if (type(kind) is str and type(tick) is int and type(ts) is int
                            and (actor is None or type(actor) is str) and -big < ts < big):
                        k = kinds.get(kind)
                        if k is None and kind:
                            k = b.kind_entry(kind)
                        # nesting deeper than MAX_DEPTH is capped (feed_line) where the handler keeps
                        # or walks the payload; most kinds read a string or two from it (k[3])
                        if k is not None and (n <= deep or k[3] == 1 or (k[3] == 2 and n >= lazy_at)
                                              or raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH):
                            kid, kname, handler, _ = k
                            a = actors.get(actor)
                            if a is None:
                                a = b.actor_entry(actor)
                            aid, aname = a
                            if ts < tmin:
                                tmin = ts
                            if ts > tmax:
                                tmax = ts
                            if not (v0 and v1) and (actor is None or len(obj) > 4):  # envelope_evidence, inline
                                if not v1:
                                    mid = obj.get("message_id")
                                    if type(mid) is str and mid.startswith("msg-"):
                                        evidence.add(V1)
                                        v1 = True
                                if not v0 and "costs" in obj:
                                    evidence.add(V0)
                                    v0 = True
                            ev.line, ev.offset, ev.length, ev.kind, ev.ts_ms, ev.actor, ev.turn = (
                                line_no, off, n, kname, ts, aname, None)
                            try:
                                handler(ev, p, obj)
                            except Exception as exc:  # noqa: BLE001 - never raise on data
                                b.problem(line_no, f"could not interpret '{kind}' event ({type(exc).__name__}: {exc})")
                            n_events += 1
                            if keep:
                                turn = ev.turn
                                if turn is None:
                                    turn = -1
                                try:  # the narrow columns first: a value past one widens them all
                                    ap_turn(turn)
                                    ap_kind(kid)
                                    ap_actor(aid)
                                except OverflowError:
                                    _widen(log, turn, kid, aid)
                                    ap_tick, ap_ts, ap_turn, ap_kind, ap_actor = _appenders(log)
                                try:
                                    ap_tick(tick)
                                except OverflowError:  # not a 64-bit integer: unknown, as EventLog.append
                                    ap_tick(none)
                                ap_ts(ts)
                            b._last_kind = kname
                            b._prev_ts = ts
                            fed = True
                            continue
            # everything else, one check at a time
            i = line_no - line0 - 1
            if keep:
                _bulk(log, lines, seg, i, line0 + seg + 1, seg_off)
            run.started_ms = None if tmin == inf else int(tmin)
            run.ended_ms = None if tmax == -inf else int(tmax)
            b.n_events = n_events
            if fed:
                run.incomplete = False
                fed = False
            self.line_no, self.offset = line_no - 1, off
            self.feed_line(raw)
            seg, seg_off = i + 1, self.offset
            tmin = inf if run.started_ms is None else run.started_ms
            tmax = -inf if run.ended_ms is None else run.ended_ms
            n_events = b.n_events
            ap_tick, ap_ts, ap_turn, ap_kind, ap_actor = _appenders(log)  # feed_line may have widened them
            v0, v1 = V0 in evidence, V1 in evidence
        if keep:
            _bulk(log, lines, seg, line_no - line0, line0 + seg + 1, seg_off)
        self.line_no, self.offset = line_no, offset
        run.started_ms = None if tmin == inf else int(tmin)
        run.ended_ms = None if tmax == -inf else int(tmax)
        b.n_events = n_events
        if fed:
            run.incomplete = False

    def feed_all(self, batches) -> int:
        """Feed every batch of :func:`split_lines`; the bytes fed (separators included)."""
        start = self.offset
        for lines, skipped, partial in batches:
            if lines:
                self.feed_batch(lines)
            if skipped is not None:
                self.skip_line(*skipped)
            if partial is not None:
                self.feed_line(partial, terminated=False)
        return self.offset - start

    def feed_object(self, obj: dict, length: int, terminated: bool = True) -> None:
        """A line decoded elsewhere (the sweep index rebuilds a long line's envelope without
        decoding its body): the same checks and the same builder as :meth:`feed_line`."""
        self.line_no += 1
        line_no, offset = self.line_no, self.offset
        self.offset = offset + length + (1 if terminated else 0)
        ev = validate(obj, line_no, offset, length, self.b, b"")
        if ev is not None:
            self.b.add(ev[0], ev[1], obj)


def _appenders(log: EventLog):
    """The append methods of the event log's columns the fast path appends line by line, in the
    order it names them (line, offset and length: :func:`_bulk`)."""
    return log._tick.append, log._ts.append, log._turn.append, log._kind.append, log._actor.append


def _bulk(log: EventLog, lines, start: int, stop: int, first_line: int, first_offset: int) -> None:
    """The line, offset and length columns of ``lines[start:stop]``, consecutive lines that are
    all events, the first on line ``first_line`` at byte ``first_offset`` (each line is followed
    by a one-byte separator): appended in a few C loops instead of three appends a line."""
    if start >= stop:
        return
    seg = lines if start == 0 and stop == len(lines) else lines[start:stop]
    lens = list(map(len, seg))
    last = first_line + len(lens) - 1
    if log._line.typecode != "q" and (last >= 2**32 or max(lens) >= 2**32):
        log.widen()
    log._line.extend(range(first_line, last + 1))
    log._length.extend(lens)
    log._offset.extend(accumulate(map(add, lens[:-1], repeat(1)), initial=first_offset))


def _widen(log: EventLog, turn: int, kind: int, actor: int) -> None:
    """A value did not fit a narrow column: drop the row's part appended so far, widen the
    columns, append that part again (the rest of the row follows)."""
    n = len(log._tick)  # appended after the narrow columns: the rows before this one
    for name in ("_turn", "_kind", "_actor"):
        del getattr(log, name)[n:]
    log.widen()
    log._turn.append(turn)
    log._kind.append(kind)
    log._actor.append(actor)


def _lossy(body: bytes) -> tuple[dict | None, str]:
    """The JSON object of a line orjson refused, read leniently (:func:`loads_lenient`): bad
    UTF-8 bytes replaced by U+FFFD, the ``NaN`` / ``Infinity`` / ``1e400`` / lone surrogates that
    Python's ``json`` writes by default; (None, "") when it is still not a JSON object (a binary
    file, a cut line), and else what was read leniently, said."""
    try:
        body.decode("utf-8")
        why = "a number JSON cannot hold (NaN, Infinity) or a lone surrogate, read leniently (the event is kept)"
    except UnicodeDecodeError:
        why = "invalid UTF-8 replaced by U+FFFD (the event is kept)"
    try:
        obj = loads_lenient(body)
    except Exception:  # noqa: BLE001 - still not JSON: the caller reports the first error
        return None, ""
    return (obj, why) if type(obj) is dict else (None, "")


def _short(msg: str) -> str:
    return msg if len(msg) <= 80 else msg[:77] + "..."


def validate(obj, line_no: int, offset: int, length: int, b: Builder, raw: bytes):
    """Check the envelope; return (Event, payload) or None (with a problem recorded)."""
    if not isinstance(obj, dict):
        b.problem(line_no, f"event is a JSON {type(obj).__name__}, not an object", _excerpt(raw))
        return None
    payload = obj.get("payload")
    if not isinstance(payload, dict):
        what = "missing" if payload is None else f"a {type(payload).__name__}"
        b.problem(line_no, f"'payload' is {what}, expected an object", _excerpt(raw))
        return None
    kind = payload.get("kind")
    if not isinstance(kind, str) or not kind:
        b.problem(line_no, "'payload.kind' is missing or not a string", _excerpt(raw))
        return None
    tick = obj.get("tick")
    ts = obj.get("ts_ms")
    actor = obj.get("actor")
    if tick is not None and (not isinstance(tick, int) or isinstance(tick, bool)):
        b.problem(line_no, f"'tick' is {type(tick).__name__}, expected an integer", _excerpt(raw), "warning")
        tick = None
    if ts is not None and (not isinstance(ts, (int, float)) or isinstance(ts, bool)):
        b.problem(line_no, f"'ts_ms' is {type(ts).__name__}, expected an integer", _excerpt(raw), "warning")
        ts = None
    elif ts is None and "ts_ms" not in obj:
        b.problem(line_no, "'ts_ms' is missing", _excerpt(raw), "warning")
    if actor is not None and not isinstance(actor, str):
        b.problem(line_no, f"'actor' is {type(actor).__name__}, expected a string", _excerpt(raw), "warning")
        actor = None
    ev = Event(line=line_no, offset=offset, length=length, kind=kind, tick=tick,
               ts_ms=int(ts) if ts is not None else None, actor=actor)
    return ev, payload
