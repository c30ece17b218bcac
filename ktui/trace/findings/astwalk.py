"""``ast.walk`` for the static findings, without listing a node's children again on every walk.

The checks walk the same tree thousands of times (a subtree per function, per call, per name:
2,650 walks a kernel of the seed run), and ``ast.walk`` lists each node's children anew every
time (``ast.iter_child_nodes``: a ``getattr`` and an ``isinstance`` per field): 73 % of the time
of :func:`ktui.trace.findings.source_findings`, the bulk of a sweep's cold scan where every run
writes its own kernels. Inside :func:`children_kept` (one analysis), :func:`walk` keeps each
node's children the first time it lists them, and the list of a subtree's nodes the first time
it is walked (a consumer that stops early never sees the difference); the order is
``ast.walk``'s (breadth first, the fields' order). Outside it, :func:`walk` is ``ast.walk``. Per
thread: the app analyses in a worker.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

_local = threading.local()


def walk(node: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk(node)``: every node of the subtree, breadth first (inside :func:`children_kept`,
    a list kept for the node: a subtree is walked again and again)."""
    kept: dict[ast.AST, tuple[ast.AST, ...]] | None = getattr(_local, "children", None)
    if kept is None:
        return ast.walk(node)
    orders: dict[ast.AST, list[ast.AST]] = _local.orders
    got = orders.get(node)
    if got is None:
        got = [node]
        i = 0
        while i < len(got):  # breadth first: the list is its own queue
            n = got[i]
            ch = kept.get(n)
            if ch is None:
                ch = kept[n] = tuple(ast.iter_child_nodes(n))
            got.extend(ch)
            i += 1
        orders[node] = got
    return got


def children(node: ast.AST) -> tuple[ast.AST, ...]:
    """``tuple(ast.iter_child_nodes(node))``, kept like :func:`walk`'s."""
    kept: dict[ast.AST, tuple[ast.AST, ...]] | None = getattr(_local, "children", None)
    if kept is None:
        return tuple(ast.iter_child_nodes(node))
    ch = kept.get(node)
    if ch is None:
        ch = kept[node] = tuple(ast.iter_child_nodes(node))
    return ch


@contextmanager
def children_kept() -> Iterator[None]:
    """One analysis: the trees it parses are not changed while it runs (the checks only read
    them), so a node's children, once listed, are kept until it ends."""
    outer = getattr(_local, "children", None)
    if outer is not None:  # inside another: its lists go on
        yield
        return
    _local.children, _local.orders = {}, {}
    try:
        yield
    finally:
        _local.children = _local.orders = None
