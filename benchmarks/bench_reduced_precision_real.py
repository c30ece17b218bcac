"""reduced_precision on real kernels others wrote that run on the CPU: KernelBench problems solved in
torch by a model (pango0/KernelBench-Agentic @ 6b0549d, MIT: Qwen zero-shot, guided and iterative
runs), each with its KernelBench reference, through ktui's sandboxed judge (``run_request``, the
API ``ktui repro`` uses) on the CPU. None of them may be flagged reduced_precision.

    python scripts/honest_corpus.py ... (the kernel list: see --rows) ;
    python benchmarks/bench_reduced_precision_real.py --rows ROWS.json --level 1 --budget 1500 --out OUT.json

``ROWS.json``: rows of scripts/honest_corpus.py (``source``, ``code``, ``reference``) whose kernel
has a ``class ModelNew`` and no extension, Triton, TileLang, CuTe or Numba code (written by the
command in benchmarks/results/reduced_precision_cpu.md). A kernel whose run does not finish in
``--timeout`` seconds is listed as not judged here. The references' sizes are divided by
``--shrink`` (module-level integers of 64 or more; the kernels read their sizes from the inputs).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ktui.repro.runner import run_request  # noqa: E402

_CONST = re.compile(r"^([A-Za-z_]\w*)\s*=\s*([0-9][0-9\s*+\-/()]*)\s*(#.*)?$")


def shrink(reference, factor):
    """The reference with its module-level integer sizes of 64 or more divided by ``factor`` (a
    KernelBench L1 problem is 10-100 GFLOP a call: minutes a run on a loaded 2-core CPU). Lines
    other than ``NAME = <integer arithmetic>`` are kept as they are."""
    if factor <= 1:
        return reference
    out = []
    for line in reference.splitlines():
        m = _CONST.match(line)
        if m:
            try:
                v = eval(m.group(2), {"__builtins__": {}}, {})  # digits and + - * / ( ) only (the regex)
            except Exception:  # noqa: BLE001
                v = None
            if isinstance(v, int) and v >= 64:
                line = f"{m.group(1)} = {max(16, v // factor)}  # ktui bench: {m.group(2).strip()} / {factor}"
        out.append(line)
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", required=True)
    ap.add_argument("--level", default="", help="only problems of these levels (e.g. 1 or 12)")
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--budget", type=float, default=1500.0, help="start no kernel after this many seconds")
    ap.add_argument("--out", default="")
    ap.add_argument("--shrink", type=int, default=16, help="divide the references' sizes of 64 or more by this")
    args = ap.parse_args(argv)
    rows = json.loads(Path(args.rows).read_text())
    if args.level:
        rows = [r for r in rows if (m := re.search(r"level_(\d)_", r["source"])) and m.group(1) in args.level]
    t0 = time.monotonic()
    table = []
    for r in rows:
        if time.monotonic() - t0 > args.budget:
            table.append({"source": r["source"], "state": "not started (budget)"})
            continue
        with tempfile.TemporaryDirectory(prefix="ktui-prec-real-") as tmp:
            req = {"kernel_code": r["code"], "reference_source": shrink(r["reference"], args.shrink), "device": "cpu", "trials": 3,
                   "correctness_trials": 2, "build_root": str(Path(tmp) / "build")}
            s0 = time.monotonic()
            try:
                res = run_request(req, run_timeout=args.timeout, compile_timeout=120)
            except Exception as exc:  # noqa: BLE001 - a row, whatever happened
                table.append({"source": r["source"], "state": f"harness error: {exc!r}"[:200]})
                continue
        checks = {c["name"]: c for c in res.get("checks") or []}
        c = checks.get("reduced_precision") or {}
        row = {"source": r["source"], "state": res.get("status"), "seconds": round(time.monotonic() - s0, 1),
               "correct": (res.get("correctness") or {}).get("passed"), "reduced_precision_ok": c.get("ok"),
               "detail": (c.get("detail") or "")[:300],
               "failure": ((res.get("failure") or {}).get("message") or "")[:160] if res.get("failure") else None,
               "probe_s": ((res.get("probes") or {}).get("reduced_precision") or {}).get("seconds")}
        table.append(row)
        print(json.dumps(row), flush=True)
    flagged = [t for t in table if t.get("reduced_precision_ok") is False]
    judged = [t for t in table if t.get("reduced_precision_ok") is not None]
    print(f"{len(table)} kernels, {len(judged)} judged by reduced_precision, {len(flagged)} flagged", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(table, indent=1))
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
