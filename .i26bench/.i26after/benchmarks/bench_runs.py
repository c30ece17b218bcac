"""Benchmark ``ktui runs`` on a big sweep: 10,000 traces, about 1 GB.

    python benchmarks/bench_runs.py [--traces 10000] [--size-mb 1000] [--dir DIR] [--keep]

Builds a sweep tree from the bundled seed trace, the compare test trace and the fixtures in
../shared/fixtures (when present), in the layout popcornbench's run_sweep.py writes:
``<sweep>/runs.jsonl``, ``<sweep>/<cell>/runs.jsonl``, ``<sweep>/<cell>/<uuid>/trace.jsonl`` and
the flat ``<cell>/popcorn_single_problem.jsonl`` symlink. Most traces are the seed run with its
turns repeated to reach the target size, with a different model, persona, problem, outcome and
speedup each; one in ten is a fixture of another variant. Every trace is unique.

Then it measures, each in a fresh process (so peak RSS is that process's own):

1. the index alone, no cache: time to the first summary, to all of them, peak RSS;
2. the index again, served from the index cache (the "second open");
3. the app: ``RunsScreen`` headless (``App.run_test``), no cache: time from process start to the
   first row in the table and to the full table, peak RSS; then the same with the cache.

Figures are printed as a table (and as JSON with ``--json``). The page cache is warm (the tree was
just written); a cold disk adds its read time to the full-table figure, not to the first row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
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


def generate(root: Path, n: int, size_mb: float, seed: int = 7) -> dict:
    rng = random.Random(seed)
    tpl = SeedTemplate()
    others = [TEST_TRACE] + (sorted(FIXTURES.rglob("*.jsonl")) if FIXTURES.is_dir() else [])
    other_bytes = [p.read_bytes() for p in others]
    n_other = n // 10
    other_total = sum(len(other_bytes[i % len(other_bytes)]) for i in range(n_other))
    target = size_mb * 1e6
    per_seed = max(len(tpl.middle), (target - other_total) / max(1, n - n_other))
    sample, _ = tpl.trace(0, random.Random(0), 1)
    repeats = max(1, round((per_seed - (len(sample) - len(tpl.middle))) / len(tpl.middle)))
    sweep = root / "sweep"
    sweep.mkdir(parents=True)
    runner = []
    total = 0
    t0 = time.perf_counter()
    for i in range(n):
        if i % 10 == 9 and other_bytes:
            k = (i // 10) % len(other_bytes)
            note = _dumps({"tick": 0, "ts_ms": 0, "actor": None, "message_id": None,
                           "payload": {"kind": "system", "note": f"ktui benchmark copy #{i} of {others[k].name}"}})
            data, meta = note + b"\n" + other_bytes[k], {"model": None, "persona": None}
            cell = f"other_{i:05d}_{others[k].stem}"
        else:
            data, meta = tpl.trace(i, rng, repeats)
            cell = f"l{meta['level']}_p{meta['problem_id']}_{meta['model']}_{meta['persona']}_s{i}"
        uuid = hashlib.md5(f"run{i}".encode()).hexdigest()[:16]
        d = sweep / cell / uuid
        d.mkdir(parents=True)
        (d / "trace.jsonl").write_bytes(data)
        (sweep / cell / "popcorn_single_problem.jsonl").symlink_to(Path(uuid) / "trace.jsonl")
        (sweep / cell / "runs.jsonl").write_text(json.dumps({"run_id": uuid, "scenario": "popcorn.single_problem",
                                                             "trace_path": f"{uuid}/trace.jsonl"}) + "\n")
        runner.append({"slug": cell, "status": "ok", "returncode": 0, **meta,
                       "trace_path": f"traces/sweep/{cell}/popcorn.single_problem.jsonl"})
        total += len(data)
    (sweep / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in runner) + "\n")
    return {"traces": n, "bytes": total, "seed_repeats": repeats, "generate_s": time.perf_counter() - t0}


# ---- measurements, each in a child process ---------------------------------------------------------
INDEX_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[3])
from ktui.trace.index import SweepIndex
idx = SweepIndex(sys.argv[1], use_cache=sys.argv[2] == "1")
first = None
n = 0
for s in idx.summaries():
    n += 1
    if first is None:
        first = time.perf_counter() - t0
full = time.perf_counter() - t0
print(json.dumps({"first_s": first, "full_s": full, "runs": n, "cache_hits": idx.cache_hits,
                  "helpers": idx.helpers_used,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "helper_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
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
    print(json.dumps({"first_row_s": first, "full_table_s": full, "rows": rows, "filter_s": filt, "sort_s": srt,
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "helper_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))

asyncio.run(main())
"""


def child(code: str, root: Path, cache: bool, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", code, str(root), "1" if cache else "0", str(REPO)],
                         capture_output=True, text=True, env=env, timeout=1200)
    if out.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--dir", type=Path, default=None, help="where to build the tree (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated tree")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="ktui-bench-runs-", dir=args.dir))
    cache = base / "cache"
    env = dict(os.environ, KTUI_CACHE_DIR=str(cache))
    try:
        gen = generate(base, args.traces, args.size_mb)
        sweep = base / "sweep"
        print(f"generated {gen['traces']:,} traces, {gen['bytes'] / 1e6:,.0f} MB "
              f"(seed turns x{gen['seed_repeats']}) in {gen['generate_s']:.1f}s under {base}", flush=True)
        results = {"tree": gen}
        results["index_cold"] = child(INDEX_CHILD, sweep, False, env)
        results["index_cached"] = (child(INDEX_CHILD, sweep, True, env), child(INDEX_CHILD, sweep, True, env))[1]
        shutil.rmtree(cache, ignore_errors=True)
        results["app_cold"] = child(APP_CHILD, sweep, False, env)
        child(INDEX_CHILD, sweep, True, env)  # fill the cache
        results["app_cached"] = child(APP_CHILD, sweep, True, env)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    ic, ih, ac, ah = (results[k] for k in ("index_cold", "index_cached", "app_cold", "app_cached"))
    print(f"{'':28}{'first row':>11}{'full table':>12}{'peak RSS':>10}")
    print(f"{'index, no cache':28}{ic['first_s']:>10.3f}s{ic['full_s']:>11.2f}s{ic['rss_mb']:>8.0f}MB"
          f"   {ic['runs']:,} runs; {ic['helpers']} helper process(es), {ic['helper_rss_mb']:.0f} MB each at most")
    print(f"{'index, cached':28}{ih['first_s']:>10.3f}s{ih['full_s']:>11.2f}s{ih['rss_mb']:>8.0f}MB"
          f"   {ih['cache_hits']:,} cache hits")
    print(f"{'app (runs screen), no cache':28}{ac['first_row_s']:>10.3f}s{ac['full_table_s']:>11.2f}s"
          f"{ac['rss_mb']:>8.0f}MB   {ac['rows']:,} rows; filter {ac['filter_s'] * 1000:.0f} ms, "
          f"sort {ac['sort_s'] * 1000:.0f} ms; helpers {ac['helper_rss_mb']:.0f} MB each at most")
    print(f"{'app (runs screen), cached':28}{ah['first_row_s']:>10.3f}s{ah['full_table_s']:>11.2f}s"
          f"{ah['rss_mb']:>8.0f}MB")
    print(f"(times from process start, imports included; warm page cache; {os.cpu_count()} CPUs, KTUI_JOBS="
          f"{os.environ.get('KTUI_JOBS', 'default')}; targets: first row <= 1 s, RSS <= 200 MB)")


if __name__ == "__main__":
    main()
