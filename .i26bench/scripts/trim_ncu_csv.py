"""Trim an ``ncu --csv --page raw`` file to the columns ktui reads (keeps fixtures small).

    python scripts/trim_ncu_csv.py raw_full.csv > raw_trimmed.csv

Keeps the identity columns (ID ... CC) and every metric column that ``ktui.repro.profile``
looks at: the explicit ``--metrics`` list, their alternative names across ncu versions
(``smsp__...per_cycle_elapsed``, ``gpu__dram_throughput``), every warp-stall reason column
and the tensor-core op counters. Rows and values are copied unchanged.
"""

from __future__ import annotations

import csv
import re
import sys

from ktui.repro.profile import metrics as M

META = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
        "Grid Size", "Device", "CC")


def wanted(name: str) -> bool:
    if name in META or name in M.NCU_METRICS:
        return True
    alts = {a for p in ("f", "h", "d") for op in ("add", "mul", "fma") for a in M.sass_op_alternatives(p, op)}
    if name in alts:
        return True
    return bool(re.match(r"^(smsp__pcsamp_warps_issue_stalled_|smsp__average_warps_issue_stalled_|"
                         r"sm__ops_path_tensor_)", name)) and not name.endswith(
        (".avg", ".min", ".max", ".per_second", ".per_cycle_elapsed", ".pct_of_peak_sustained_elapsed"))


def main() -> None:
    rows = list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))
    keep = [i for i, h in enumerate(rows[0]) if wanted(h)]
    out = csv.writer(sys.stdout, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for r in rows:
        out.writerow([r[i] if i < len(r) else "" for i in keep])


if __name__ == "__main__":
    main()
