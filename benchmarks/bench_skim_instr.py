"""Instructions (valgrind's callgrind) :func:`ktui.trace.index.summarize` costs a file: a count
that the machine's load does not change, to compare two commits on a shared machine.

    python benchmarks/bench_skim_instr.py TREE [--src DIR] [--files 40] [--glob 'l*/*/trace.jsonl']

Runs this script under callgrind in a child (``PYTHONHASHSEED=0``): 20 files to warm the imports
and caches, then ``--files`` files between two ``os.getppid()`` calls, at which callgrind dumps
its counters (``--dump-before=getppid``); the middle part's total over the files is printed.
Kernel work (page faults, the reads themselves) is not counted.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile


def child(tree: str, pattern: str, n: int) -> None:
    from ktui.trace.index import skim
    from ktui.trace.index.summary import TraceFile

    files = sorted(glob.glob(os.path.join(tree, pattern)))[: 20 + n]
    tfs = []
    for f in files:
        st = os.stat(f)
        tfs.append(TraceFile(f, f, st.st_size, st.st_mtime_ns, False, f))
    for tf in tfs[:20]:
        skim.summarize(tf)
    os.getppid()
    for tf in tfs[20:]:
        skim.summarize(tf)
    os.getppid()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree")
    ap.add_argument("--src", help="a ktui tree to measure (a git archive of a commit); default: the installed one")
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--glob", default="l*/*/trace.jsonl", help="files under TREE (default: bench_runs' seed runs)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.tree, a.glob, a.files)
        return
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONHASHSEED="0")
        if a.src:
            env["PYTHONPATH"] = os.path.abspath(a.src)
        subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=getppid", f"--callgrind-out-file={d}/cg",
                        sys.executable, os.path.abspath(__file__), a.tree, "--files", str(a.files), "--glob", a.glob,
                        "--child"], env=env, cwd="/", capture_output=True, check=True)
        with open(f"{d}/cg.2") as f:
            total = next(int(line.split()[1]) for line in f if line.startswith("totals:"))
    print(f"{a.src or 'installed'}: {total // a.files:,} instructions a file ({a.files} files)")


if __name__ == "__main__":
    main()
