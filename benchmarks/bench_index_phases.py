"""Counted instructions (valgrind's callgrind) of the sweep index's phases: figures the machine's
load does not change, to compare two commits on a shared machine.

    python benchmarks/bench_index_phases.py walk TREE [--src DIR]     # discover() of TREE (walk and records), twice
    python benchmarks/bench_index_phases.py first TREE [--src DIR]    # import, then to the first row (no cache)
    python benchmarks/bench_index_phases.py phases TREE [--src DIR] [--files 40] [--glob 'l*/*/trace.jsonl']

``phases``: each step of :func:`ktui.trace.index.skim.summarize` over ``--files`` files (after 20
to warm the imports and caches), per file: the format's detection, the row skim's loop without
its ``finish``, ``finish``, ``attach``, ``summary_of_run``, the whole ``summarize``, and the bare
orjson loop over the same files (``split`` and ``orjson.loads`` of each line, then with the
envelope's four reads). ``--src``: the ``ktui`` package under DIR (a ``git archive`` of another
commit; compile its bytecode first, ``python -m compileall DIR/ktui``, or neither tree's) instead
of the installed one. A child runs under callgrind with ``PYTHONHASHSEED=0`` and marks each
phase with ``os.getppid()`` (``--dump-before=getppid``). Kernel work (page faults, the reads) is
not counted.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile


def _use_src(src: str | None) -> None:
    if src:  # the editable install's finder would win over sys.path: drop it
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()
                            and "editable" not in type(f).__module__.lower()]
        sys.path.insert(0, src)


def child_walk(tree: str) -> list[str]:
    from ktui.trace.index import discover
    from ktui.trace.index.records import Records

    os.getppid()
    discover(tree, [], Records())
    os.getppid()
    discover(tree, [], Records())
    os.getppid()
    return ["walk and records, first", "walk and records, second"]


def child_first(tree: str) -> list[str]:
    os.getppid()
    from ktui.trace.index import SweepIndex

    os.getppid()
    for _ in SweepIndex(tree, use_cache=False).summaries():
        os.getppid()
        os._exit(0)
    return []


FIRST_PHASES = ["import of ktui.trace.index", "then to the first row"]


def child_phases(tree: str, pattern: str, n: int) -> list[str]:
    import orjson

    from ktui.trace import importers
    from ktui.trace.index import rowskim, skim
    from ktui.trace.index.summary import TraceFile
    from ktui.trace.results import attach

    files = sorted(glob.glob(os.path.join(tree, pattern)))[: 20 + n]
    tfs = []
    for f in files:
        st = os.stat(f)
        tfs.append(TraceFile(f, f, st.st_size, st.st_mtime_ns, False, f))
    for tf in tfs[:20]:
        skim.summarize(tf)
    tfs = tfs[20:]
    datas = []
    for tf in tfs:
        with open(tf.real, "rb") as fh:
            datas.append(fh.read())
    orig = rowskim._Rows.finish
    held: list = []

    def hold(self, n_events):
        held.append((self, n_events))
        return self.run

    os.getppid()
    for tf, d in zip(tfs, datas, strict=True):
        importers.choose(tf.real, data=d)
    os.getppid()
    rowskim._Rows.finish = hold  # type: ignore[method-assign]
    for tf, d in zip(tfs, datas, strict=True):
        rowskim.row_run(tf.path, d)
    rowskim._Rows.finish = orig  # type: ignore[method-assign]
    os.getppid()
    runs = [b.finish(k) for b, k in held]
    os.getppid()
    runs = [attach(r) for r in runs]
    os.getppid()
    for tf, r in zip(tfs, runs, strict=True):
        skim.summary_of_run(r, tf)
    os.getppid()
    for tf in tfs:
        skim.summarize(tf)
    os.getppid()
    loads = orjson.loads
    for d in datas:
        for line in d.split(b"\n"):
            if line:
                loads(line)
    os.getppid()
    for d in datas:
        for line in d.split(b"\n"):
            if line:
                o = loads(line)
                p = o["payload"]
                _ = p["kind"], o["ts_ms"], o["actor"]
    os.getppid()
    return ["importers.choose", "row skim loop (no finish)", "finish", "attach", "summary_of_run", "summarize (whole)",
            "orjson loop (split, loads)", "orjson loop and the envelope's reads"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("walk", "first", "phases"))
    ap.add_argument("tree")
    ap.add_argument("--src")
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--glob", default="l*/*/trace.jsonl", help="files under TREE (default: bench_runs' seed runs)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _use_src(a.src)
        if a.what == "walk":
            child_walk(a.tree)
        elif a.what == "first":
            child_first(a.tree)
        else:
            child_phases(a.tree, a.glob, a.files)
        return
    names = {"walk": ["walk and records, first", "walk and records, second"], "first": FIRST_PHASES,
             "phases": ["importers.choose", "row skim loop (no finish)", "finish", "attach", "summary_of_run",
                        "summarize (whole)", "orjson loop (split, loads)", "orjson loop and the envelope's reads"]}[a.what]
    per = a.files if a.what == "phases" else 1
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONHASHSEED="0")
        cmd = ["valgrind", "--tool=callgrind", "--dump-before=getppid", f"--callgrind-out-file={d}/cg",
               sys.executable, os.path.abspath(__file__), a.what, os.path.abspath(a.tree), "--files", str(a.files),
               "--glob", a.glob, "--child"] + (["--src", os.path.abspath(a.src)] if a.src else [])
        subprocess.run(cmd, env=env, cwd="/", capture_output=True, check=False)
        for i, name in enumerate(names, 2):  # cg.1 is everything before the first mark
            try:
                with open(f"{d}/cg.{i}") as f:
                    total = next(int(line.split()[1]) for line in f if line.startswith(("totals:", "summary:")))
            except (OSError, StopIteration):
                print(f"{name}: not measured")
                continue
            print(f"{a.src or 'installed'}: {name}: {total / per / 1e6:,.2f} M instructions" + (" a file" if per > 1 else ""))


if __name__ == "__main__":
    main()
