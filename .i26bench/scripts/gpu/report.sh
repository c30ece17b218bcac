#!/usr/bin/env bash
# `ktui report` on a 1,000-run synthetic sweep (issue 14), on an idle many-core machine (the H200
# host: 16 cores), for figures not disturbed by other work. Needs no GPU; run from the repository
# root. Writes 2 files under $OUT, finishes within ~4 minutes:
#
#   report_bench.txt   environment, then `python benchmarks/bench_report.py` (1,000 runs), its table
#   report_bench.json  the same measurement as --json (a second run)
#
# The browser part is skipped when /usr/bin/chromium or playwright is missing there.
set -u
: "${OUT:?set OUT to the output folder}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{
  date -u; nproc; uptime
  python3 -c "import sys; print(sys.version.split()[0])"
  python3 -c "import rich, orjson, click; print('rich, orjson, click: ok')" || echo "missing: rich/orjson/click"
  git log -1 --oneline 2>/dev/null || true
  echo '$ python3 benchmarks/bench_report.py --traces 1000'
  timeout 110 python3 benchmarks/bench_report.py --traces 1000
  echo "rc=$?"
} > "$OUT/report_bench.txt" 2>&1
timeout 110 python3 benchmarks/bench_report.py --traces 1000 --json > "$OUT/report_bench.json" 2>> "$OUT/report_bench.txt"
echo "json rc=$?" >> "$OUT/report_bench.txt"
