"""Drawing the view model with Rich (``ktui show``, ``compare --print``; the app's documents use
the same span conversion). Roles become styles through :data:`ktui.view.roles.ROLE_STYLES`;
text is never parsed as markup."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from ktui.view import roles as R
from ktui.view.build import is_error_line
from ktui.view.model import CODE, HEADING, LINES, Block, Line

THEME = "ansi_dark"
FULL_HINT = "--full shows them"


def line_text(line: Line, base: str = "", end: str = "\n") -> Text:
    """One view line as a ``Text`` (spans styled by role)."""
    t = Text(end=end, style=base)
    for sp in line:
        t.append(sp.text, R.style(sp.role))
    return t


def block_lines(b: Block, expanded: bool = True, end: str = "\n") -> list[Text]:
    """A non-code block's lines as ``Text`` (folded unless ``expanded``)."""
    if b.kind in (HEADING, LINES):
        out = [line_text(x, end=end) for x in b.lines]
    else:
        base = R.style(b.role)
        err = R.style(R.OUTPUT_ERROR)
        out = [Text(s, style=err if (b.error_lines and is_error_line(s)) else base, end=end) for s in b.text_lines]
    if not expanded and b.folded_by_default:
        out = out[: b.fold] + [line_text(b.fold_line(FULL_HINT), end=end)]
    return out


def renderable(b: Block, expanded: bool = True) -> RenderableType:
    """A block as a Rich renderable."""
    if b.kind == HEADING:
        return Rule(line_text(b.lines[0]), align="left", style=R.RULE_STYLES.get(b.role, "grey50"), characters="─")
    if b.kind == CODE and b.lang:
        text = b.text
        if not expanded and b.folded_by_default:
            text = "\n".join(b.text_lines[: b.fold])
        body: RenderableType = Syntax(text, b.lang, theme=THEME, line_numbers=b.numbers, word_wrap=True)
        if not expanded and b.folded_by_default:
            body = Group(body, line_text(b.fold_line(FULL_HINT)))
    else:
        lines = block_lines(b, expanded)
        body = Group(*lines)
    return Padding(body, (0, 0, 0, b.indent)) if b.indent else body
