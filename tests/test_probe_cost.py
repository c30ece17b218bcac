"""What a probe costs: probes that only run or time the kernel on new inputs ask the reference for
the inputs and nothing more (no reference forward, no outputs through a memfd), and the
repeat-vs-fresh timing probe makes 2k + 1 input sets, not 21, all before anything is timed. The
probe still names a kernel that reuses earlier results and clears one that does not (H200 run of
2026-12-05: this probe alone was 114 s of 218 s of probe time over 10 real kernels)."""

from __future__ import annotations

import contextlib

import pytest

from ktui.engine.probes import basic


class _Held:
    def __init__(self, slot):
        self.slot = slot


class _Judge:
    def __init__(self):
        self.released = []

    def release(self, *hs):
        self.released.extend(hs)


class _Candidate:
    def __init__(self, log, caches):
        self.log, self.caches, self.seen = log, caches, set()

    def call(self, op, args, fds=None):
        self.log.append((op, args.get("slot") or tuple(args.get("slots") or ())))
        if op == "forward":
            self.seen.add(args["slot"])
            return {}, []
        assert op == "time"
        (slot,) = args["slots"]
        us = 1.0 if (self.caches and slot in self.seen) else 100.0
        self.seen.add(slot)
        return {"samples": [], "stats": {"median_us": us}}, []


class _Ctx:
    def __init__(self, caches):
        self.log, self.checks, self.asked = [], {}, []
        self.judge = _Judge()
        self.candidate = _Candidate(self.log, caches)
        self.input_seed = 7
        self.result = {"timing": {"kernel": {"median_us": 100.0}}}

        class _Job:
            trials, method = 100, "cuda_event"
        self.job = _Job()

    def trial(self, i, n, what):
        pass

    def candidate_inputs(self, seed, slot, outputs=True):
        self.asked.append((seed, slot, outputs))
        self.log.append(("put_inputs", slot))
        return _Held(slot), (None if not outputs else object())

    def hold(self, value, fds):
        return None

    @contextlib.contextmanager
    def alone(self, what):
        yield

    def add_check(self, name, ok, detail):
        self.checks[name] = (ok, detail)


@pytest.mark.parametrize("caches", [False, True])
def test_repeat_vs_fresh_asks_for_inputs_only_and_still_judges(caches):
    ctx = _Ctx(caches)
    basic.repeat_vs_fresh_inputs(ctx)
    ok, detail = ctx.checks["repeat_vs_fresh_inputs"]
    assert ok is (not caches), detail
    k = basic.REPEAT_FRESH_K
    assert len(ctx.asked) == 2 * k + 1 and k <= 5
    assert all(outputs is False for _s, _slot, outputs in ctx.asked), "a timing probe asked for reference outputs"
    assert len({seed for seed, _slot, _o in ctx.asked}) == 2 * k + 1, "fresh inputs must be distinct"
    assert len(ctx.judge.released) == 2 * k + 1, "the judge kept its copies of inputs only the kernel needs"
    # every input set is in the candidate before the first timed call: a confirming round cannot be told apart
    first_time = next(i for i, (op, _s) in enumerate(ctx.log) if op == "time")
    assert all(op != "put_inputs" for op, _s in ctx.log[first_time:])
    # a hit is confirmed by a second round on other fresh slots; a clean first round ends it
    timed = [s for op, s in ctx.log if op == "time"]
    assert len(timed) == (4 * k if caches else 2 * k)


def test_probes_that_ignore_the_reference_output_do_not_ask_for_it():
    """Every probe module's calls that throw the reference outputs away ask for none."""
    import ast
    import pathlib

    import ktui.engine.probes as pk

    bad = []
    for path in sorted(pathlib.Path(pk.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            fn = node.value.func
            if not (isinstance(fn, ast.Attribute) and fn.attr in ("reference_io", "candidate_inputs")):
                continue
            tgt = node.targets[0]
            second = tgt.elts[1] if isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2 else None
            unused = isinstance(second, ast.Name) and second.id.startswith("_")
            asks_none = any(kw.arg == "outputs" and isinstance(kw.value, ast.Constant) and kw.value.value is False
                            for kw in node.value.keywords)
            if unused and not asks_none:
                bad.append(f"{path.name}:{node.lineno}")
    assert not bad, f"reference outputs computed and thrown away at {bad}"
