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


class _RunCtx:
    def __init__(self, speedup, checks=(), findings=(), **timing):
        self.result = {"timing": dict({"speedup": speedup, "method_used": "cuda_event"}, **timing),
                       "checks": list(checks), "findings": list(findings)}
        self.ran = []

    def add_check(self, name, ok, detail):
        self.result["checks"].append({"name": name, "ok": ok, "detail": detail})


def _fake_battery(monkeypatch):
    import ktui.engine.probes as pk

    pk.load_all()
    ran = []

    def probe(name):
        def fn(ctx):
            ran.append(name)
            ctx.add_check(name, True, "ran")
        return fn

    monkeypatch.setattr(pk, "JUDGE_PROBES", [("speedy", probe("speedy")), ("plain", probe("plain"))])
    monkeypatch.setitem(pk.NEEDS, "speedy", {"device": "alone", "new_inputs": True, "fresh_process": False,
                                             "speed_only": True})
    monkeypatch.setitem(pk.NEEDS, "plain", {"device": "shared", "new_inputs": True, "fresh_process": False,
                                            "speed_only": False})
    return pk, ran


@pytest.mark.parametrize("timing,runs_speedy", [
    ({"speedup": 0.4}, False),                                   # clearly slower: nothing to earn
    ({"speedup": 0.95}, True),                                   # within noise of the reference
    ({"speedup": 3.0}, True),                                    # claims speed: the whole battery
    ({"speedup": 0.4, "kernel_invalid_samples": "negative"}, True),  # its timer lied: not measured
    ({"speedup": 0.4, "error": "timing failed"}, True),
    ({"speedup": None}, True),
    ({"speedup": True}, True),
    ({"speedup": 0.4, "method_used": "host"}, True),                 # CPU timing: as before
    ({"speedup": 0.4, "kernel": {"source": "judge wall clock"}}, True),  # ktui's clock replaced its time
    ({"speedup": 0.4, "checks": [{"name": "timer_cross_check", "ok": False}]}, True),  # already in doubt
    ({"speedup": 0.4, "findings": [{"class": "timer_disagrees"}]}, True),
])
def test_speed_only_probes_run_for_kernels_that_could_profit(monkeypatch, timing, runs_speedy):
    pk, ran = _fake_battery(monkeypatch)
    ctx = _RunCtx(**timing)
    pk.run_judge_probes(ctx)
    assert ("speedy" in ran) is runs_speedy and "plain" in ran
    speedy = [c for c in ctx.result["checks"] if c.get("name") == "speedy"]
    assert len(speedy) == 1
    if not runs_speedy:
        assert speedy[0]["ok"] is None and "not needed" in speedy[0]["detail"]  # neither a pass nor a flag
        assert ctx.result["probes"]["speedy"]["state"] == "not needed"


def test_which_probes_are_speed_only():
    """A deliberate list: a probe about correctness (stale results, inputs written, wrong sizes,
    reduced precision, fake outputs...) must run whatever the kernel's speed."""
    import ktui.engine.probes as pk

    pk.load_all()
    speed_only = {n for n, _ in pk.JUDGE_PROBES if pk.NEEDS[n].get("speed_only")}
    assert speed_only == {"repeat_vs_fresh_inputs", "physical_floor", "stream_order", "timed_outputs"}


def test_a_worker_lets_go_of_the_slots_the_judge_is_done_with():
    from ktui.engine import protocol
    from ktui.engine.roles import OPS, Server

    assert "drop" in OPS["reference"] and "drop" in OPS["candidate"] and "drop" in protocol.REPLY_SCHEMAS
    srv = Server("candidate", None, None)
    srv.slots = {"t": [1], "c1": [2], "c2": [3], "p-f0": [4], "p-f1": [5], "p-var0": [6], "p-var0#nudged": [7]}
    assert srv.op_drop({"prefix": "p-"}, [], []) == {"dropped": 4}
    assert srv.op_drop({"slots": ["c1", "c2", "c3"]}, [], []) == {"dropped": 2}
    assert set(srv.slots) == {"t"}  # the timed inputs stay
    assert srv.op_drop({"prefix": ""}, [], []) == {"dropped": 0}  # an empty prefix drops nothing


def test_every_probe_s_input_sets_are_let_go_after_it(monkeypatch):
    pk, ran = _fake_battery(monkeypatch)
    drops = []

    class _J:
        def drop_slots(self, slots=(), prefix=None):
            drops.append((tuple(slots), prefix, tuple(ran)))

    ctx = _RunCtx(speedup=2.0)
    ctx.judge = _J()
    pk.run_judge_probes(ctx)
    # after each probe that ran, before the next one starts
    assert drops == [((), "p-", ("speedy",)), ((), "p-", ("speedy", "plain"))]


def test_the_correctness_slots_are_dropped_after_timing_not_before():
    """The interleaved timing cycles over the correctness trials' slots (clockcheck._interleaved):
    the judge lets them go only once timing is done."""
    import inspect

    from ktui.engine import pipeline

    src = inspect.getsource(pipeline.Judge)
    timing_at = src.index('self.result["timing"] = self._timing(')
    drop_at = src.index('self.drop_slots([f"c{i}"')
    assert timing_at < drop_at
    from ktui.engine import correctness

    assert "drop_slots([f\"c" not in inspect.getsource(correctness)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "complex64", "bool", "int8",
                                   "int64", "float8_e4m3fn"])
def test_a_tensor_goes_into_its_memfd_in_its_own_dtype(dtype):
    """The device path of shm.export_tensor copies a flat tensor of its own dtype straight into
    the memfd (no host copy); the bytes read back are the tensor's."""
    torch = pytest.importorskip("torch")
    from ktui.engine import shm

    dt = getattr(torch, dtype, None)
    if dt is None:
        pytest.skip(f"torch has no {dtype}")
    src = (torch.randn(37, 5) * 3).to(dt) if dt is not torch.bool else torch.randn(37, 5) > 0
    nbytes = src.numel() * src.element_size()
    fd = shm.write_tensor_sealed(src.reshape(-1), nbytes)
    try:
        back = shm.import_tensor({"__tensor__": 0, "dtype": shm.dtype_name(dt), "shape": [37, 5], "nbytes": nbytes},
                                 [fd])
        assert back.dtype == dt and torch.equal(back.view(torch.uint8), src.view(torch.uint8))
    finally:
        shm.close_fds([fd])


def test_inputs_are_drawn_on_the_judged_device_and_fall_back_when_they_cannot_be():
    """make_inputs_on: get_inputs runs with the device as torch's default (KernelBench's
    torch.randn draws on the GPU, not seconds of CPU an input set), the same seed giving the
    same values; one that cannot run that way runs as written. The meta device stands in for a
    GPU here (factories follow the default device the same way)."""
    torch = pytest.importorskip("torch")
    from ktui.engine.compare import make_inputs_on
    from ktui.engine.errors import guarded

    def plain():
        return [torch.randn(4, 8), torch.randint(0, 5, (3,))]

    meta = torch.device("meta")
    made = make_inputs_on(meta, 7, plain, "correctness", guarded)
    assert all(t.device.type == "meta" for t in made)

    def needs_host_values():  # reads values back: cannot be made on the device as the default
        n = int(torch.randint(2, 5, (1,)).item())
        return [torch.randn(n, 3)]

    made = make_inputs_on(meta, 7, needs_host_values, "correctness", guarded)
    assert made[0].device.type == "cpu"
    again = make_inputs_on(meta, 7, needs_host_values, "correctness", guarded)
    assert torch.equal(made[0], again[0])  # the fallback starts from the same seed
    on_cpu = make_inputs_on(torch.device("cpu"), 7, plain, "correctness", guarded)
    assert torch.equal(on_cpu[0], make_inputs_on(torch.device("cpu"), 7, plain, "correctness", guarded)[0])
