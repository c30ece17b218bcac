"""ktui.trace.diffing: pure difflib diffs (stats, unified rows, side-by-side rows, spans)."""

from __future__ import annotations

from ktui.trace.diffing import (
    ADDED,
    CHANGED,
    CONTEXT,
    DELETED,
    EQUAL,
    HUNK,
    INSERTED,
    REMOVED,
    diff_stats,
    intraline_spans,
    is_identical,
    split_rows,
    unified_lines,
    unified_text,
)

A = "a\nb\nint p = perm[j];\nc\n"
B = "a\nb\nint64_t p = perm[j];\nc\nd\n"


def test_stats():
    assert diff_stats(A, A) == (0, 0)
    assert diff_stats(A, B) == (2, 1)
    assert diff_stats(B, A) == (1, 2)
    assert diff_stats("", "x\ny") == (2, 0)
    assert diff_stats(None, None) == (0, 0)
    assert diff_stats("x", "x\n") == (0, 0)  # a final newline is not a difference
    assert is_identical("x\n", "x")


def test_intraline_spans_on_tokens():
    assert intraline_spans("int p = perm[j];", "int64_t p = perm[j];") == (((0, 3),), ((0, 7),))
    old, new = intraline_spans("verbose=True", "verbose=False")
    assert "verbose=True"[old[0][0]:old[0][1]] == "True"
    assert "verbose=False"[new[0][0]:new[0][1]] == "False"


def test_unified_lines():
    rows = unified_lines(A, B)
    kinds = [r.kind for r in rows]
    assert kinds == [HUNK, CONTEXT, CONTEXT, REMOVED, ADDED, CONTEXT, ADDED]
    rem = rows[3]
    add = rows[4]
    assert (rem.old_no, rem.new_no, add.old_no, add.new_no) == (3, None, None, 3)
    assert rem.text[slice(*rem.spans[0])] == "int"
    assert add.text[slice(*add.spans[0])] == "int64_t"
    assert rows[0].text == "@@ -1,4 +1,5 @@"
    assert unified_lines(A, A) == []


def test_unified_text_matches_diff_u():
    t = unified_text(A, B, "v1", "v2")
    assert t.splitlines()[:3] == ["--- v1", "+++ v2", "@@ -1,4 +1,5 @@"]
    assert "-int p = perm[j];" in t and "+int64_t p = perm[j];" in t and "+d" in t
    assert unified_text(A, A) == ""


def test_context_and_whole_file():
    a = "\n".join(str(i) for i in range(40))
    b = a.replace("\n20\n", "\nXX\n")
    rows = unified_lines(a, b, context=2)
    assert [r.kind for r in rows] == [HUNK, CONTEXT, CONTEXT, REMOVED, ADDED, CONTEXT, CONTEXT]
    whole = unified_lines(a, b, context=None)
    assert sum(r.kind == CONTEXT for r in whole) == 39


def test_split_rows():
    rows = split_rows(A, B)
    kinds = [r.kind for r in rows]
    assert kinds == [HUNK, EQUAL, EQUAL, CHANGED, EQUAL, INSERTED]
    ch = rows[3]
    assert (ch.left_no, ch.right_no) == (3, 3)
    assert ch.left[slice(*ch.left_spans[0])] == "int"
    ins = rows[-1]
    assert ins.left is None and ins.right == "d" and ins.right_no == 5
    rows = split_rows("x\ny\nz", "x\nz")
    assert [r.kind for r in rows] == [HUNK, EQUAL, DELETED, EQUAL]


def test_dissimilar_replacement_has_no_spans():
    rows = unified_lines("alpha beta\n", "0123456789 totally different\n")
    assert all(not r.spans for r in rows)
    srows = split_rows("alpha beta\n", "0123456789 totally different\n")
    assert srows[1].kind == CHANGED and not srows[1].left_spans


def test_big_inputs_are_fast():
    import time

    a = "\n".join(f"    x{i} = y[{i}] + z  # line {i}" for i in range(2000))
    b = a.replace("x1000 ", "w1000 ").replace("line 1500", "LINE 1500")
    t = time.perf_counter()
    assert diff_stats(a, b) == (2, 2)
    split_rows(a, b)
    unified_lines(a, b)
    assert time.perf_counter() - t < 2.0
