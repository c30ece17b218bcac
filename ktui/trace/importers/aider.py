"""Aider chat histories (``.aider.chat.history.md``), with the input history beside them.

Aider appends a Markdown transcript to the project's ``.aider.chat.history.md``: each launch opens
with ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (the user's local clock, no zone); what the
user typed is written ``#### text`` (one such line a typed line; ``#### <blank>`` for an empty
input); Aider's own output (versions, models, ``Tokens: N sent, M received. Cost: $x message, $y
session.``, ``Applied edit to PATH``, ``Commit abc1234 msg``, errors, command output) is quoted
``> text`` (only the first line of a multi-line output is quoted); the model's replies are plain
Markdown between them. Edits are in the reply: SEARCH / REPLACE blocks (``diff`` and
``diff-fenced`` formats: the file name on the line before the fence, or inside it) and whole files
(``whole`` format: the file name, then the fenced content). Aider says which it applied
("Applied edit to PATH"; "# N SEARCH/REPLACE block(s) failed to match!" quotes the ones that did
not): each block is an ``edit`` / ``write`` call whose result is what Aider said about it, and
only applied ones change the tracked file. ``/run CMD`` (and ``!CMD``, ``/test CMD``) is a call
of the user's whose result is the output that follows.

The chat history keeps no time but each launch's; ``.aider.input.history`` (prompt_toolkit's
history file: ``# 2024-08-27 01:20:36.998834`` then ``+line`` per typed line), where it sits
beside the file read, gives each prompt its time (matched by its text, in order). Token counts
are as Aider prints them (rounded: ``3.2k``, ``32k``). "Lines" are line numbers of the Markdown.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ktui.trace.importers.common import Assembler, iso_ms
from ktui.trace.model import FAILED, OK, Run, ToolCall, Turn
from ktui.trace.words import count

NAME = "aider"
LABEL = "Aider chat history (Markdown)"
LINE_BASED = True
INPUT_HISTORY = ".aider.input.history"
_MAX_BYTES = 256 << 20

_START = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_START_B = re.compile(rb"^# aider chat started at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_SR_START = re.compile(r"^<{5,9} SEARCH\s*$")
_SR_MID = re.compile(r"^={5,9}\s*$")
_SR_END = re.compile(r"^>{5,9} REPLACE\s*$")
_NUM = r"[\d.,]+[kKmM]?"
_TOKENS = re.compile(rf"^Tokens: ({_NUM}) sent(?:, ({_NUM}) cache write)?(?:, ({_NUM}) (?:cache hit|cached))?, ({_NUM}) received\."
                     r"(?: Cost: \$([\d.]+) (?:message|request), \$([\d.]+) session[.,])?")
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+) with (?:\S*\s)?(\S+) edit format")
_VERSION = re.compile(r"^Aider v(\S+)")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_NOT_APPLIED = re.compile(r"^Did not apply edit to (.+?) \(--dry-run\)\s*$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.*?)\s*$")
_FAILED_HEAD = re.compile(r"^# \d+ SEARCH/REPLACE blocks? failed to match!")
_FAILED_END = re.compile(r"^Just reply with fixed versions? of the blocks? above")
_OTHERS_OK = re.compile(r"^# The other \d+ SEARCH/REPLACE blocks? w(?:ere|as) applied successfully")
_PATHLIKE = re.compile(r"^[\w.~/\\+-]*[\w-]\.[\w+-]{1,12}$|^[\w.~+-]*/[\w./~+-]+$")
_RUN = re.compile(r"^(?:/run|/test|!)\s*(.+)$", re.S)
_THINK = re.compile(r"^\s*►\s*\*\*THINKING\*\*\s*$")
_ANSWER = re.compile(r"^\s*►\s*\*\*ANSWER\*\*\s*$")
_USER_BREAK = re.compile(r"^#### .*\S  \r?$", re.M)
_INPUT_TS = re.compile(r"^# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s*$")


def detect_line(obj) -> bool:  # a Markdown transcript: no JSON line is one
    return False


_QUOTED_B = re.compile(rb"^>(?: .*)?  $")  # Aider's output: quoted, with a Markdown line break


def detect_text(lines: list[bytes]) -> bool:
    """The first lines of the file: an Aider launch header among them, or (a history whose head
    was cut, as Aider's own test fixture is) lines of Aider's quoted output, each ending in a
    Markdown line break."""
    if any(_START_B.match(x.strip()) for x in lines[:3]):
        return True
    return len(lines) >= 6 and sum(1 for x in lines if _QUOTED_B.match(x.rstrip(b"\r"))) >= 6


@dataclass(slots=True)
class _Block:
    kind: str  # start | user | tool | assistant
    line: int
    lines: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Edit:
    kind: str  # "sr" (SEARCH / REPLACE) | "whole"
    path: str
    old: str
    new: str
    line: int


def _blocks(text: str) -> list[_Block]:
    """The transcript cut into launches, user inputs, Aider's output and the model's replies."""
    out: list[_Block] = []
    cur: _Block | None = None
    fence: str | None = None  # inside a fenced block of a reply: its marker
    failing = False  # inside Aider's "failed to match" report (not quoted past its first line)
    blank = True
    strict = _USER_BREAK.search(text) is not None
    for no, raw in enumerate(text.split("\n"), 1):
        s = raw.rstrip("\r")
        m = _START.match(s)
        if m:
            cur, fence, failing = _Block("start", no, [m.group(1)]), None, False
            out.append(cur)
            blank = False
            continue
        if failing and cur is not None and cur.kind == "tool":
            if s.startswith("> ") or s.startswith("#### "):
                failing = False
            else:
                cur.lines.append(s)
                if _FAILED_END.match(s):
                    failing = False
                continue
        if fence is not None and cur is not None and cur.kind == "assistant":
            if not s.startswith("> Tokens: "):
                cur.lines.append(s)
                if s.strip().startswith(fence[0] * len(fence)) and not s.strip().strip(fence[0]):
                    fence = None
                continue
            fence = None  # the reply was cut off inside a fence: Aider's report follows
        body = s.rstrip()
        # what the user typed: Aider ends each such line with a Markdown line break (two spaces); a
        # reply's own "#### heading" has none (where the file kept its trailing blanks at all)
        if body.startswith("####") and (len(body) == 4 or body[4] == " ") and (
                s.endswith("  ") or (not strict and (cur is None or cur.kind != "assistant"))):
            line = body[5:]
            if cur is not None and cur.kind == "user" and not blank:
                cur.lines.append(line)
            else:
                cur = _Block("user", no, [line])
                out.append(cur)
            blank = False
            continue
        if body == ">" or s.startswith("> "):
            line = body[2:]
            if cur is None or cur.kind != "tool" or (blank and cur.kind != "tool"):
                cur = _Block("tool", no, [])
                out.append(cur)
            cur.lines.append(line)
            if _FAILED_HEAD.match(line):
                failing = True
            blank = False
            continue
        if not body:
            if cur is not None and cur.kind == "assistant":
                cur.lines.append("")
            blank = True
            continue
        if cur is not None and cur.kind in ("tool", "user") and not blank:
            cur.lines.append(s)  # the unquoted lines of a multi-line output
            continue
        if cur is None or cur.kind != "assistant":
            cur = _Block("assistant", no, [])
            out.append(cur)
        cur.lines.append(s)
        fm = _FENCE.match(s)
        if fm:
            fence = fm.group(1)
        blank = False
    for b in out:
        while b.kind == "assistant" and b.lines and not b.lines[-1].strip():
            b.lines.pop()
    return out


def _tokens(v: str | None) -> int | None:
    if not v:
        return None
    v = v.replace(",", "")
    mult = 1
    if v[-1] in "kK":
        v, mult = v[:-1], 1000
    elif v[-1] in "mM":
        v, mult = v[:-1], 1_000_000
    try:
        n = float(v) * mult
    except ValueError:
        return None
    return int(n) if 0 <= n < 1e15 else None


def _number(v: str) -> float | None:
    try:
        n = float(v)
    except ValueError:
        return None
    return n if n == n and abs(n) < 1e15 else None


def _path_of(line: str) -> str | None:
    s = line.strip().strip("*`#:").strip()
    return s if s and len(s) <= 300 and _PATHLIKE.match(s) else None


def _edits(lines: list[str], first: int, whole: bool) -> tuple[list[_Edit], int]:
    """The SEARCH / REPLACE blocks of a reply (and, in the whole format, its whole files); the
    number of blocks left open (a reply cut off)."""
    out: list[_Edit] = []
    open_blocks = 0
    last_path: str | None = None
    i, n = 0, len(lines)
    while i < n:
        s = lines[i]
        if _SR_START.match(s.strip()):
            path = None
            for j in range(i - 1, max(-1, i - 4), -1):
                t = lines[j].strip()
                if not t or _FENCE.match(t):
                    continue
                path = _path_of(t)
                break
            path = path or last_path
            old: list[str] = []
            new: list[str] = []
            k, state = i + 1, 1
            while k < n:
                t = lines[k]
                if state == 1 and _SR_MID.match(t.strip()):
                    state = 2
                elif _SR_END.match(t.strip()):
                    break
                elif _SR_START.match(t.strip()):  # another block opens: this one has no end
                    k -= 1
                    break
                elif state == 1:
                    old.append(t)
                else:
                    new.append(t)
                k += 1
            if k >= n or state == 1 or _SR_START.match(lines[k].strip()):
                open_blocks += 1  # cut off, or no ======= between SEARCH and REPLACE: Aider applies none
                i = k + 1
                continue
            if path:
                out.append(_Edit("sr", path, "\n".join(old), "\n".join(new), first + i))
                last_path = path
            i = k + 1
            continue
        fm = _FENCE.match(s)
        if fm:
            k = i + 1
            while k < n and not (lines[k].strip().startswith(fm.group(1)) and not lines[k].strip().strip(fm.group(1)[0])):
                k += 1
            body = lines[i + 1:k]
            if whole and i > 0 and not any(_SR_START.match(x.strip()) for x in body):
                path = _path_of(lines[i - 1]) if lines[i - 1].strip() else None
                if path and k < n:
                    out.append(_Edit("whole", path, "", "\n".join(body) + "\n", first + i))
            if any(_SR_START.match(x.strip()) for x in body):
                i += 1  # the blocks inside (diff-fenced: the file name inside the fence)
                continue
            i = k + 1
            continue
        i += 1
    return out, open_blocks


def _rstripped(text: str) -> str:
    return "\n".join(x.rstrip() for x in text.split("\n"))


def _same_path(a: str, b: str) -> bool:
    a, b = a.replace("\\", "/").lstrip("./"), b.replace("\\", "/").lstrip("./")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _input_history(path: str) -> list[tuple[int, str]]:
    """(time, text) of each prompt in ``.aider.input.history`` beside the chat history."""
    p = os.path.join(os.path.dirname(path) or ".", INPUT_HISTORY)
    try:
        if not os.path.isfile(p) or os.path.getsize(p) > _MAX_BYTES:
            return []
        with open(p, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    out: list[tuple[int, str]] = []
    ts: int | None = None
    cur: list[str] = []
    for ln in text.split("\n"):
        m = _INPUT_TS.match(ln.rstrip("\r"))
        if m:
            if ts is not None:
                out.append((ts, "\n".join(cur).strip()))
            ts, cur = iso_ms(m.group(1)), []
        elif ln.startswith("+") and ts is not None:
            cur.append(ln[1:].rstrip("\r"))
    if ts is not None:
        out.append((ts, "\n".join(cur).strip()))
    return out


class _Reader:
    def __init__(self, path: str, text: str) -> None:
        self.asm = Assembler(path, NAME)
        self.asm.llm_time_recorded = False  # the file times prompts only, not the model's replies
        self.asm.turn_times_set = True
        self.text = text
        self.path = path
        self.whole = False
        self.fmt: str | None = None
        self.models: list[str] = []
        self.reply_models: list[str] = []  # the model in use at each reply
        self.versions: list[str] = []
        self.pending: list[tuple[ToolCall, _Edit]] = []  # the last reply's edit calls, waiting for Aider's word
        self.reply: Turn | None = None
        self.run_call: ToolCall | None = None  # a /run call waiting for its output
        self.ts: int | None = None
        self.inputs: list[tuple[int, str]] = []
        self.k = 0
        self.timed = 0
        self.n_commits = 0
        self.n_open = 0
        self.udiff = 0
        self.cached = 0
        self.n_cached = 0
        self.n_fuzzy = 0

    # -- time of a prompt, from the input history
    def _time_of(self, text: str) -> int | None:
        want = text.strip()
        if not want or want == "<blank>":
            return None
        for j in range(self.k, min(len(self.inputs), self.k + 64)):
            ts, typed = self.inputs[j]
            if typed == want:
                self.k = j + 1
                return ts
        return None

    def read(self) -> Run:
        asm, run = self.asm, self.asm.run
        self.inputs = _input_history(self.path) if self.path and os.path.exists(self.path) else []
        blocks = _blocks(self.text)
        prev_user = ""
        seen = False
        for b in blocks:
            if b.kind == "start":
                seen = True
                self._settle()
                self.ts = iso_ms(b.lines[0])
                asm.ts(self.ts)
                asm.event(b.line, 0, 0, "aider:start", self.ts)
                self.reply = None
                self.whole, self.fmt = False, None
                continue
            if b.kind == "user":
                seen = True
                self._settle()
                text = "\n".join(b.lines).strip()
                ts = self._time_of(text)
                if ts is None and prev_user.startswith("/") and prev_user.split(None, 1)[1:] == [text]:
                    ts = self.ts  # "/code X" is echoed as "X" (one input)
                if ts is not None:
                    self.ts = ts
                    self.timed += 1
                    asm.ts(ts)
                asm.event(b.line, 0, 0, "message:user", ts, "user")
                prev_user = text
                self.reply = None
                m = _RUN.match(text)
                if m and not text.startswith("!!"):
                    c = asm.call(None, "run", {"command": m.group(1).strip()}, b.line, ts)
                    c.actor = "user"
                    self.run_call = c
                    continue
                if text and text != "<blank>":
                    if not text.startswith("/") and not run.problem.prompt:
                        run.problem.prompt = text
                    asm.message(b.line, "user" if not text.startswith("/") else "command", text)
                continue
            if b.kind == "assistant":
                self._settle()
                if not seen:  # before any launch or prompt: the head of a history cut short
                    run.messages.append((b.line, "aider", None, "\n".join(b.lines)))
                    continue
                self._reply(b)
                continue
            seen = True
            self._tool(b)
        self._settle()
        if self.models:  # the model that wrote the most replies (else the one named most)
            pool = self.reply_models or self.models
            run.model = max(dict.fromkeys(pool), key=pool.count)
            if len(set(self.models)) > 1:
                asm.note(0, "models: " + ", ".join(dict.fromkeys(self.models)))
        if self.versions:
            asm.note(0, "Aider " + ", ".join(dict.fromkeys(self.versions)))
        if self.inputs:
            asm.note(0, f"prompt times from {INPUT_HISTORY} beside the file ({self.timed} of the prompts matched); "
                        "times are the user's local clock (the files hold no zone)")
        else:
            asm.note(0, f"no {INPUT_HISTORY} beside the file: only each launch's time is known")
        if any(t.tokens_in is not None for t in run.turns):
            asm.note(0, "tokens as Aider printed them (rounded: 3.2k, 32k)")
        if self.n_cached:
            asm.note(0, f"Aider printed cached input beside 'sent' on {count(self.n_cached, 'call')} ({self.cached:,} tokens); "
                        "whether 'sent' holds them depends on the provider: not added")
        if self.n_fuzzy:
            asm.note(0, f"{count(self.n_fuzzy, 'applied SEARCH/REPLACE block')} whose SEARCH text is not in the file as the "
                        "trace knows it (Aider matches loosely: whitespace, '...' elisions): kept as partial versions")
        if self.n_open:
            asm.note(0, f"{count(self.n_open, 'SEARCH/REPLACE block')} not closed or without a ======= line (a reply cut "
                        "off, or malformed): not read as edits")
        if self.udiff:
            asm.note(0, f"{count(self.udiff, 'reply', 'replies')} in the udiff edit format: their unified diffs are not read as edits")
        return asm.finish()

    # -- the model's reply
    def _reply(self, b: _Block) -> None:
        asm = self.asm
        t = asm.turn(b.line, self.ts)
        asm.event(b.line, 0, 0, "message:assistant", self.ts, "agent", t.index)
        if self.models:
            self.reply_models.append(self.models[-1])
        lines = b.lines
        th = next((i for i, x in enumerate(lines) if _THINK.match(x)), None)
        an = next((i for i, x in enumerate(lines) if _ANSWER.match(x)), None)
        if th is not None and an is not None and th < an:
            asm.add_reasoning(t, "\n".join(lines[th + 1:an]).strip())
            lines = lines[:th] + lines[an + 1:]
        asm.add_text(t, "\n".join(lines).strip())
        asm.touch(t, b.line + len(b.lines) - 1)
        self.reply = t
        if self.fmt and "udiff" in self.fmt and any(x.startswith("```diff") for x in lines):
            self.udiff += 1
        edits, n_open = _edits(b.lines, b.line, self.whole)
        self.n_open += n_open
        for e in edits:
            if e.kind == "sr":
                c = asm.call(t, "edit", {"path": e.path, "old_string": e.old, "new_string": e.new}, e.line, self.ts)
            else:
                c = asm.call(t, "write", {"path": e.path, "content": e.new}, e.line, self.ts)
            self.pending.append((c, e))

    # -- Aider's own output
    def _tool(self, b: _Block) -> None:
        asm, run = self.asm, self.asm.run
        text = "\n".join(b.lines).strip()
        applied: list[str] = []
        not_applied: list[str] = []
        failed_text = ""
        others_ok = False
        for i, s in enumerate(b.lines):
            m = _TOKENS.match(s)
            if m:
                t = self.reply
                if t is None or t.tokens_in is not None:
                    # a model call with no reply written (interrupted before any output, or a
                    # command's own call): its tokens were spent all the same
                    t = self.asm.turn(b.line + i, self.ts)
                    self.asm.event(b.line + i, 0, 0, "aider:tokens", self.ts, "agent", t.index)
                    self.reply = t
                t.tokens_in = _tokens(m.group(1))
                if m.group(3):
                    self.cached += _tokens(m.group(3)) or 0
                    self.n_cached += 1
                t.tokens_out = _tokens(m.group(4))
                if m.group(5):
                    t.usd = _number(m.group(5))
                continue
            m = _MODEL.match(s)
            if m:
                self.models.append(m.group(1))
                self.fmt = m.group(2)
                self.whole = "whole" in self.fmt
                continue
            m = _VERSION.match(s)
            if m:
                self.versions.append(m.group(1))
                continue
            m = _APPLIED.match(s)
            if m:
                applied.append(m.group(1))
                continue
            m = _NOT_APPLIED.match(s)
            if m:
                not_applied.append(m.group(1))
                continue
            m = _COMMIT.match(s)
            if m:
                self.n_commits += 1
                asm.note(b.line + i, f"Aider commit {m.group(1)}: {m.group(2)[:200]}")
                continue
            if _FAILED_HEAD.match(s):
                failed_text = _rstripped("\n".join(b.lines[i:]))  # (quoted lines lose their trailing blanks)
            if _OTHERS_OK.match(s):
                others_ok = True
        asm.event(b.line, 0, 0, "aider:output", self.ts, None, self.reply.index if self.reply else None)
        if self.run_call is not None:
            asm.result(self.run_call, text, b.line, self.ts)
            self.run_call = None
        elif text:
            run.messages.append((b.line, "aider", None, text))
        if self.pending and (applied or not_applied or failed_text):
            self._settle(applied, not_applied, failed_text, others_ok, b.line)

    def _settle(self, applied: list[str] | None = None, not_applied: list[str] | None = None,
                failed_text: str = "", others_ok: bool = False, line: int = 0) -> None:
        """Give the last reply's edits what Aider said of them (nothing said: not applied)."""
        if self.run_call is not None:
            self.asm.result(self.run_call, "", self.run_call.line, None)
            self.run_call = None
        pending, self.pending = self.pending, []
        said = applied is not None
        for c, e in pending:
            if e.kind == "sr" and failed_text and e.old.strip() and _rstripped(e.old) in failed_text:
                self.asm.result(c, "failed to match: Aider did not apply this SEARCH/REPLACE block\n\n" + failed_text,
                                line, self.ts, status=FAILED)
                continue
            hit = next((a for a in applied or [] if _same_path(a, e.path)), None)
            if hit is not None or (said and others_ok and e.kind == "sr"):
                self.asm.result(c, f"Applied edit to {hit or e.path}", line, self.ts, status=OK)
                f = self.asm.files
                p = f.locate(e.path)
                if e.kind == "whole":
                    f.write(p, e.new, c, c.turn, c.line, "Aider whole-file edit")
                elif e.old.strip() == "" and p not in f.content:
                    f.write(p, e.new + ("\n" if e.new and not e.new.endswith("\n") else ""), c, c.turn, c.line,
                            "Aider SEARCH/REPLACE with an empty SEARCH (a new file)")
                elif e.old.strip() == "":
                    f.write(p, f.content[p] + e.new, c, c.turn, c.line, "Aider SEARCH/REPLACE appended")
                else:
                    if f.edit(p, e.old, e.new, c, c.turn, c.line, False, "Aider SEARCH/REPLACE"):
                        self.n_fuzzy += 1  # Aider said it applied it: not a defect of the file
                continue
            why = ("Aider did not apply it (--dry-run)" if any(_same_path(a, e.path) for a in not_applied or []) else
                   "not applied: Aider said nothing of this edit (the reply was cut off, interrupted, or in a "
                   "mode that does not edit)")
            self.asm.result(c, why, line or c.line, self.ts, status=FAILED)


def load(path: str, data: bytes | None = None) -> Run:
    if data is None:
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
    cut = len(data) > _MAX_BYTES
    text = data[:_MAX_BYTES].decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    run = _Reader(path, text).read()
    run.size_bytes = len(data)
    if cut:
        from ktui.trace.model import TraceProblem

        run.problems.append(TraceProblem(0, f"only the first {_MAX_BYTES >> 20} MiB are read", "", "warning"))
    return run
