"""Tool calls written as text: OpenHands' prompt format for models without native function calling.

OpenHands (its ``fn_call_converter``) asks such models to write a call as::

    <function=execute_bash>
    <parameter=command>
    pwd && ls
    </parameter>
    </function>

and Harbor's OpenHands converter keeps that text as the ATIF step's ``message``, with no
``tool_calls`` (``tests/golden/openhands/hello-world.trajectory.no_function_calling.json`` of
Harbor): the calls, and any kernel they write, were missed. :func:`text_calls` reads them back.
The closing ``</function>`` may be missing (it is the model's stop sequence). Bounded: at most
:data:`MAX_CALLS` calls of a message of at most :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import re

MAX_CALLS = 32
MAX_TEXT = 1 << 20
_FUNC = re.compile(r"<function=([A-Za-z_][\w.\-]{0,80})>(.*?)(?:</function>|(?=<function=)|\Z)", re.S)
_PARAM = re.compile(r"<parameter=([A-Za-z_][\w\-]{0,80})>(.*?)</parameter>", re.S)


def _value(v: str) -> str:
    if v.startswith("\n"):
        v = v[1:]
    if v.endswith("\n"):
        v = v[:-1]
    return v


def text_calls(text: str) -> list[tuple[str, dict[str, str]]]:
    """(tool name, arguments) of every call written in ``text`` as ``<function=NAME>`` blocks."""
    if not isinstance(text, str) or "<function=" not in text:
        return []
    text = text[:MAX_TEXT]
    out: list[tuple[str, dict[str, str]]] = []
    for m in _FUNC.finditer(text):
        args: dict[str, str] = {}
        for p in _PARAM.finditer(m.group(2)):
            args.setdefault(p.group(1), _value(p.group(2)))
        out.append((m.group(1), args))
        if len(out) >= MAX_CALLS:
            break
    return out


__all__ = ["MAX_CALLS", "text_calls"]
