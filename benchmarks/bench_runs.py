"""Benchmark ``ktui runs`` on a big sweep: 10,000 traces, about 1 GB, of mixed formats.

    python benchmarks/bench_runs.py [--traces 10000] [--size-mb 1000] [--dir DIR] [--keep] [--json]
    python benchmarks/bench_runs.py --reuse DIR [--json]     # measure a tree kept before
    python benchmarks/bench_runs.py --reuse DIR --first-rows 3   # only the time to the first row
    python benchmarks/bench_runs.py --traces 2000 --size-mb 218 --unique-kernels --dir D --keep   # kernels per run

Builds a sweep tree in the layout popcornbench's run_sweep.py writes (``<sweep>/runs.jsonl``,
``<sweep>/<cell>/runs.jsonl``, ``<sweep>/<cell>/<uuid>/trace.jsonl`` and the flat
``<cell>/popcorn_single_problem.jsonl`` link). Four runs in five are the bundled seed run with its
turns repeated to reach the target size, each with another model, persona, problem, outcome and
speedup; one in five is a copy of a real trace of another variant or format held in the repo and
../shared (ensemble V0-V3, KTBench, Claude Code, Codex, chat messages, Inspect, SWE-agent,
mini-SWE-agent, Harbor). Every trace is unique (the index lists equal contents once).

Then it measures, each in a fresh process (peak RSS is that process's own), interleaved with the
anchor, a bare orjson loop over every trace file of the tree:

1. cold (the index cache removed and the page cache of every file dropped first): the orjson loop;
   the index alone (time to the first row and to all of them, CPU of all its processes); ``ktui
   runs DIR --format json --no-cache`` as a user runs it; ``--format csv`` through a pipe (time to
   its first row); the app (``RunsScreen`` headless, time
   from process start to the first row in the table and to the full table); the orjson loop again;
2. warm page cache: the orjson loop, the index without its cache, the index, ``--format csv``
   and the app served from the index cache.

Times are from process start, imports included. On a shared machine wall time includes waiting
for a core: the CPU column is the work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
TEST_TRACE = REPO / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
FIXTURES = REPO.parent / "shared" / "fixtures"

MODELS = ["grok-4.3", "gpt-5.5", "claude-sonnet-4-5", "gemini-3-pro", "glm-5.1", "qwen3-coder",
          "deepseek-v3.2", "kimi-k2"]
PERSONAS = ["normal", "terse", "careful", "speedrun"]


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class SeedTemplate:
    """The seed run cut in parts: head, the turns before the submission, the submission, the end."""

    def __init__(self) -> None:
        events = [json.loads(x) for x in SEED.read_text(encoding="utf-8").splitlines()]
        kinds = [e["payload"]["kind"] for e in events]
        first_cost = kinds.index("cost")
        submit = max(i for i, e in enumerate(events)
                     if e["payload"]["kind"] == "tool_call" and e["payload"]["name"] == "submit_kernel")
        submit_turn = max(i for i in range(submit) if kinds[i] == "cost" and kinds[i - 1] != "cost")
        end = next(i for i in range(submit, len(events)) if kinds[i] == "system")
        self.head = events[:first_cost]
        self.middle = b"\n".join(_dumps(e) for e in events[first_cost:submit_turn]) + b"\n"
        self.submit = events[submit_turn:end]
        self.end = events[end:]

    def trace(self, i: int, rng: random.Random, repeats: int) -> tuple[bytes, dict]:
        model, persona = MODELS[i % len(MODELS)], PERSONAS[(i // len(MODELS)) % len(PERSONAS)]
        level, pid = 1 + (i % 3), 1 + (i * 7) % 60
        passed = rng.random() < 0.55
        speedup = round(rng.lognormvariate(0.1, 0.6), 4)
        runtime_ms = round(0.0384 / speedup, 4)
        out = [_dumps({"tick": 0, "ts_ms": self.head[0]["ts_ms"], "actor": None, "message_id": None,
                       "payload": {"kind": "system", "note": f"ktui benchmark trace #{i} (synthetic)"}})]
        for e in self.head:
            e = json.loads(json.dumps(e))
            p = e["payload"]
            if p["kind"] == "system" and p["note"].startswith("{"):
                body = json.loads(p["note"])
                if body.get("kind") == "agent_spawned":
                    body["model"] = model
                    body["params"] = {**body.get("params", {}), "persona": persona}
                    p["note"] = json.dumps(body)
            if p["kind"] == "tool_result" and p.get("name") == "fetch_problem":
                p["result"].update(level=level, problem_id=pid, name=f"{pid}_bench_problem_{pid}.py")
            if p["kind"] == "state_diff" and p["diff"].get("field") == "problem":
                p["diff"]["new"] = {"level": level, "problem_id": pid, "name": f"{pid}_bench_problem_{pid}.py"}
            out.append(_dumps(e))
        body = b"\n".join(out) + b"\n" + self.middle * repeats
        tail = []
        for e in self.submit + self.end:
            e = json.loads(json.dumps(e))
            p = e["payload"]
            if p["kind"] == "tool_result" and p.get("name") == "submit_kernel":
                p["result"].update(ok=passed, runtime_us=runtime_ms, speedup=speedup)
            if p["kind"] == "state_diff":
                p["diff"]["new"].update(correctness=passed, runtime_us=runtime_ms, speedup=speedup)
            if p["kind"] == "system" and p["note"].startswith("grader: "):
                g = json.loads(p["note"][8:])
                g["scores"].update(submission_passed=1.0 if passed else 0.0, any_correct=1.0 if passed else 0.0)
                p["note"] = "grader: " + json.dumps(g)
            tail.append(_dumps(e))
        data = body + b"\n".join(tail) + b"\n"
        meta = {"model": model, "persona": persona, "level": level, "problem_id": pid}
        return data, meta


FORMATS = REPO.parent / "shared" / "formats"
REPO_FORMATS = REPO / "tests" / "fixtures" / "formats"
_OTHER_EXTS = (".jsonl", ".json", ".traj")


def other_traces() -> list[Path]:
    """Real traces of other variants and formats (held in the repo and ../shared): one in five
    runs of the sweep is a copy of one of them."""
    out = [TEST_TRACE] + (sorted(FIXTURES.rglob("*.jsonl")) if FIXTURES.is_dir() else [])
    for base in (FORMATS, REPO_FORMATS):
        if base.is_dir():
            out += sorted(p for p in base.glob("*/*") if p.is_file() and p.name.endswith(_OTHER_EXTS))
            out += sorted(p for p in base.glob("*") if p.is_file() and p.name.endswith(_OTHER_EXTS))
    return out


def unique_copy(path: Path, data: bytes, i: int) -> bytes:
    """A copy of a trace that no other copy equals (the index lists equal contents once): an
    ensemble trace gets a system note first; another format's first JSON object a key of its own."""
    first, _, rest = data.partition(b"\n")
    try:
        obj = json.loads(first)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and "payload" in obj:
        note = _dumps({"tick": 0, "ts_ms": obj.get("ts_ms", 0), "actor": None, "message_id": None,
                       "payload": {"kind": "system", "note": f"ktui benchmark copy #{i} of {path.name}"}})
        return note + b"\n" + data
    if isinstance(obj, dict) and rest.strip():  # JSONL of another format: mark its first record
        return _dumps({**obj, "ktui_bench_copy": i}) + b"\n" + rest
    whole = json.loads(data)
    if isinstance(whole, dict):
        return json.dumps({**whole, "ktui_bench_copy": i}).encode()
    return data + b"\n" * (1 + i % 7)  # a JSON array: trailing blank lines make it another file


def unique_kernels(data: bytes, i: int) -> bytes:
    """The trace with a comment naming it first in every kernel_code argument: its kernel
    versions are its own (no other trace of the sweep has them), as in a real sweep, where
    each run writes its kernels. Without it the seed runs share four versions, whose static
    findings (:mod:`ktui.trace.findings`, 2-4 ms a version) a scan computes once per process."""
    return data.replace(b'"kernel_code":"', b'"kernel_code":"# ktui bench trace %d\\n' % i)


def generate(root: Path, n: int, size_mb: float, seed: int = 7, other_every: int = 5,
             unique: bool = False) -> dict:
    """The sweep tree under ``root / "sweep"``: ``n`` traces, about ``size_mb`` MB; ``unique``:
    each seed run's kernels its own (:func:`unique_kernels`)."""
    rng = random.Random(seed)
    tpl = SeedTemplate()
    others = other_traces()
    other_bytes = [p.read_bytes() for p in others]
    n_other = n // other_every if other_bytes else 0
    other_total = sum(len(other_bytes[i % len(other_bytes)]) for i in range(n_other))
    target = size_mb * 1e6
    per_seed = max(len(tpl.middle), (target - other_total) / max(1, n - n_other))
    sample, _ = tpl.trace(0, random.Random(0), 1)
    repeats = max(1, round((per_seed - (len(sample) - len(tpl.middle))) / len(tpl.middle)))
    sweep = root / "sweep"
    sweep.mkdir(parents=True)
    runner = []
    total = 0
    formats: dict[str, int] = {}
    t0 = time.perf_counter()
    for i in range(n):
        if other_bytes and i % other_every == other_every - 1:
            k = (i // other_every) % len(other_bytes)
            data, meta = unique_copy(others[k], other_bytes[k], i), {"model": None, "persona": None}
            cell = f"other_{i:05d}_{others[k].stem.split('.')[0]}"
            name = "trace" + (others[k].suffix or ".jsonl")
            kind = others[k].parent.name
        else:
            data, meta = tpl.trace(i, rng, repeats)
            if unique:
                data = unique_kernels(data, i)
            cell = f"l{meta['level']}_p{meta['problem_id']}_{meta['model']}_{meta['persona']}_s{i}"
            name, kind = "trace.jsonl", "ensemble (seed)"
        formats[kind] = formats.get(kind, 0) + 1
        uuid = hashlib.md5(f"run{i}".encode()).hexdigest()[:16]
        d = sweep / cell / uuid
        d.mkdir(parents=True)
        (d / name).write_bytes(data)
        if name == "trace.jsonl":
            (sweep / cell / "popcorn_single_problem.jsonl").symlink_to(Path(uuid) / "trace.jsonl")
            (sweep / cell / "runs.jsonl").write_text(json.dumps({"run_id": uuid, "scenario": "popcorn.single_problem",
                                                                 "trace_path": f"{uuid}/trace.jsonl"}) + "\n")
        runner.append({"slug": cell, "status": "ok", "returncode": 0, **meta,
                       "trace_path": f"traces/sweep/{cell}/popcorn.single_problem.jsonl"})
        total += len(data)
    (sweep / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in runner) + "\n")
    return {"traces": n, "bytes": total, "seed_repeats": repeats, "generate_s": time.perf_counter() - t0,
            "by_source": formats, "unique_kernels": unique}


# ---- measurements, each in a child process ---------------------------------------------------------
INDEX_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from ktui.trace.index import SweepIndex
idx = SweepIndex(sys.argv[1], use_cache=sys.argv[2] == "1")
first = None
t_scan = time.perf_counter()
n = 0
for s in idx.summaries():
    n += 1
    if first is None:
        first = time.perf_counter() - t0
full = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"first_s": first, "full_s": full, "runs": n, "cache_hits": idx.cache_hits,
                  "import_s": t_scan - t0, "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                  "helpers": idx.helpers_used,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "helper_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

# the anchor: a bare orjson loop over every trace file of the tree (each line of a JSONL file, a
# whole .json / .traj file), links not followed (each file once), record files left out
ORJSON_CHILD = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
import orjson
n = b = 0
for d, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        p = os.path.join(d, name)
        if name in ("runs.jsonl", "runs.json", "meta.json") or os.path.islink(p):
            continue
        with open(p, "rb") as f:
            if name.endswith(".jsonl"):
                for line in f:
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
            else:
                data = f.read()
                try:
                    orjson.loads(data)
                except orjson.JSONDecodeError:
                    pass
                b += len(data)
                n += 1
                continue
            b += f.tell()
        n += 1
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"full_s": time.perf_counter() - t0, "cpu_s": me.ru_utime + me.ru_stime, "files": n, "bytes": b}))
"""

APP_CHILD = r"""
import asyncio, json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from ktui.tui.app import KtuiApp
from ktui.tui.screens.runs import RunsScreen
from ktui.tui.widgets.runs_table import RunsTable

async def main():
    screen = RunsScreen(sys.argv[1], use_cache=sys.argv[2] == "1")
    app = KtuiApp(lambda: screen)
    first = full = None
    async with app.run_test(size=(160, 48)) as pilot:
        while full is None and time.perf_counter() - t0 < 600:
            await asyncio.sleep(0.005)
            table = screen.query_one(RunsTable) if screen.is_mounted else None
            if first is None and table is not None and table.view:
                first = time.perf_counter() - t0
            if screen.scan_done:
                await pilot.pause()
                full = time.perf_counter() - t0
        # interactive figures on the full table: a filter keystroke and a sort
        t = time.perf_counter(); await pilot.press("o"); await pilot.pause(); filt = time.perf_counter() - t
        t = time.perf_counter(); await pilot.press("s"); await pilot.pause(); srt = time.perf_counter() - t
        rows = len(screen.query_one(RunsTable).rows)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"first_row_s": first, "full_table_s": full, "rows": rows, "filter_s": filt, "sort_s": srt,
                      "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "helper_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))

asyncio.run(main())
"""


# the first row alone: each process stops (os._exit) at its first row
INDEX_FIRST = r"""
import os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from ktui.trace.index import SweepIndex
for s in SweepIndex(sys.argv[1], use_cache=sys.argv[2] == "1").summaries():
    print(time.perf_counter() - t0, flush=True)
    os._exit(0)
"""

APP_FIRST = r"""
import asyncio, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from ktui.tui.app import KtuiApp
from ktui.tui.screens.runs import RunsScreen
from ktui.tui.widgets.runs_table import RunsTable

async def main():
    screen = RunsScreen(sys.argv[1], use_cache=sys.argv[2] == "1")
    app = KtuiApp(lambda: screen)
    async with app.run_test(size=(160, 48)):
        while time.perf_counter() - t0 < 600:
            await asyncio.sleep(0.002)
            table = screen.query_one(RunsTable) if screen.is_mounted else None
            if table is not None and table.view:
                print(time.perf_counter() - t0, flush=True)
                os._exit(0)

asyncio.run(main())
"""


def first_rows(sweep: Path, cache: Path, env: dict, n: int) -> dict:
    """Time from process start to the first row, ``n`` times each (the median and all of them, with
    the load average before each): the index, ``--format csv`` through a pipe, the app; cold (no
    index cache, the tree's page cache dropped before each) and from the index cache."""
    import statistics

    def once(kind: str, cached: bool) -> float:
        if kind == "csv":
            return cli_csv(sweep, env, cache=cached, stop_at_first=True)["first_s"]
        code = INDEX_FIRST if kind == "index" else APP_FIRST
        out = subprocess.run([sys.executable, "-c", code, str(sweep), "1" if cached else "0", str(REPO)],
                             capture_output=True, text=True, env=env, timeout=600)
        return float(out.stdout.strip().splitlines()[-1])

    shutil.rmtree(cache, ignore_errors=True)
    child(INDEX_CHILD, sweep, True, env)  # fill the cache (the cold runs neither read nor write it)
    res: dict = {}
    for cached in (False, True):
        for kind in ("index", "csv", "app"):
            times, loads = [], []
            for _ in range(n):
                if not cached:
                    drop_page_cache(sweep)
                loads.append(round(os.getloadavg()[0], 1))
                times.append(round(once(kind, cached), 3))
            res[f"{kind}_{'cached' if cached else 'cold'}"] = {"median_s": statistics.median(times), "all_s": times,
                                                               "load": loads}
    return res


def child(code: str, root: Path, cache: bool, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(root), "1" if cache else "0", str(REPO)],
                         capture_output=True, text=True, env=env, timeout=1200)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def drop_page_cache(root: Path) -> str:
    """Make the tree cold: ``posix_fadvise(DONTNEED)`` on every file (evicts its clean pages, no
    privilege needed, the rest of the machine's page cache left alone); else the kernel's
    drop_caches when this process may write it; else say that the page cache stayed warm."""
    if hasattr(os, "posix_fadvise"):
        for d, _dirs, files in os.walk(root):
            for name in files:
                p = os.path.join(d, name)
                if os.path.islink(p):
                    continue
                try:
                    fd = os.open(p, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.fdatasync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
        return "the page cache of every file dropped (posix_fadvise DONTNEED)"
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return "the page cache dropped (drop_caches)"
    except OSError:
        return "the page cache NOT dropped (warm)"


def cli_runs(root: Path, env: dict) -> dict:
    """``ktui runs DIR --format json --no-cache`` as a user runs it: wall and CPU of all its processes."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ktui", "runs", str(root), "--format", "json", "--no-cache"],
                       env=dict(env, PYTHONPATH=str(REPO)), capture_output=True, timeout=1200)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"ktui runs failed: {p.stderr[-2000:]!r}")
    runs = len(json.loads(p.stdout)["runs"])
    return {"full_s": wall, "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), "runs": runs}


def cli_csv(root: Path, env: dict, cache: bool = False, stop_at_first: bool = False) -> dict:
    """``ktui runs DIR --format csv [--no-cache]`` read through a pipe as ``| head`` would: time from
    process start to its first row (the line after the header) and to the end; CPU of all its processes."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "ktui", "runs", str(root), "--format", "csv"] + ([] if cache else ["--no-cache"])
    p = subprocess.Popen(cmd, env=dict(env, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdout is not None
    first = None
    n = 0
    for _line in p.stdout:
        n += 1
        if n == 2:
            first = time.perf_counter() - t0
            if stop_at_first:
                p.kill()
                p.wait()
                return {"first_s": first}
    p.wait()
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"ktui runs --format csv failed ({p.returncode})")
    return {"first_s": first, "full_s": wall, "cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
            "runs": n - 1}


def measure(sweep: Path, cache: Path, env: dict) -> dict:
    """Every figure, interleaved with the orjson anchor, each cold one after the page cache is dropped."""
    res: dict = {}

    def cold() -> None:
        shutil.rmtree(cache, ignore_errors=True)
        res["cold_by"] = drop_page_cache(sweep)

    cold()
    res["orjson_cold"] = child(ORJSON_CHILD, sweep, False, env)
    cold()
    res["index_cold"] = child(INDEX_CHILD, sweep, False, env)
    cold()
    res["cli_cold"] = cli_runs(sweep, env)
    cold()
    res["csv_cold"] = cli_csv(sweep, env)
    cold()
    res["app_cold"] = child(APP_CHILD, sweep, False, env)
    cold()
    res["orjson_cold_2"] = child(ORJSON_CHILD, sweep, False, env)
    res["orjson_warm"] = child(ORJSON_CHILD, sweep, False, env)
    res["index_warm_no_cache"] = child(INDEX_CHILD, sweep, False, env)
    child(INDEX_CHILD, sweep, True, env)  # fill the cache
    res["index_cached"] = child(INDEX_CHILD, sweep, True, env)
    res["csv_cached"] = cli_csv(sweep, env, cache=True)
    res["app_cached"] = child(APP_CHILD, sweep, True, env)
    res["load_avg"] = os.getloadavg()
    return res


def report(gen: dict, r: dict) -> None:
    oc = min(r["orjson_cold"]["full_s"], r["orjson_cold_2"]["full_s"])
    ow = r["orjson_warm"]
    print(f"{'':34}{'first row':>10}{'complete':>10}{'CPU':>9}{'x orjson':>10}{'peak RSS':>10}")

    def row(name: str, d: dict, first: str, anchor: float, rss: str = "") -> None:
        fr = d.get(first)
        print(f"{name:34}{(f'{fr:.3f}s' if fr is not None else '-'):>10}{d['full_s']:>9.2f}s{d['cpu_s']:>8.2f}s"
              f"{d['full_s'] / anchor:>9.2f}x{rss:>10}")

    row("orjson loop, cold (anchor)", r["orjson_cold"], "", oc)
    row("orjson loop, cold, again", r["orjson_cold_2"], "", oc)
    row("orjson loop, warm page cache", ow, "", ow["full_s"])
    row("index, cold", r["index_cold"], "first_s", oc, f"{r['index_cold']['rss_mb']:.0f}MB")
    row("ktui runs --format json, cold", r["cli_cold"], "", oc)
    row("ktui runs --format csv, cold", r["csv_cold"], "first_s", oc)
    ac = dict(r["app_cold"], full_s=r["app_cold"]["full_table_s"])
    row("app (runs screen), cold", ac, "first_row_s", oc, f"{ac['rss_mb']:.0f}MB")
    row("index, warm page cache, no cache", r["index_warm_no_cache"], "first_s", ow["full_s"])
    row("index, cached", r["index_cached"], "first_s", ow["full_s"])
    row("ktui runs --format csv, cached", r["csv_cached"], "first_s", ow["full_s"])
    ah = dict(r["app_cached"], full_s=r["app_cached"]["full_table_s"])
    row("app (runs screen), cached", ah, "first_row_s", ow["full_s"], f"{ah['rss_mb']:.0f}MB")
    ic = r["index_cold"]
    print(f"index: {ic['runs']:,} runs, {ic['helpers']} helper process(es); imports {ic['import_s']:.2f}s; "
          f"app: {ac['rows']:,} rows, filter {ac['filter_s'] * 1000:.0f} ms, sort {ac['sort_s'] * 1000:.0f} ms")
    print(f"cold = index cache removed and {r['cold_by']}; times from process start (imports included); "
          f"{os.cpu_count()} CPUs, KTUI_JOBS={os.environ.get('KTUI_JOBS', 'default')}; load average after: "
          f"{r['load_avg'][0]:.1f}")
    print("targets (issues 24, 25): first row <= 0.3 s, complete <= 5 s cold, cold <= 2x the orjson loop (cold)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--dir", type=Path, default=None, help="where to build the tree (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated tree")
    ap.add_argument("--reuse", type=Path, default=None, help="measure a tree built before (--keep) instead")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--unique-kernels", action="store_true",
                    help="each seed run's kernel versions its own, as in a real sweep (default: shared)")
    ap.add_argument("--first-rows", type=int, default=0, metavar="N",
                    help="measure only the time to the first row, N times each (index, --format csv, app; cold, cached)")
    args = ap.parse_args()
    base = args.reuse or Path(tempfile.mkdtemp(prefix="ktui-bench-runs-", dir=args.dir))
    cache = base / "cache"
    env = dict(os.environ, KTUI_CACHE_DIR=str(cache))
    try:
        if args.reuse:
            gen = json.loads((base / "tree.json").read_text())
        else:
            gen = generate(base, args.traces, args.size_mb, unique=args.unique_kernels)
            (base / "tree.json").write_text(json.dumps(gen))
        print(f"{gen['traces']:,} traces, {gen['bytes'] / 1e6:,.0f} MB (seed turns x{gen['seed_repeats']}; "
              f"by source: {gen.get('by_source')}) under {base}", flush=True)
        if args.first_rows:
            fr = first_rows(base / "sweep", cache, env, args.first_rows)
            for k, v in fr.items():
                print(f"first row, {k:14} median {v['median_s']:.3f} s  all {v['all_s']}  load {v['load']}")
            if args.json:
                print(json.dumps(fr))
            return
        results = {"tree": gen, **measure(base / "sweep", cache, env)}
    finally:
        if not args.keep and not args.reuse:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(gen, results)


if __name__ == "__main__":
    main()
