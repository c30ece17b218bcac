"""The view model: one renderer-neutral description of a run, built once from a ``Run``.

Every view reads it: ``ktui show`` (Rich), the replay app's documents and header, search,
``ktui compare``, ``ktui runs`` and the HTML report. It holds only clean strings (every trace
string went through :func:`ktui.view.text.clean`, the one sanitizer) and style *roles*
(:mod:`ktui.view.roles`), never Rich styles, so renderers differ only in how they draw.

    from ktui.trace import load
    from ktui.view import build_view

    view = build_view(load("traces/popcorn_l1_p27_grok-4.3.jsonl"))
    view.header.outcome, view.header.failed_calls, view.flag_codes
    for turn in view.turns:
        for block in turn.blocks:
            block.kind, block.plain_lines(expanded=False)

The parts (all frozen dataclasses in :mod:`ktui.view.model`):

- :class:`RunView` -- ``header`` (:class:`HeaderView`: raw values such as ``outcome``, ``turns``,
  ``calls``, ``failed_calls``, ``tokens``, ``speedup``, their display texts, and ``facts``, the
  ordered label/text pairs ``show`` prints), ``flags`` (:class:`FlagView`), ``flag_codes``,
  ``problems``, ``metrics`` (:class:`MetricsView` -> groups -> :class:`MetricRow`), ``preamble``
  (system prompts, tool lists, messages before the first turn), ``turns`` (:class:`TurnView`),
  ``terminal`` (how the run ended) and ``kernels`` (:class:`KernelView`: versions, first turn
  and call, uses, the diff size against the previous version).
- :class:`TurnView` -- the title facts, a call overview (:class:`CallView`) and ``blocks``: the
  transcript of the turn in order (other actors' messages leading into it, reasoning, text, then
  per call its arguments, kernel code on first use, and its result, each once).
- :class:`Block` -- ``kind`` is one of ``heading`` / ``lines`` (styled :class:`Span` lines) or
  ``code`` / ``prose`` / ``output`` (clean ``text`` plus ``lang``, ``indent``, ``numbers``);
  ``fold > 0`` marks a long block shown folded to its first ``fold`` lines by default.
  :meth:`Block.plain_lines` is exactly the text a renderer shows (search runs over it).
- :class:`FlagView` -- ``code``, ``severity``, ``category`` (metric / kernel / harness / state /
  finding), ``message``, ``phrase``, ``kernel``, ``line``, ``turn`` (introduced at turn N),
  ``evidence`` (source lines).

One definition each: the outcome is ``Run.outcome``; failed calls and the flag set come from
:mod:`ktui.trace.facts` (the sweep index uses the same); numbers, times and durations are
formatted by :mod:`ktui.view.fmt` (which never raises, whatever the value).
"""

from ktui.view.build import build_view, cached_stats, lookup_stats, turn_view  # noqa: F401
from ktui.view.model import (  # noqa: F401
    CODE,
    HEADING,
    LINES,
    OUTPUT,
    PROSE,
    Block,
    CallView,
    Fact,
    FlagView,
    HeaderView,
    KernelView,
    Line,
    MetricGroup,
    MetricRow,
    MetricsView,
    RunView,
    Span,
    TerminalView,
    TurnView,
)
