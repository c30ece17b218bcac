"""What a Codex CLI tool output says (split out of codex_cli.py: its 600-line limit): its text,
status and exit code, from a plain string with an exit-code header, a JSON ``{output, metadata}``
string, an ``{content, success}`` object, or a code-mode cell's content items."""

from __future__ import annotations

import re
from typing import Any

from ktui.trace.importers.common import JSONError, as_int, as_str
from ktui.trace.model import FAILED, OK
from ktui.trace.notes import loads

# plain-text outputs: "Exit code: N\nWall time: ..." (0.6x shell), "Chunk ID: ..\nWall time: ..\nProcess
# exited with code N" (exec_command); Codex's own refusals (the command or patch never ran as asked)
_EXIT_HEADER = re.compile(r"(?:Exit code: (\d{1,9})\b|Chunk ID: [^\n]*\nWall time: [^\n]*\nProcess exited with code (\d{1,9})\b)")
_CODEX_REFUSED = re.compile(r"(?:failed in sandbox|execution error|apply_patch verification failed|"
                            r"unsupported call|failed to parse function arguments|"
                            r"(?:exec command|patch) rejected by user)", re.I)  # the user said no: it never ran


# code mode (0.14x): the ``exec`` tool runs a JavaScript cell whose output (a list of content items)
# starts "Script completed|failed|running with cell ID N\nWall time X seconds\nOutput:\n"; what the cell
# printed follows, often ``JSON.stringify`` of its ``tools.exec_command`` result(s)
_SCRIPT_HEADER = re.compile(r"Script (completed|failed|running with cell ID \S+)\s*\n"
                            r"(?:Wall time [\d.]+ seconds\s*\n)?(?:Output:\s*\n?)?")


def _items_text(items: list) -> str:
    """The text of an output given as content items (``input_text``, ``input_image``): the texts
    in order, an image as "[image]"."""
    parts: list[str] = []
    for b in items:
        if isinstance(b, str):
            t = b
        elif isinstance(b, dict) and isinstance(b.get("text"), str):
            t = b["text"]
        elif isinstance(b, dict) and "image" in str(b.get("type", "")):
            t = "[image]"
        else:
            continue
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")
        parts.append(t)
    return "".join(parts)


def _script_exit_code(body: str) -> int | None:
    """The exit code a code-mode cell printed: its output is one ``exec_command`` result
    (``{exit_code, output}``) or a list of them, as JSON; the first non-zero code, else 0. None when
    the cell printed anything else (its own text: no code to read)."""
    b = body.strip()
    if not b or b[0] not in "[{" or len(b) > (1 << 22):
        return None
    try:
        obj = loads(b)
    except JSONError:
        return None
    results = obj if isinstance(obj, list) else [obj]
    codes = []
    for r in results:
        if not (isinstance(r, dict) and "exit_code" in r and ("output" in r or "chunk_id" in r)):
            return None
        c = as_int(r.get("exit_code"))
        if c is None:
            return None
        codes.append(c)
    if not codes:
        return None
    return next((c for c in codes if c != 0), 0)


def _output(out: Any) -> tuple[str, str | None, int | None]:
    """An output's text, status and exit code: a string (plain, or with an exit-code header), a
    JSON string ``{output, metadata}``, an object ``{content, success}``, or a list of content items
    (a code-mode cell's output: its header says how the cell ended)."""
    meta = None
    if isinstance(out, list):
        out = _items_text(out)
    h = _SCRIPT_HEADER.match(out) if isinstance(out, str) else None
    if h is not None:
        how = h.group(1)
        if how == "failed":
            return out, FAILED, None
        if how.startswith("running"):
            return out, OK, None  # the cell goes on: a later ``wait`` call gets its end
        code = _script_exit_code(out[h.end():])
        return out, (None if code is None else OK if code == 0 else FAILED), code
    if isinstance(out, str) and out.startswith("{") and '"output"' in out[:200]:
        try:
            obj = loads(out)
        except JSONError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("output"), str):
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            out = obj["output"]
    if isinstance(out, dict):
        text = as_str(out.get("content")) or as_str(out.get("output")) or ""
        succ = out.get("success")
        return text, (OK if succ else FAILED) if isinstance(succ, bool) else None, None
    text = out if isinstance(out, str) else ("" if out is None else str(out))
    code = as_int(meta.get("exit_code")) if meta else None
    if meta is None:  # a plain-text output: its header says how the command ended
        m = _EXIT_HEADER.match(text)
        if m:
            code = int(m.group(1) or m.group(2))
        elif _CODEX_REFUSED.match(text):
            return text, FAILED, None
    status = None
    if code is not None:
        status = OK if code == 0 else FAILED
        from ktui.trace.importers.evidence import evidence

        ev = evidence(text)
        if ev is not None and ev.status != OK:
            status = ev.status
    return text, status, code
