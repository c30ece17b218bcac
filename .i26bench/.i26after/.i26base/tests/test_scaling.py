"""No quadratic step in loading a trace, building its view or moving between its turns.

Counted in Python steps (tests/opcount.py), never timed: a trace of 100,000 turns is loaded once,
then the app's first screen and a few hundred key moves are each held to a budget that grows
with what they show, not with the run; loading and building the whole view are held to grow in
proportion to the trace (8x the turns: well under 64x the steps).
"""

from __future__ import annotations

import orjson
import pytest

from ktui.trace.reader import load_bytes
from ktui.tui.screens.replay import BAD, latest_kernel_by_turn, neighbour_failed_turn
from ktui.tui.widgets.documents import ViewOptions, turn_document
from ktui.tui.widgets.header import header_text
from ktui.view.build import build_view
from tests.opcount import OverBudget, Steps, count

BIG = 100_000


def trace(turns: int, *, answers_every: int = 0, actors: int = 1) -> bytes:
    """``turns`` turns: an assistant message, a call, its result and a user message each; a new
    kernel every 10th turn, the first kernel re-sent every other turn (a version used in half
    of the run's turns), every 7th result failed, a fenced final-answer block every
    ``answers_every`` turns, ``actors`` agents taking turns in an interleaved order."""
    out: list[bytes] = []
    tick = 0

    def ev(kind: str, actor: str, **p) -> None:
        nonlocal tick
        tick += 1
        out.append(orjson.dumps({"tick": tick, "ts_ms": 1_000 + tick, "actor": actor,
                                 "payload": {"kind": kind, **p}}))

    ev("user_message", "user", text="Begin.")
    first = "__global__ void k0() {}\n"
    for t in range(turns):
        agent = f"agent{t % actors}"
        text = f"step {t}"
        if answers_every and t % answers_every == 0:
            text += f"\n```python\nclass ModelNew:  # answer {t}\n    pass\n```\n"
        ev("assistant_message", agent, text=text)
        if t % 2 == 0:
            args = {"kernel_code": f"__global__ void k{t // 10}() {{}}\n"}
        else:
            args = {"kernel_code": first}
        name = "compile_kernel" if t % 2 == 0 else "run_correctness"
        ev("tool_call", agent, name=name, id=f"c{t}", args=args)
        ev("tool_result", agent, name=name, id=f"c{t}", result={"ok": t % 7 != 3, "summary": "done"})
        ev("user_message", "user", text=f"next {t}")
    return b"\n".join(out) + b"\n"


@pytest.fixture(scope="module")
def big_run():
    run = load_bytes(trace(BIG), "big.jsonl")
    assert len(run.turns) == BIG
    return run


def _shown_steps(run, i: int, opts: ViewOptions) -> int:
    """What one key costs the screen: the kernel to select and the turn's document."""
    with Steps(budget=KEY_BUDGET, what=f"moving to turn {i}") as s:
        latest_kernel_by_turn(run, i)
        turn_document(run, run.turns[i], opts)
    return s.n


KEY_BUDGET = 20_000  # steps for one key on a turn of four small events (about 2,000 are used)


def test_first_screen_and_keys_do_not_walk_the_run(big_run):
    run = big_run
    n = len(run.turns) + len(run.messages) + len(run.calls) + len(run.kernels)
    # the first screen may index the run once: linear in its size
    with Steps(budget=40 * n, what="the first screen") as s:
        header_text(run)
        turn_document(run, run.turns[0], ViewOptions())
        latest_kernel_by_turn(run, 0)
        neighbour_failed_turn(run, 0, 1)
    first = s.n
    assert first > 0
    # then every move costs what the turn shows, wherever it is in the run
    opts = ViewOptions()
    steps = [_shown_steps(run, i, opts) for i in [*range(1, 100), *range(BIG - 100, BIG), *range(0, BIG, 997)]]
    assert max(steps) <= KEY_BUDGET
    # next / previous failed turn: a bisection
    at = 0
    with Steps(budget=200 * 100, what="100 x next failed turn"):
        for _ in range(100):
            at = neighbour_failed_turn(run, at, 1)
    assert run.turns[at].status in BAD and at > 0
    with Steps(budget=200 * 100, what="100 x previous failed turn"):
        for _ in range(100):
            back = neighbour_failed_turn(run, BIG - 1, -1)
    assert back is not None and run.turns[back].status in BAD


def test_the_budget_catches_a_walk_over_the_turns(big_run):
    """The counter itself: one walk over the run's calls in ktui's code (what the old
    messages_by_turn did per message, on every key) goes over a key's budget at once."""
    run = big_run
    with pytest.raises(OverBudget), Steps(budget=KEY_BUDGET, what="a walk"):
        run.agent_calls  # noqa: B018 - a list comprehension over every call


def _ratio(make, small: int, big: int) -> float:
    a = count(make, small)[1]
    b = count(make, big)[1]
    return b / a


@pytest.mark.parametrize("actors", [1, 3])
def test_loading_grows_linearly(actors):
    """8x the turns (with a final answer in a fenced block in every turn, each a version to
    match against every earlier one): at most 8x the steps; a quadratic step makes it nearer 64x."""
    data = {n: trace(n, answers_every=1, actors=actors) for n in (400, 3200)}
    r = _ratio(lambda n: load_bytes(data[n]), 400, 3200)
    assert r < 10, r


def test_building_the_whole_view_grows_linearly():
    runs = {n: load_bytes(trace(n, actors=2)) for n in (250, 2000)}
    r = _ratio(lambda n: build_view(runs[n]), 250, 2000)
    assert r < 10, r


def test_kernel_version_turns_once_each_in_order():
    run = load_bytes(trace(40))
    v1 = run.kernel(1)
    want: list[int] = []
    for u in v1.uses:
        if u.turn is not None and u.turn not in want:
            want.append(u.turn)
    assert v1.turns == want == [*range(10), *range(11, 40, 2)]  # turns 0-9 sent it, then every odd one


def test_turn_of_line_is_the_first_spanning_turn():
    """Overlapping turns of two actors: the lowest turn index that spans the line, as a walk
    over the turns finds it (checked on every line of the file)."""
    run = load_bytes(trace(60, actors=3))
    last = max(t.last_line for t in run.turns)
    for line in range(0, last + 3):
        want = next((t.index for t in run.turns if t.first_line <= line <= t.last_line), None)
        assert run.turn_of_line(line) == want, line
