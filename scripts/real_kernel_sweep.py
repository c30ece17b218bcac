"""Write a sweep of REAL kernels, written by others, as traces for ``ktui verify`` on a GPU.

The false-flag corpus of issue 26 (``scripts/honest_corpus.py``) reads these kernels statically;
this script turns them into traces that ``ktui verify`` can re-execute, so that the same kernels
are judged dynamically (every probe) on a GPU, and so that issue 23's benchmark has a sweep of real
kernels over many problems:

- ``anneouyang/KernelBenchLeaderboard`` @ 170ca79: the solutions that passed KernelBench L1/L2
  (``docs/assets/data.json``: problem, model, ``torch_speedup``; ``docs/assets/solutions/*.py``);
- ``ScalingIntelligence/KernelBench`` @ 423217d (MIT): each problem's reference.

Neither is copied into ktui (the leaderboard has no licence): the traces are written to a folder
the user names (ignored by git), from git mirrors read with ``git show``. Each trace is a TEST
TRACE in the ensemble shape (its first system note says who wrote it and where the kernel comes
from); the recorded result is the leaderboard's: passed, with its speedup over eager torch (the
leaderboard gives only the ratio, so the recorded times are that ratio over a 1 ms reference, in
the harness's own unit: milliseconds under ``runtime_us``).

Usage::

    python scripts/real_kernel_sweep.py OUT --leaderboard DIR --kernelbench DIR [--n 36] [--per-problem 2]

Prints the traces written. Problems are taken in a fixed shuffled order (seed 26) so that L1 and
L2 mix; kernels whose static findings name a hack class in ``honest_corpus.py`` are kept: the
dynamic judgement is what this sweep is for.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import honest_corpus as HC  # noqa: E402

_spec = importlib.util.spec_from_file_location("_ktui_repro_fixtures", REPO / "tests/fixtures/repro/make_fixtures.py")
assert _spec and _spec.loader
W = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(W)


def pick(leaderboard: str, kernelbench: str, n: int, per_problem: int, levels: set[int]) -> list[dict]:
    refs = HC.References(kernelbench)
    data = json.loads(HC.git_show(leaderboard, HC.PINS["leaderboard"], "docs/assets/data.json") or "{}")
    problems = sorted(data)
    random.Random(26).shuffle(problems)
    rows: list[dict] = []
    for problem in problems:
        m = re.match(r"Level (\d): (\d+)_", problem)
        if not m or int(m.group(1)) not in levels:
            continue
        ref = refs.get(int(m.group(1)), int(m.group(2)))
        if not ref:
            continue
        taken = 0
        for s in sorted(data[problem], key=lambda s: s.get("file", "")):
            code = HC.git_show(leaderboard, HC.PINS["leaderboard"], f"docs/assets/solutions/{s['file']}.py")
            if not code or "ModelNew" not in code or not ("load_inline" in code or "triton" in code):
                continue
            sp = s.get("torch_speedup")
            rows.append({"problem": problem, "level": int(m.group(1)), "number": int(m.group(2)), "file": s["file"],
                         "model": s.get("display_name", "?"), "speedup": float(sp) if isinstance(sp, (int, float))
                         and sp > 0 else 1.0, "code": code, "reference": ref})
            taken += 1
            if taken >= per_problem:
                break
        if len(rows) >= n:
            break
    return rows[:n]


def write(out: Path, row: dict) -> Path:
    name = f"lb_L{row['level']}_{row['number']:03d}_{row['file'][:8]}"
    w = W.Writer(name, "")
    src = f"KernelBenchLeaderboard@{HC.PINS['leaderboard']}:docs/assets/solutions/{row['file']}.py"
    for e in w.events:
        p = e["payload"]
        note = p.get("note") if p.get("kind") == "system" else None
        if isinstance(note, str) and note.startswith("TEST TRACE"):
            p["note"] = (f"TEST TRACE for ktui's verify of real kernels ({name}): written by "
                         "scripts/real_kernel_sweep.py, not produced by an agent. The kernel is a passing "
                         f"KernelBench leaderboard solution by {row['model']} ({src}); the reference is "
                         f"KernelBench@{HC.PINS['kernelbench']} {row['problem']}.")
        elif isinstance(note, str) and '"agent_spawned"' in note:
            d = json.loads(note)
            d["model"] = f"leaderboard/{row['model']}"
            p["note"] = json.dumps(d)
        r = p.get("result")
        if p.get("name") == "fetch_problem" and isinstance(r, dict):
            fname = row["problem"].split(": ", 1)[-1] + ".py"
            r.update(ref_arch_src=row["reference"], ref_arch_chars=len(row["reference"]), name=fname,
                     level=row["level"], problem_id=row["number"], backend="cuda", precision="fp32")
        d = p.get("diff")
        if isinstance(d, dict) and d.get("field") == "problem" and isinstance(d.get("new"), dict):
            d["new"].update(level=row["level"], problem_id=row["number"], name=row["problem"].split(": ", 1)[-1] + ".py")
    code = row["code"]
    w.compile_ok(code)
    w.correctness_ok(code)
    w.submit(code, round(1.0 / row["speedup"], 6), 1.0)  # PopcornBench stores ms under *_us
    for e in w.events[-6:]:
        r = e["payload"].get("result")
        if isinstance(r, dict):
            for k in ("runtime_stats", "ref_runtime_stats"):
                if isinstance(r.get(k), dict):
                    r[k].update(hardware="KernelBench leaderboard GPU", device="cuda", median=r[k].get("mean"))
    w.end()
    p = out / f"{name}.jsonl"
    with open(p, "w", encoding="utf-8") as fh:
        for e in w.events:
            fh.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--leaderboard", required=True, help="git dir of anneouyang/KernelBenchLeaderboard")
    ap.add_argument("--kernelbench", required=True, help="git dir of ScalingIntelligence/KernelBench")
    ap.add_argument("--n", type=int, default=36)
    ap.add_argument("--per-problem", type=int, default=2)
    ap.add_argument("--levels", default="1,2")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = pick(a.leaderboard, a.kernelbench, a.n, a.per_problem, {int(x) for x in a.levels.split(",")})
    for row in rows:
        print(write(out, row))
    print(f"{len(rows)} kernels over {len({r['problem'] for r in rows})} problems", file=sys.stderr)
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main())
