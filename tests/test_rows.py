"""``run.messages`` and ``run.notes`` are kept by column (:mod:`ktui.trace.rows`, issue 25) and
behave as the lists of tuples they replace: the same operations on a list and on a ``Rows``
give the same contents, results and errors, odd values included (a row that does not fit the
columns turns the container into a plain list, nothing changed)."""

from __future__ import annotations

import copy
import pickle
import random
import sys
import tracemalloc

import pytest

from ktui.trace import rows as R
from ktui.trace.model import Run

ODD = [(True, "user", None, "bool line"), (1.5, "user", None, "float line"), (2**70, "k", None, "big"),
       (3, 7, None, "int kind"), (4, "k", b"actor", "bytes actor"), (5, "k", None), [6, "k", None, "list"],
       (7, "k", "a", None), (8, "k", "a", {"not": "text"})]


def _row(rng: random.Random, odd: bool) -> tuple:
    if odd and rng.random() < 0.05:
        return rng.choice(ODD)  # type: ignore[return-value]
    return (rng.randrange(-5, 10**12), rng.choice(["user_message", "system", "message:tool"]),
            rng.choice([None, "agent", "user"]), rng.choice(["", "hi", "x" * 300, "é\u202e"]))


@pytest.mark.parametrize("seed", range(12))
def test_rows_behave_as_a_list(seed):
    rng = random.Random(seed)
    odd = seed % 2 == 1
    ref: list = []
    got = R.messages()
    for _ in range(400):
        op = rng.random()
        row = _row(rng, odd)
        if op < 0.5:
            ref.append(row)
            got.append(row)
        elif op < 0.6:
            i = rng.randrange(-3, len(ref) + 3)
            ref.insert(i, row)
            got.insert(i, row)
        elif op < 0.7 and ref:
            i = rng.randrange(-len(ref), len(ref))
            ref[i] = row
            got[i] = row
        elif op < 0.75 and ref:
            i = rng.randrange(-len(ref), len(ref))
            del ref[i]
            del got[i]
        elif op < 0.8:
            more = [_row(rng, odd) for _ in range(rng.randrange(4))]
            ref.extend(more)
            got.extend(more)
        else:
            a, b = sorted(rng.randrange(-len(ref) - 2, len(ref) + 2) for _ in range(2))
            assert got[a:b] == ref[a:b]
            assert got[a:b:2] == ref[a:b:2]
        assert len(got) == len(ref) and got == ref and list(got) == ref
    for i in (-len(ref) - 1, len(ref)):
        with pytest.raises(IndexError):
            ref[i]
        with pytest.raises(IndexError):
            got[i]
    assert [type(v) for r in got for v in r] == [type(v) for r in ref for v in r]  # True stays True, 1.0 stays 1.0
    assert copy.deepcopy(got) == ref and pickle.loads(pickle.dumps(got)) == ref and bool(got) == bool(ref)
    assert repr(got) == repr(ref)


def test_an_odd_row_keeps_its_values():
    got = R.notes([(1, "a")])
    got.append((True, "b"))
    got.append((2, "c"))
    assert list(got) == [(1, "a"), (True, "b"), (2, "c")] and got[1][0] is True


def test_a_run_keeps_its_messages_by_column():
    """Counted: 100,000 messages cost under a third of the list of tuples they replace."""
    texts = ["hello", "world", "é"]

    def held(make):
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            box = make()
            for i in range(100_000):
                box.append((10**6 + i, sys.intern("user_message"), sys.intern("user"), texts[i % 3]))
            return tracemalloc.get_traced_memory()[0] - before, box
        finally:
            tracemalloc.stop()

    as_rows, box = held(lambda: Run("x").messages)
    as_list, plain = held(list)
    assert type(box) is R.Rows and box == plain
    assert as_rows < as_list / 3, (as_rows, as_list)


def test_a_result_that_does_not_fit_the_columns_is_kept_whole():
    """ResultTable keeps what fits its columns and says False for the rest (the builder then keeps
    a ToolResult object); what it keeps comes back equal, None times and bools included."""
    from ktui.trace.model import ResultTable

    t = ResultTable(src=None)
    assert t.put(5, 12, None, "ok", False, "done", None)
    assert t.put(2, 7, 2**62, "failed", True, None, ["case 1: nan"])
    for bad in ((3, 1.5, 1, "ok", False), (3, 1, 1.5, "ok", False), (3, 1, 1, None, False), (3, 1, 1, "ok", 1),
                (3, -1, 1, "ok", False), (-1, 1, 1, "ok", False), (3, 1, -(2**63), "ok", False)):
        assert not t.put(*bad), bad
    a, b = t.get(5, "compile_kernel"), t.get(2, "run_correctness")
    assert (a.line, a.ts_ms, a.status, a.is_error, a._brief, a._case_errors, a._call) == (
        12, None, "ok", False, "done", None, "compile_kernel")
    assert (b.line, b.ts_ms, b.status, b.is_error, b._brief, b.case_errors) == (7, 2**62, "failed", True, None,
                                                                                ["case 1: nan"])
    assert type(b.is_error) is bool and t.status(5) == "ok" and t.ts_ms(2) == 2**62


def test_add_message_is_append():
    """The builder's add_message gives what append of the tuple gives, odd values included."""
    a, b = R.messages(), R.messages()
    rows = [(1, "user_message", "u", "hi"), (2, "assistant_message", None, "x" * 70), (True, "k", None, "bool"),
            (4, "k", 5, "int actor"), (5, "k", "a", None)]
    for line, kind, actor, text in rows:
        a.add_message(line, kind, actor, text)  # type: ignore[arg-type]
        b.append((line, kind, actor, text))
    assert a == b == rows and a[2][0] is True and a._plain is not None


def test_add_note_is_append():
    a, b = R.notes(), R.notes()
    for line, text in [(1, "ensemble: backend=mock"), (2**70, "big line"), (3, "after")]:
        a.add_note(line, text)
        b.append((line, text))
    assert a == b and a[1][0] == 2**70 and a._plain is not None


def test_message_adder_is_append_before_and_after_the_rows_turn_plain():
    """The builder's bound adder (``Rows.message_adder``) appends as ``append`` does, also once
    an odd row turned the container into a plain list (its bound columns are gone then)."""
    m, ref = R.messages(), []
    add = m.message_adder()
    rows = [(1, "user_message", None, "a"), (2, "assistant_message", "agent", "b"), (3, "x", 5, "odd actor"),
            (4, "assistant_message", "agent", "c"), (2**70, "k", None, "big line")]
    for row in rows:
        add(*row)
        ref.append(row)
        assert list(m) == ref
    assert m._plain is not None and m == ref
