"""CPU of ``ktui runs TREE --format json`` by phase, in this process (run it with the index cache
filled, so that the scan is the cached one): the scan, the charts, ``safe_data``, the JSON text.

    KTUI_CACHE_DIR=C python -m ktui runs TREE --format json > /dev/null    # fill the cache
    KTUI_CACHE_DIR=C PYTHONPATH=<tree> python benchmarks/bench_runs_output.py TREE
"""

from __future__ import annotations

import io
import json
import sys
import time

from ktui.report import runs as R


def main() -> None:
    phases: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*a, **kw):
            t = time.process_time()
            r = fn(*a, **kw)
            phases[name] = phases.get(name, 0.0) + time.process_time() - t
            return r
        return wrapper

    orig = R.SweepIndex.summaries

    def summaries(self, *a):
        t = time.process_time()
        yield from orig(self, *a)
        phases["scan (main process)"] = time.process_time() - t

    R.SweepIndex.summaries = summaries  # type: ignore[method-assign]
    R.safe_data = timed("safe_data", R.safe_data)
    R._charts_json = timed("charts", R._charts_json)
    if hasattr(R, "_json_text"):
        R._json_text = timed("json text", R._json_text)
    else:  # before the JSON text had its own function
        R.json.dump = timed("json text", R.json.dump)
    t0 = time.process_time()
    R.runs_print(sys.argv[1], "json", True, out=io.StringIO())
    phases["total"] = time.process_time() - t0
    print(json.dumps({k: round(v, 2) for k, v in phases.items()}))


if __name__ == "__main__":
    main()
