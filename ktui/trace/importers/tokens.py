"""Token counts as providers give them (split out of common.py, which re-exports it: its 600-line
limit)."""

from __future__ import annotations


def reasoning_apart(tr: int | None, total: int | None, counted: tuple[int, ...], inside_by_default: bool) -> int | None:
    """The reasoning tokens to count beside a call's output tokens, or None where they are already
    inside them. ``counted``: what ``total`` would be without reasoning apart (input plus output;
    with and without the cached input, where the provider may count it apart). OpenAI's and
    Anthropic's output counts include the reasoning (``total = input + output``); Gemini's do not
    (``total = input + output + reasoning``). The total decides where it is given, else
    ``inside_by_default``."""
    if not tr:
        return None
    if total is not None:
        if total in counted:
            return None
        if any(total == c + tr for c in counted):
            return tr
    return None if inside_by_default else tr
