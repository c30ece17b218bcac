"""The reference's work, done once per problem (issue 23): its outputs on every judged and probe
input, its memory and launch count and its probe replies are computed for the first kernel of a
problem and answered from the judge's reply store for every other kernel of it, in a sweep and
across runs, unless anything they depend on changed (the reference source, the inputs, the seeds,
the device and environment, ktui's engine code). Only the judge reads and writes the store: a
candidate can neither see nor change it.

The unit tests drive ``SharedReference`` over a fake reference worker that counts the requests it
gets (no processes); the slow ones run the real judge on the CPU and count the requests the real
reference worker received, never seconds."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap

import pytest
from conftest import needs

torch_missing = needs("torch")


# ---- a fake reference worker ------------------------------------------------------------------------
class FakeReference:
    """The reference worker's ops on a model ``y = w * x + 1``, with real sealed memfds, counting
    every request (``ops``) and every evaluation of the model (``evals``)."""

    role = "reference"

    def __init__(self, w=2.0, input_noise=False):
        self.w = w
        self.slots = {}
        self.ops = {}
        self.evals = []
        self.input_noise = input_noise  # get_inputs not a function of the seed
        self._draw = 0

    def _inputs(self, seed, n=8):
        import torch

        g = torch.Generator().manual_seed(int(seed))
        x = torch.randn(n, generator=g)
        if self.input_noise:
            self._draw += 1
            x = x + self._draw
        return [x]

    def _fwd(self, slot, out):
        from ktui.engine import shm

        self.evals.append(slot)
        y = self.slots[slot][0] * self.w + 1.0
        return {"outputs": shm.encode_value(y, out), "types": ["torch.Tensor"], "overrides": [],
                "inputs_after": None}

    def call(self, op, args=None, fds=(), timeout=None, poll=0.1):
        from ktui.engine import shm

        args = args or {}
        self.ops[op] = self.ops.get(op, 0) + 1
        out: list = []
        if op == "make_inputs":
            slot = str(args["slot"])
            self.slots[slot] = self._inputs(args["seed"])
            enc = shm.encode_value(self.slots[slot], out)
            return {"inputs": enc, "forward": self._fwd(slot, out) if args.get("forward") else None}, out
        if op == "put_inputs":
            self.slots[str(args["slot"])] = [t.clone() for t in shm.decode_value(args["inputs"], list(fds))]
            return {"slot": 0}, []
        if op == "forward":
            if args.get("inputs") is not None:
                self.slots[str(args["slot"])] = [t.clone() for t in shm.decode_value(args["inputs"], list(fds))]
            return self._fwd(str(args["slot"]), out), out
        if op == "memory":
            self.evals.append("memory")
            return {"peak_mb": float(self.slots[str(args["slot"])][0].numel()), "delta_mb": 1.0, "reserved_mb": 2.0}, []
        if op == "launches":
            self.evals.append("launches")
            return {"launches": 3, "slot_sum": float(self.slots[str(args["slot"])][0].sum())}, []
        if op == "time":
            for s in args["slots"]:
                assert s in self.slots, f"timed a slot it does not hold: {s}"
            import torch

            return {"samples": shm.export_tensor(torch.ones(3, dtype=torch.float64), out),
                    "stats": {}, "method_used": "host", "batches": 1, "stopped": "cap", "seconds": 0.0}, out
        if op == "drop":
            for s in args.get("slots") or []:
                self.slots.pop(str(s), None)
            return {"dropped": 0}, []
        if op == "probe":
            name, a = args["name"], args.get("args") or {}
            if name == "perturb_params":
                self.w = 2.0 if a.get("restore") else 2.0 + float(a["seed"])
                return {"findings": [], "data": {"shapes": [[1]]}}, []
            if name == "forward64":
                self.evals.append("forward64")
                y = self.slots[str(a["slot"])][0].double() * self.w + 1.0
                return {"findings": [], "data": {"outputs": shm.encode_value(y, out), "dtypes": ["float64"]}}, out
            if name == "jitter_inputs":
                slot = str(a["slot"])
                self.slots[slot] = self._inputs(a["seed"], n=13)
                enc = shm.encode_value(self.slots[slot], out)
                return {"findings": [], "data": {"changed": "n: 8 -> 13", "inputs": enc,
                                                 "forward": self._fwd(slot, out)}}, out
        raise AssertionError(f"unexpected op {op}")


def _store(root, **parts):
    from ktui.engine.refshare import ReplyStore

    return ReplyStore(str(root), {"reference": "sha-of-ref", "init_seed": 42, "device": "cpu|here", **parts})


def _kernel(root, worker=None, **parts):
    """What one judge asks of the reference: correctness inputs and outputs, probe inputs changed
    by the judge, a float64 forward, inputs at another size then timed, memory, launches, a
    parameter change with a forward under it. Returns the values the judge got (decoded)."""
    from ktui.engine import shm
    from ktui.engine.refshare import SharedReference

    w = worker or FakeReference()
    ref = SharedReference(w, _store(root, **parts))
    got = []

    def take(reply, key=None):
        data, fds = reply
        try:
            return shm.decode_value(data if key is None else data[key], fds)
        finally:
            shm.close_fds(fds)

    for i, seed in enumerate((11, 12, 13), 1):
        data, fds = ref.call("make_inputs", {"seed": seed, "slot": f"c{i}", "forward": True, "trial": i})
        got.append([x.tolist() for x in shm.decode_value(data["inputs"], fds)])
        got.append(shm.decode_value(data["forward"]["outputs"], fds).tolist())
        shm.close_fds(fds)
    import torch

    mixed_fds: list = []
    enc = shm.encode_value([torch.arange(8.0)], mixed_fds)
    ref.call("put_inputs", {"slot": "p-mix", "inputs": enc}, mixed_fds)
    shm.close_fds(mixed_fds)
    got.append(take(ref.call("forward", {"slot": "p-mix"}), "outputs").tolist())
    data, fds = ref.call("make_inputs", {"seed": 21, "slot": "p-b", "forward": False})  # inputs only
    shm.close_fds(fds)
    got.append(take(ref.call("forward", {"slot": "p-b"}), "outputs").tolist())  # then the reference on them
    got.append(take(ref.call("probe", {"name": "forward64", "args": {"slot": "c1"}}))["data"]["dtypes"])
    data, fds = ref.call("probe", {"name": "jitter_inputs", "args": {"seed": 77, "slot": "p-jit"}})
    got.append(shm.decode_value(data["data"]["forward"]["outputs"], fds).tolist())
    shm.close_fds(fds)
    ref.call("time", {"slots": ["p-jit"]})  # a request the store never answers reads a replayed slot
    got.append(ref.call("memory", {"slot": "c1"})[0])
    got.append(ref.call("launches", {"slot": "c2"})[0])
    ref.call("probe", {"name": "perturb_params", "args": {"seed": 5}})
    data, fds = ref.call("make_inputs", {"seed": 11, "slot": "p-par", "forward": True})
    got.append(shm.decode_value(data["forward"]["outputs"], fds).tolist())
    shm.close_fds(fds)
    ref.call("probe", {"name": "perturb_params", "args": {"seed": 5, "restore": True}})
    ref.call("drop", {"slots": ["c1", "c2", "c3"]})
    ref.close()
    return got, w, ref


@torch_missing
def test_two_kernels_of_a_problem_one_evaluation_of_each_kind_a_rerun_none(tmp_path):
    first, w1, r1 = _kernel(tmp_path)
    kinds = {"make_inputs+forward": 4, "forward": 2, "probe:forward64": 1, "probe:jitter_inputs": 1,
             "memory": 1, "launches": 1}
    assert r1.summary()["live"] == kinds and r1.summary()["replayed"] == {}
    assert len(w1.evals) == 10  # 4 make_inputs forwards, 2 forwards, float64, jitter, memory, launches
    second, w2, r2 = _kernel(tmp_path)
    assert second == first  # every value the judge got is the same
    assert w2.evals == []  # the reference computed nothing
    assert r2.summary()["replayed"] == kinds and r2.summary()["live"] == {}
    # inputs are still made live (the candidate needs them, the reference holds them for its timing)
    assert w2.ops["make_inputs"] == 5 and w2.ops.get("forward", 0) == 0
    # the judge's put_inputs was never sent (its forward replayed); the replayed jitter slot was put
    # into the worker before the request that reads it (time) went to it
    assert w2.ops["put_inputs"] == 1 and "p-jit" in w2.slots and w2.slots["p-jit"][0].numel() == 13
    assert w2.ops["probe"] == 2  # the parameter change and its restore always go to the worker
    third, w3, _ = _kernel(tmp_path)  # a re-run: nothing again
    assert third == first and w3.evals == []


@torch_missing
def test_anything_a_reply_depends_on_computes_again(tmp_path, monkeypatch):
    from ktui.engine import refshare

    first, _, _ = _kernel(tmp_path)
    for parts in ({"reference": "another source"}, {"init_seed": 43}, {"device": "cuda:0|GPU-other"}):
        again, w, r = _kernel(tmp_path, **parts)
        assert len(w.evals) == 10 and r.summary()["replayed"] == {}, parts
    monkeypatch.setattr(refshare, "_code_digest", "another engine")  # ktui's code changed
    _, w, r = _kernel(tmp_path)
    assert len(w.evals) == 10 and r.hits == 0
    monkeypatch.undo()
    # another input seed: other inputs, other entries (and the earlier ones still serve their seed)
    from ktui.engine import shm
    from ktui.engine.refshare import SharedReference

    w = FakeReference()
    ref = SharedReference(w, _store(tmp_path))
    for seed in (11, 99):
        _d, fds = ref.call("make_inputs", {"seed": seed, "slot": "c1", "forward": True})
        shm.close_fds(fds)
    assert ref.summary()["replayed"] == {"make_inputs+forward": 1} and ref.summary()["live"] == {"make_inputs+forward": 1}


@torch_missing
def test_inputs_that_are_not_a_function_of_the_seed_are_computed_every_time(tmp_path):
    from ktui.engine import shm
    from ktui.engine.refshare import SharedReference

    _kernel(tmp_path)
    w = FakeReference(input_noise=True)
    ref = SharedReference(w, _store(tmp_path))
    data, fds = ref.call("make_inputs", {"seed": 11, "slot": "c1", "forward": True})
    x = shm.decode_value(data["inputs"], fds)[0]
    y = shm.decode_value(data["forward"]["outputs"], fds)
    shm.close_fds(fds)
    assert ref.rejected == 1 and w.evals == ["c1"]  # computed on the inputs it made now
    import torch

    assert torch.equal(y, x * 2.0 + 1.0)


@torch_missing
def test_damaged_entries_and_forged_replies_are_not_used(tmp_path):
    from ktui.engine.refshare import SharedReference

    first, _, _ = _kernel(tmp_path)
    blobs = sorted(p for p in (tmp_path / "replies").rglob("b0") if p.is_file())  # a key prefix may be "b0" too
    assert blobs
    for b in blobs:  # same size, other bytes
        raw = bytearray(b.read_bytes())
        raw[0] ^= 0xFF
        b.write_bytes(bytes(raw))
    again, w, r = _kernel(tmp_path)
    assert again == first and r.hits <= 2  # only the entries without tensors (memory, launches) replayed
    assert {"c1", "c2", "c3", "p-mix", "forward64", "p-jit"} <= set(w.evals)
    _kernel(tmp_path)  # replaced by good entries: the next kernel replays them
    assert _kernel(tmp_path)[1].evals == []
    # a reply that is not one of the op's shape (a field of the wrong type) is not replayed
    for e in (tmp_path / "replies").rglob("entry.json"):
        entry = json.loads(e.read_text())
        if entry["op"] == "memory":
            entry["data"]["peak_mb"] = "lots"
            e.write_text(json.dumps(entry))
    _, w, _ = _kernel(tmp_path)
    assert w.evals == ["memory"]
    # an entry filed under another key (copied there) is not used
    w = FakeReference()
    ref = SharedReference(w, _store(tmp_path))
    entries = {json.loads(e.read_text())["op"]: e for e in (tmp_path / "replies").rglob("entry.json")}
    key = ref.store.key({"op": "launches", "args": {}, "inputs": "x", "state": None})
    dest = tmp_path / "replies" / key[:2] / key
    dest.mkdir(parents=True)
    (dest / "entry.json").write_text(entries["launches"].read_text())
    assert ref.store.load(key, "launches") is None


@torch_missing
def test_large_replies_are_not_kept_and_the_store_is_trimmed(tmp_path, monkeypatch):
    from ktui.engine import refshare

    monkeypatch.setattr(refshare, "MAX_ENTRY_BYTES", 16)  # a reply's tensors: 8 float32 = 32 bytes
    _, _, r = _kernel(tmp_path)
    assert r.too_large >= 4 and not [p for p in (tmp_path / "replies").rglob("b0") if p.is_file() and p.stat().st_size > 16]
    _, w, _ = _kernel(tmp_path)
    assert "c1" in w.evals and "memory" not in w.evals  # the large ones computed again, the small ones kept
    monkeypatch.setattr(refshare, "MAX_ENTRY_BYTES", 1 << 20)
    _kernel(tmp_path)
    store = _store(tmp_path)
    sizes = [sum(f.stat().st_size for f in d.iterdir()) for d in (tmp_path / "replies").glob("*/*") if d.is_dir()]
    assert store.trim(max_bytes=sum(sizes) // 2) >= 1
    left = [sum(f.stat().st_size for f in d.iterdir()) for d in (tmp_path / "replies").glob("*/*")
            if d.is_dir() and not d.name.endswith(".lock")]
    assert sum(left) <= sum(sizes) // 2


# ---- the real judge on the CPU ----------------------------------------------------------------------
REF = textwrap.dedent("""
    import torch, torch.nn as nn
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 32)
        def forward(self, x):
            return torch.relu(self.lin(x))
    def get_inputs():
        return [torch.randn(16, 64)]
    def get_init_inputs():
        return []
""")
HONEST = REF + "\nclass ModelNew(Model):\n    pass\n"
HONEST2 = REF + "\nclass ModelNew(Model):\n    def forward(self, x):\n        return super().forward(x).clone()\n"
# a right kernel that, from its forward (correctness, timing and every probe), looks for the reply
# store (it fails if it sees a file: it would then be judged wrong), and writes fake entries where
# the store's entries would be (the root as the judge passes it, the default cache root, and every
# folder it can reach that looks like one), each saying the reference's output is zeros
HOSTILE = textwrap.dedent('''
    import glob, json, os, torch, torch.nn as nn
    ROOTS = {roots!r}
    STORE_NAMES = ("replies", "timing", "seeds")
    def reachable():
        """the store's root as the judge names it, the same through every process's root this process
        can see (/proc/PID/root), and any store-looking folder in a process's working directory or
        in a folder named refcache near the top of the file system"""
        roots = list(ROOTS) + glob.glob("/*/refcache") + glob.glob("/*/*/refcache")
        for pid in glob.glob("/proc/[0-9]*"):
            roots += [pid + "/root" + r for r in ROOTS]
            roots += [pid + "/cwd"]
        return roots
    def plant():
        for root in reachable():
            if root.endswith("/cwd"):  # looked at, not written (its own working directory is among them)
                seen = [os.path.join(root, n) for n in STORE_NAMES if os.path.isdir(os.path.join(root, n))]
                if seen:
                    raise RuntimeError("the reply store is visible: " + seen[0])
                continue
            seen = glob.glob(os.path.join(root, "**", "*"), recursive=True)
            if seen:
                raise RuntimeError("the reply store is visible: " + seen[0])
            for top in ["replies/00/" + "0" * 40, "replies/ff/" + "f" * 40]:
                d = os.path.join(root, top)
                try:
                    os.makedirs(d, exist_ok=True)
                    with open(os.path.join(d, "entry.json"), "w") as fh:
                        json.dump({{"version": 1, "key": "0" * 40, "op": "forward", "data": {{}}, "blobs": []}}, fh)
                except OSError:
                    pass
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(64, 32)
        def forward(self, x):
            return torch.relu(self.lin(x))
    class ModelNew(Model):
        def forward(self, x):
            plant()
            return super().forward(x)
''')


def _judge(tmp_path, code, refroot, checks=True, input_seed=13579, init_seed=None, completes=True):
    from ktui.engine.pipeline import judge

    job = {"kernel_code": code, "reference_source": REF, "device": "cpu", "trials": 3, "run_timeout": 600,
           "compile_timeout": 600, "lock_dir": str(tmp_path / "locks"), "build_root": str(tmp_path / "cache" / "build"),
           "checks": checks, "input_seed": input_seed, "ref_cache": refroot}
    if init_seed is not None:
        job["seed"] = init_seed
    res = judge(job)
    if completes:
        assert res["status"] == "completed", res.get("failure")
    return res


EVALUATING = ("forward", "memory", "launches", "wall_outputs")


def _verdict(res):
    """What sharing must not change: correctness, its errors, every check and finding that rests on no
    measured time (those two runs on a busy host may differ in whatever is shared: TIMING_CLASSES)."""
    from ktui.repro.verify.results import TIMING_CLASSES

    return {"correct": res["correctness"]["passed"], "errors": res["correctness"]["max_abs_error"],
            "checks": sorted((c["name"], c["ok"]) for c in res["checks"] if c["name"] not in TIMING_CLASSES),
            "findings": sorted(f["class"] for f in res["findings"] if f["class"] not in TIMING_CLASSES)}


def _snapshot(root):
    return {str(p): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@torch_missing
@pytest.mark.timeout(1800)
def test_real_judges_share_the_reference_and_a_candidate_cannot_reach_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "cache" / "refcache"
    # the hostile kernel first: whatever it plants must not become a later kernel's reference
    bad = _judge(tmp_path, HOSTILE.format(roots=[str(root), str(tmp_path / "cache")]), str(root))
    assert bad["correctness"]["passed"], bad["correctness"]  # it saw nothing, and is right
    assert bad["reference_cache"]["hits"] == 0 and bad["reference_cache"]["stored"] >= 20
    planted = [p for p in root.rglob("entry.json") if p.parent.name in ("0" * 40, "f" * 40)]
    assert planted == []
    before = _snapshot(root / "replies")
    first = _judge(tmp_path, HONEST, str(root))
    live = first["reference_cache"]["live"]
    assert live == {} and first["reference_cache"]["replayed"] == bad["reference_cache"]["live"]
    ops = first["worker_ops"]["reference"]
    assert not any(ops.get(k) for k in EVALUATING), ops  # the reference ran no forward
    assert ops["probe"] == 2  # only the parameter change and its restore
    assert _snapshot(root / "replies") == before  # the first entries unchanged
    second = _judge(tmp_path, HONEST2, str(root))
    assert second["reference_cache"]["live"] == {} and _verdict(second) == _verdict(first)
    # the same kernel with nothing shared: the same verdict
    alone = _judge(tmp_path, HONEST, None)
    assert "reference_cache" not in alone and _verdict(alone) == _verdict(first)
    # a hostile kernel judged after the entries exist sees none of them and changes none
    bad2 = _judge(tmp_path, HOSTILE.format(roots=[str(root), str(tmp_path / "cache")]), str(root))
    assert bad2["correctness"]["passed"] and bad2["reference_cache"]["live"] == {}
    assert _snapshot(root / "replies") == before
    # another input seed or init seed: computed again
    other = _judge(tmp_path, HONEST, str(root), input_seed=24680)
    assert other["reference_cache"]["replayed"] == {} and other["reference_cache"]["live"]
    other = _judge(tmp_path, HONEST, str(root), init_seed=7)
    assert other["reference_cache"]["replayed"] == {} and other["reference_cache"]["live"]
    assert os.path.isdir(root / "replies")


def test_the_benchmark_adds_up_the_stores_counts_and_the_references_work():
    """bench_verify (scripts/gpu/verify_speed.sh) sums each kernel's reference_cache counts (the live
    and replayed tables by kind too) and the reference's work from worker_seconds."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_verify.py"
    spec = importlib.util.spec_from_file_location("bench_verify_for_test", path)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    ev = {"timings": {
        "a": {"reference_cache": {"hits": 0, "misses": 5, "live": {"forward": 2, "memory": 1}, "replayed": {}},
              "worker_seconds": {"reference": {"forward": 3.0, "memory": 1.0, "hello": 9.0}},
              "stages": {"build": {"seconds": 50.0}, "correctness": {"seconds": 6.0}, "checks": {"seconds": 2.0}}},
        "b": {"reference_cache": {"hits": 5, "misses": 0, "live": {}, "replayed": {"forward": 2, "memory": 1}},
              "worker_seconds": {"reference": {"make_inputs": 0.5}}, "stages": {"correctness": {"seconds": 2.0}}}}}
    f = bench.pipeline_figures({"runs": []}, ev, 100.0)
    assert f["reference_cache"] == {"hits": 5, "misses": 5, "live": {"forward": 2, "memory": 1},
                                    "replayed": {"forward": 2, "memory": 1}}
    assert f["reference_work_s"] == 4.5 and f["reference_work_share"] == 0.45  # 4.5 s of 10 s past the builds


@torch_missing
@pytest.mark.timeout(1200)
def test_the_store_is_masked_wherever_it_is_and_the_hostile_kernel_would_see_it_unmasked(tmp_path, monkeypatch):
    """The reference cache's root is masked from the workers wherever the caller puts it, from the
    first kernel on (the root did not exist yet when the first judge started: it was not masked, and
    that kernel's worker could read the entries its own judge wrote while it ran); with the mask
    taken away, the same hostile kernel sees the store and is judged wrong: the hostile kernel is a
    real detector. The store is put where the workers' own root shows the host's files (the Python
    prefix, which every worker reads): their /tmp is their own, so a store under pytest's tmp_path
    is hidden from them anyway."""
    import shutil
    import sys
    import tempfile
    from pathlib import Path

    from ktui.engine import pipeline, sandbox

    if not os.access(sys.prefix, os.W_OK):
        pytest.skip("the Python prefix is read-only")
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    top = Path(tempfile.mkdtemp(prefix="ktui-test-store-", dir=sys.prefix))
    try:
        root = top / "refcache"  # not there yet: the first judge makes it
        hostile = HOSTILE.format(roots=[str(root)])
        first = _judge(tmp_path, hostile, str(root), checks=False)
        assert first["correctness"]["passed"], first["correctness"]  # it never saw its judge's entries
        assert first["reference_cache"]["stored"] >= 5
        before = _snapshot(root)
        honest = _judge(tmp_path, HONEST, str(root), checks=False)
        assert honest["correctness"]["passed"] and honest["reference_cache"]["live"] == {}
        again = _judge(tmp_path, hostile, str(root), checks=False)
        assert again["correctness"]["passed"] and again["reference_cache"]["live"] == {}
        assert _snapshot(root) == before  # nothing planted, nothing changed
        real = sandbox.default_masks
        monkeypatch.setattr(pipeline.sandbox, "default_masks",
                            lambda paths: real([p for p in paths if not str(p).startswith(str(top))]))
        unmasked = _judge(tmp_path, hostile, str(root), checks=False, completes=False)
        assert not (unmasked["correctness"] or {}).get("passed")
        assert "reply store is visible" in json.dumps(unmasked)
    finally:
        shutil.rmtree(top, ignore_errors=True)
