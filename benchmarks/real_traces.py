"""Read real traces of other harnesses and print what ktui got out of each, one markdown row a file.

    python benchmarks/real_traces.py [--label NAME] [--totals] FILE_OR_GLOB...

Run it once with the code before a change (``PYTHONPATH=<old checkout>`` from a directory outside
the repository) and once after, and compare: see benchmarks/results/real_traces.md. Columns:
format, turns, tool calls (paired with a result), kernel versions (partial / unknown content),
verifier results pinned to versions, problems (errors / warnings), tokens in / out, model seconds
over the run's span, the final kernel and the run's recorded result. ``--totals``: one row of
sums over all the files instead (files, files with a problem, turns, calls paired / calls,
problems, tokens in / out, model seconds, files whose model time exceeds their span), then the
problems grouped by message (numbers and quoted names folded).
"""

from __future__ import annotations

import glob
import sys


def row(path: str) -> str:
    from ktui.trace.importers import load

    run = load(path)
    calls = len(run.calls)
    paired = sum(1 for c in run.calls if c.result is not None)
    ks = run.kernels
    part = sum(1 for k in ks if k.partial and not k.attachment)
    unk = sum(1 for k in ks if k.attachment)
    verdicts = sum(1 for k in ks for u in k.uses if u.verdict)
    errs = sum(1 for p in run.problems if p.severity == "error")
    warns = len(run.problems) - errs
    llm = (run.llm_ms or 0) / 1000  # the run's model time as ktui shows it (concurrent calls: their union)
    span = (run.wall_ms or 0) / 1000
    m = run.metrics
    res = "—" if m is None else f"{'ok' if m.correct else ('fail' if m.correct is False else '?')}" + (
        f" {m.speedup:g}x" if m.speedup is not None else "")
    fk = run.final_kernel
    name = path.rsplit("/", 1)[-1]
    name = name if len(name) <= 60 else name[:57] + "..."
    return (f"| {name} | {run.format} | {len(run.turns)} | {paired}/{calls} | {len(ks)} ({part}/{unk}) | {verdicts} "
            f"| {errs}/{warns} | {run.tokens_in:,}/{run.tokens_out:,} | {llm:.1f}/{span:.1f} "
            f"| {fk.label if fk else '—'} | {res} |")


def totals(files: list[str]) -> None:
    import collections
    import re

    from ktui.trace.importers import load

    t: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    for f in files:
        run = load(f)
        t["files"] += 1
        t["with problems"] += bool(run.problems)
        t["turns"] += len(run.turns)
        t["calls"] += len(run.calls)
        t["paired"] += sum(1 for c in run.calls if c.result is not None)
        t["errors"] += sum(1 for p in run.problems if p.severity == "error")
        t["warnings"] += sum(1 for p in run.problems if p.severity != "error")
        t["in"] += run.tokens_in
        t["out"] += run.tokens_out
        llm = run.llm_ms or 0
        t["model ms"] += llm
        t["model > span"] += llm > (run.wall_ms or 0) * 1.01 + 1000
        for p in run.problems:
            kinds[(p.severity, re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "N", p.message)[:100])] += 1
    print("| files | with problems | turns | calls paired | problems (err/warn) | tokens in/out | model s "
          "| model > span |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {t['files']} | {t['with problems']} | {t['turns']:,} | {t['paired']:,}/{t['calls']:,} "
          f"| {t['errors']}/{t['warnings']} | {t['in']:,}/{t['out']:,} | {t['model ms'] / 1000:,.0f} "
          f"| {t['model > span']} |")
    for (sev, msg), n in kinds.most_common(30):
        print(f"- {n} x {sev}: {msg}")


def main(argv: list[str]) -> int:
    label = ""
    if argv[:1] == ["--label"]:
        label, argv = argv[1], argv[2:]
    show_totals = "--totals" in argv
    argv = [a for a in argv if a != "--totals"]
    files: list[str] = []
    for a in argv:
        got = sorted(glob.glob(a))
        files += got if got else [a]
    if show_totals:
        if label:
            print(f"### {label}\n")
        totals(files)
        return 0
    if label:
        print(f"### {label}\n")
    print("| file | format | turns | calls paired | kernels (partial/unknown) | verdicts | problems (err/warn) "
          "| tokens in/out | model s / span s | final | result |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for f in files:
        try:
            print(row(f))
        except Exception as exc:  # noqa: BLE001 - a benchmark row, never a crash
            print(f"| {f.rsplit('/', 1)[-1]} | CRASH {type(exc).__name__}: {str(exc)[:60]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
