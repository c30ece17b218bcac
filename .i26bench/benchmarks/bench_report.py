"""Benchmark ``ktui report``: a 1,000-run sweep into one HTML file, and that file in a browser.

    python benchmarks/bench_report.py [--traces 1000] [--size-mb 40] [--dir DIR] [--keep] [--json]

The sweep is generated as ``bench_runs.py`` does (the seed run with its turns repeated, a
different model, problem, outcome and speedup each; one in ten a fixture of another variant;
every trace unique). Then, each in a fresh process:

1. ``ktui report DIR -o report.html --no-cache`` (cold: no index cache): wall time, CPU time of
   all its processes (on a shared machine wall time includes waiting for a core), file size;
2. the same with the index cache written by (1);
3. headless Chromium (``/usr/bin/chromium`` through Playwright, when both are there) opens the
   file: time from navigation to the page's ready mark (table drawn, charts in the DOM) as the page
   measures it (``performance.now()``), the number of chart series, and the time to open one
   run's detail (decode + draw its transcript).

Targets (issue 14): report in under 10 s, the browser ready in under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_runs import generate  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def run_report(sweep: Path, out: Path, cache_dir: Path, no_cache: bool) -> dict:
    env = dict(os.environ, KTUI_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "ktui", "report", str(sweep), "-o", str(out)]
    if no_cache:
        cmd.append("--no-cache")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise SystemExit(f"ktui report failed ({p.returncode}): {p.stderr[-2000:]}")
    return {"wall_s": wall, "cpu_s": cpu, "bytes": out.stat().st_size, "load_avg": os.getloadavg()[0],
            "message": p.stderr.strip().splitlines()[-1]}


def in_browser(html: Path) -> dict | None:
    if not Path(CHROMIUM).exists():
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            t0 = time.perf_counter()
            page.goto(html.as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            outside = time.perf_counter() - t0
            ready_ms = page.evaluate("performance.now()")
            nav = page.evaluate("(() => { const e = performance.getEntriesByType('navigation')[0];"
                                " return {dcl: e.domContentLoadedEventEnd, load: e.loadEventEnd}; })()")
            series = page.eval_on_selector_all("svg.chart g.series", "n => n.length")
            rows = page.eval_on_selector_all("#runs tbody tr", "n => n.length")
            t1 = time.perf_counter()
            page.click("#runs tbody tr >> nth=0")
            page.wait_for_selector("#detail[data-state='ready']", timeout=60_000)
            detail = time.perf_counter() - t1
            t2 = time.perf_counter()
            page.click("#runs thead th >> nth=8")  # sort by speedup
            page.wait_for_function("document.querySelector('#runs thead th.sorted-asc') !== null")
            sort = time.perf_counter() - t2
        finally:
            b.close()
    return {"open_to_ready_s": outside, "page_ready_ms": ready_ms, "dom_content_loaded_ms": nav["dcl"],
            "load_event_ms": nav["load"], "series": series, "rows": rows, "detail_s": detail, "sort_s": sort}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=int, default=1000)
    ap.add_argument("--size-mb", type=float, default=40.0, help="total size of the generated sweep")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    base = a.dir or Path(tempfile.mkdtemp(prefix="ktui-bench-report-"))
    try:
        gen = generate(base, a.traces, a.size_mb)
        sweep, out, cache = base / "sweep", base / "report.html", base / "cache"
        cold = run_report(sweep, out, cache, no_cache=True)
        run_report(sweep, out, cache, no_cache=False)  # writes the index cache
        warm = run_report(sweep, out, cache, no_cache=False)
        browser = in_browser(out)
        res = {"sweep": gen, "report_cold": cold, "report_index_cached": warm, "browser": browser,
               "cpus": os.cpu_count()}
        if a.json:
            print(json.dumps(res, indent=2))
            return
        print(f"sweep: {gen['traces']:,} traces, {gen['bytes'] / 1e6:.1f} MB ({os.cpu_count()} CPUs)")
        print(f"ktui report, no index cache:   {cold['wall_s']:6.2f} s wall, {cold['cpu_s']:.2f} s CPU "
              f"(all processes) -> {cold['bytes'] / 1e6:.1f} MB  (target < 10 s)")
        print(f"ktui report, index cached:     {warm['wall_s']:6.2f} s wall, {warm['cpu_s']:.2f} s CPU")
        print(f"machine load average during the runs: {cold['load_avg']:.1f} / {warm['load_avg']:.1f} "
              "(wall time above CPU time is time spent waiting for a core)")
        if browser is None:
            print("browser: skipped (no /usr/bin/chromium or no playwright)")
        else:
            print(f"chromium: ready {browser['page_ready_ms'] / 1000:6.2f} s after navigation start "
                  f"(DOMContentLoaded {browser['dom_content_loaded_ms'] / 1000:.2f} s, "
                  f"load {browser['load_event_ms'] / 1000:.2f} s; target < 2 s)")
            print(f"          {browser['series']} chart series, {browser['rows']:,} table rows; "
                  f"one run's detail {browser['detail_s'] * 1000:.0f} ms; sort {browser['sort_s'] * 1000:.0f} ms")
    finally:
        if not a.keep and a.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
