"""The sweep index's cost a trace file, and what reading files ahead saves a cold scan.

    python benchmarks/bench_skim_file.py skim TREE [--src DIR] [--seed N] [--files 600] [--row on|off]
    python benchmarks/bench_skim_file.py scan TREE [--src DIR]
    python benchmarks/bench_skim_file.py readahead TREE [--ahead 8]
    python benchmarks/bench_skim_file.py cold TREE [--order orjson,index,index-full,orjson]
    python benchmarks/bench_skim_file.py split TREE [--jobs 1]
    python benchmarks/bench_skim_file.py formats TREE [--every 5]

``skim``: CPU time (``time.process_time``) of :func:`ktui.trace.index.summarize` a file, over
``--files`` files of TREE picked at random (``--seed``), after 60 of them to warm the imports
and the page cache. ``--src``: measure the ``ktui`` package under DIR (a ``git archive`` of
another commit) instead of the installed one; run it alternately with two trees, same seed, to
compare two commits on one machine at one moment.

``scan``: a whole scan of TREE in this one process (no index cache, no helpers): its CPU and
wall time; ``--src`` as for ``skim`` (alternate two archives to compare two commits).

``readahead``: every file of TREE read once, cold (each file's page cache dropped first with
``posix_fadvise(DONTNEED)``, as bench_runs.py does), plainly and then asking the kernel to read
``--ahead`` files ahead (:func:`ktui.trace.index.walk.willneed`): the wall time the disk costs
a scan that parses one file after another, and what the index's read-ahead takes off it.

``--row off``: the full reader and builder on every file (``KTUI_ROW_SKIM=0``), not the row skim
(:mod:`ktui.trace.index.rowskim`); ``read`` says how many files each read.

``cold``: bench_runs.py's own children, each after the tree's page cache is dropped: the bare
orjson loop (the anchor), the index without its cache (``SweepIndex(use_cache=False)``) and the
same with the full reader on every file (``index-full``), in the order given; one JSON line
each, with the load average when it ended.

``split``: a whole scan as ``ktui runs`` makes it (``SweepIndex(use_cache=False, jobs=--jobs)``,
the page cache as it is): its wall time and the CPU of this process and of its helpers apart
(``getrusage``), to see whether the fan-out keeps both skimmers busy.

``formats``: one file in ``--every`` of TREE summarised in this process, the CPU of each format's
files (``time.process_time``), after 50 to warm the imports.

``cli``: ``ktui runs TREE --format json --no-cache`` as a user runs it, cold (the tree's page cache
dropped before each run), for each ``--src`` in turn (a ``git archive`` of a commit; default: this
checkout), ``--rounds`` times, alternated, with the bare orjson loop (cold) at the start of each
round: wall time, CPU of all its processes, load average, rows, and a digest of the rows printed
(the same digest for two commits: the same rows, every field, in the same order; ``set_digest``: the
same rows, every field, whatever their order).

    python benchmarks/bench_skim_file.py cli TREE --src /tmp/before --src . --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path


def _use_src(src: str) -> None:
    # the editable install's finder would win over sys.path: drop it so that ``src`` is imported
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                        and "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, src)


def skim(tree: str, src: str | None, seed: int, n: int, row: str = "on") -> dict:
    os.environ["KTUI_ROW_SKIM"] = "0" if row == "off" else "1"
    if src:
        _use_src(src)
    import ktui
    from ktui.trace.index import discover, summarize
    from ktui.trace.index.records import Records

    files = discover(tree, [], Records())
    sel = random.Random(seed).sample(files, min(n, len(files)))
    for tf in sel[:60]:
        summarize(tf)
    t = time.process_time()
    for tf in sel:
        summarize(tf)
    from ktui.trace.index import rowskim

    return {"code": os.path.dirname(os.path.dirname(ktui.__file__)), "row_skim": row, "read": dict(rowskim.stats),
            "files": len(sel),
            "cpu_ms_per_file": round((time.process_time() - t) / len(sel) * 1000, 3),
            "load": round(os.getloadavg()[0], 2)}


def scan(tree: str, src: str | None) -> dict:
    """A whole scan in one process (``SweepIndex(use_cache=False, jobs=0)``), CPU and wall."""
    if src:
        _use_src(src)
    import ktui
    from ktui.trace.index import SweepIndex

    t, w = time.process_time(), time.perf_counter()
    n = sum(1 for _ in SweepIndex(tree, use_cache=False, jobs=0).summaries())
    return {"code": os.path.dirname(os.path.dirname(ktui.__file__)), "tree": tree, "runs": n,
            "cpu_s": round(time.process_time() - t, 2), "wall_s": round(time.perf_counter() - w, 2),
            "load": round(os.getloadavg()[0], 1)}


def readahead(tree: str, ahead: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_runs

    from ktui.trace.index.walk import willneed

    files = [os.path.join(d, f) for d, _, fs in os.walk(tree) for f in sorted(fs)]
    files = [f for f in files if not os.path.islink(f)]
    out = {"files": len(files)}
    for mode in ("plain", "ahead"):
        bench_runs.drop_page_cache(Path(tree))
        t, c = time.perf_counter(), time.process_time()
        for k, f in enumerate(files):
            if mode == "ahead":
                for j in range(k + 1 if k == 0 else k + ahead, min(k + ahead + 1, len(files))):
                    willneed(files[j])
            with open(f, "rb") as fh:
                fh.read()
        out[mode] = {"wall_s": round(time.perf_counter() - t, 3), "cpu_s": round(time.process_time() - c, 3)}
    out["load"] = round(os.getloadavg()[0], 2)
    return out


def cold(tree: str, order: str) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_runs

    out = []
    for what in order.split(","):
        env = dict(os.environ, KTUI_ROW_SKIM="0" if what == "index-full" else "1")
        bench_runs.drop_page_cache(Path(tree))
        code = bench_runs.ORJSON_CHILD if what == "orjson" else bench_runs.INDEX_CHILD
        res = bench_runs.child(code, Path(tree), False, env)
        out.append({"what": what, **res, "load": round(os.getloadavg()[0], 2)})
    return out


def split(tree: str, jobs: int) -> dict:
    import resource

    from ktui.trace.index import SweepIndex

    w = time.perf_counter()
    idx = SweepIndex(tree, use_cache=False, jobs=jobs)
    n = sum(1 for _ in idx.summaries())
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"runs": n, "helpers": idx.helpers_used, "wall_s": round(time.perf_counter() - w, 2),
            "cpu_self_s": round(me.ru_utime + me.ru_stime, 2), "cpu_helpers_s": round(kids.ru_utime + kids.ru_stime, 2),
            "load": round(os.getloadavg()[0], 2)}


def formats(tree: str, every: int) -> dict:
    from collections import defaultdict

    from ktui.trace.index import discover, summarize
    from ktui.trace.index.records import Records

    files = discover(tree, [], Records())[::every]
    for tf in files[:50]:
        summarize(tf)
    acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    start = time.process_time()
    for tf in files:
        t = time.process_time()
        s = summarize(tf)
        a = acc[s.format]
        a[0] += 1
        a[1] += time.process_time() - t
    total = time.process_time() - start
    return {"files": len(files), "cpu_ms_per_file": round(total / len(files) * 1000, 3),
            "by_format": {k: {"files": int(n), "cpu_ms_per_file": round(c / n * 1000, 3), "share": round(c / total, 3)}
                          for k, (n, c) in sorted(acc.items(), key=lambda x: -x[1][1])},
            "load": round(os.getloadavg()[0], 2)}


def cli(tree: str, srcs: list[str], rounds: int) -> list[dict]:
    import hashlib
    import resource
    import subprocess

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_runs

    out = []
    for r in range(rounds):
        bench_runs.drop_page_cache(Path(tree))
        res = bench_runs.child(bench_runs.ORJSON_CHILD, Path(tree), False, dict(os.environ))
        out.append({"round": r, "what": "orjson", "wall_s": round(res["full_s"], 2), "cpu_s": round(res["cpu_s"], 2),
                    "load": round(os.getloadavg()[0], 2)})
        print(json.dumps(out[-1]), flush=True)
        for src in srcs:
            src = os.path.abspath(src)
            bench_runs.drop_page_cache(Path(tree))
            cache = f"/tmp/ktui-bench-cli-cache-{os.getpid()}"
            env = dict(os.environ, PYTHONPATH=src, KTUI_CACHE_DIR=cache)
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "ktui", "runs", tree, "--format", "json", "--no-cache"],
                               env=env, capture_output=True, cwd="/", timeout=1800)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            rows = json.loads(p.stdout)["runs"] if p.returncode == 0 else []
            digest = hashlib.sha1(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
            # the rows whatever their order (the default order became natural order in speed36)
            by_path = sorted(rows, key=lambda r: (r.get("path", ""), r.get("key", "")))
            set_digest = hashlib.sha1(json.dumps(by_path, sort_keys=True).encode()).hexdigest()[:16]
            out.append({"round": r, "what": "ktui runs", "src": src, "rc": p.returncode, "wall_s": round(wall, 2),
                        "cpu_s": round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 2),
                        "rows": len(rows), "digest": digest, "set_digest": set_digest, "load": round(os.getloadavg()[0], 2)})
            print(json.dumps(out[-1]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("skim", "scan", "readahead", "cold", "split", "formats", "cli"))
    ap.add_argument("tree")
    ap.add_argument("--src", action="append", help="a ktui tree to measure (cli: several, alternated)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--ahead", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--order", default="orjson,index,orjson")
    ap.add_argument("--row", choices=("on", "off"), default="on",
                    help="skim: the row skim (on) or the full reader on every file (off, KTUI_ROW_SKIM=0)")
    a = ap.parse_args()
    if a.what == "cli":
        cli(a.tree, a.src or [str(Path(__file__).resolve().parents[1])], a.rounds)
        return
    a.src = a.src[-1] if a.src else None
    if a.what == "cold":
        for res in cold(a.tree, a.order):
            print(json.dumps(res), flush=True)
        return
    if a.what in ("split", "formats"):
        if a.src:
            _use_src(a.src)
        res = split(a.tree, a.jobs) if a.what == "split" else formats(a.tree, a.every)
    elif a.what == "scan":
        res = scan(a.tree, a.src)
    else:
        res = skim(a.tree, a.src, a.seed, a.files, a.row) if a.what == "skim" else readahead(a.tree, a.ahead)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
