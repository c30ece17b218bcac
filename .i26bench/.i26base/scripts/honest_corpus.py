"""The false-flag corpus: ktui's static findings over honest kernels that OTHERS wrote.

A flag on an honest kernel costs more trust than a missed hack, so this runs
:func:`ktui.trace.findings.source_findings` (the same analysis ``ktui repro`` / ``verify`` /
the app pin to turns) over passing kernels from public sources, each with its problem's
reference, and prints one row per kernel with the classes found.

None of these sources is copied into ktui (the KernelBench leaderboard and the Harbor sweep
carry no licence); the script reads them from git mirrors at pinned commits:

- ``anneouyang/KernelBenchLeaderboard`` @ 170ca79: ``docs/assets/data.json`` lists, per
  KernelBench problem, the solutions that passed with their speedups (``docs/assets/solutions``);
- ``ScalingIntelligence/KernelBench`` @ 423217d (MIT): the problems' references
  (``KernelBench/level{1,2,3}``) and its own example ``ModelNew`` kernels (CUDA, Triton);
- ``lilian-muyaoli/kernelbench-harbor`` @ 6b82a1c: Harbor (terminus) agent runs with
  ``reward.json``; the final kernel version of every run rewarded > 0 (imported by ktui's
  Harbor importer, every kernel version and the agents' own test scripts included).

Usage::

    python scripts/honest_corpus.py --leaderboard DIR --kernelbench DIR --harbor DIR [--limit N] [--json OUT]

where each DIR is a git directory (a bare mirror works: files are read with ``git show``). A
source left out is skipped. Without mirrors, clone the three repositories at the commits above.
Exit status 1 when any kernel has a hack class (every class but ``no_gpu_code``).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ktui.trace.findings import source_findings  # noqa: E402

PINS = {"leaderboard": "170ca79", "kernelbench": "423217d", "harbor": "6b82a1c"}
#: classes that say nothing bad about an honest kernel (a plain torch kernel is not a hack)
NOT_HACKS = {"no_gpu_code"}


def git_show(repo: str, rev: str, path: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True, check=True,
                              timeout=60).stdout.decode("utf-8", "replace")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return None


def git_ls(repo: str, rev: str, under: str) -> list[str]:
    try:
        out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, under], capture_output=True,
                             check=True, timeout=60).stdout.decode()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return []
    return out.split()


class References:
    def __init__(self, kernelbench: str | None):
        self.repo = kernelbench
        self.paths: dict[tuple[int, int], str] = {}
        if kernelbench:
            for p in git_ls(kernelbench, PINS["kernelbench"], "KernelBench"):
                m = re.match(r"KernelBench/level(\d)/(\d+)_", p)
                if m:
                    self.paths[(int(m.group(1)), int(m.group(2)))] = p

    def get(self, level: int, number: int) -> str | None:
        p = self.paths.get((level, number))
        return git_show(self.repo, PINS["kernelbench"], p) if (p and self.repo) else None


def leaderboard(repo: str, refs: References, limit: int | None) -> list[dict]:
    data = json.loads(git_show(repo, PINS["leaderboard"], "docs/assets/data.json") or "{}")
    rows = []
    for problem, sols in data.items():
        m = re.match(r"Level (\d): (\d+)_", problem)
        ref = refs.get(int(m.group(1)), int(m.group(2))) if m else None
        for s in sols:
            path = f"docs/assets/solutions/{s['file']}.py"
            code = git_show(repo, PINS["leaderboard"], path)
            if code is None:
                continue
            rows.append({"source": f"KernelBenchLeaderboard@{PINS['leaderboard']}:{path}", "problem": problem,
                         "author": s.get("display_name", "?"), "code": code, "reference": ref,
                         "kind": "triton" if "triton" in code else "cuda"})
            if limit and len(rows) >= limit:
                return rows
    return rows


def kernelbench_examples(repo: str) -> list[dict]:
    rows = []
    for p in git_ls(repo, PINS["kernelbench"], "src/kernelbench/prompts"):
        name = p.rsplit("/", 1)[-1]
        if not (name.startswith("model_new_ex") and name.endswith(".py")):
            continue
        code = git_show(repo, PINS["kernelbench"], p)
        ref = git_show(repo, PINS["kernelbench"], p.replace("model_new_ex", "model_ex")) or None
        if code and "ModelNew" in code:
            rows.append({"source": f"KernelBench@{PINS['kernelbench']}:{p}", "problem": name, "author": "KernelBench",
                         "code": code, "reference": ref,
                         "kind": "triton" if "triton" in code else "cuda"})
    return rows


def harbor(repo: str) -> list[dict]:
    """Every kernel version (and script) of the Harbor runs that earned a reward."""
    from ktui.trace import load as load_run

    rows = []
    for p in git_ls(repo, PINS["harbor"], "results/jobs"):
        if not p.endswith("/reward.json"):
            continue
        try:
            reward = json.loads(git_show(repo, PINS["harbor"], p) or "null")
        except ValueError:
            continue
        val = reward.get("reward") if isinstance(reward, dict) else reward
        if not isinstance(val, (int, float)) or val <= 0:
            continue
        traj = git_show(repo, PINS["harbor"], p.replace("reward.json", "trajectory.json"))
        if not traj:
            continue
        task = p.split("/")[-2]
        task_ref = None
        for cand in git_ls(repo, PINS["harbor"], "subset_final"):
            if cand.endswith("environment/reference.py") and cand.split("/")[1].startswith(task.rstrip("_")[:24]):
                task_ref = git_show(repo, PINS["harbor"], cand)
                break
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            fh.write(traj)
        try:
            run = load_run(fh.name)
        except Exception as e:  # noqa: BLE001 - report, keep going
            print(f"# {p}: not imported: {e}", file=sys.stderr)
            continue
        finally:
            Path(fh.name).unlink(missing_ok=True)
        for kv in run.kernels:
            if not isinstance(kv.code, str) or kv.attachment:
                continue
            rows.append({"source": f"kernelbench-harbor@{PINS['harbor']}:{p.rsplit('/', 1)[0]} v{kv.number}"
                         f" ({kv.path or '?'})", "problem": task, "author": p.split("/")[2], "code": kv.code,
                         "reference": task_ref, "kind": "triton" if "triton" in kv.code else "cuda",
                         "final": kv is run.kernels[-1]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leaderboard")
    ap.add_argument("--kernelbench")
    ap.add_argument("--harbor")
    ap.add_argument("--limit", type=int, default=None, help="at most this many leaderboard kernels")
    ap.add_argument("--json", help="write every row (without the code) here")
    a = ap.parse_args(argv)
    refs = References(a.kernelbench)
    rows: list[dict] = []
    if a.leaderboard:
        rows += leaderboard(a.leaderboard, refs, a.limit)
    if a.kernelbench:
        rows += kernelbench_examples(a.kernelbench)
    if a.harbor:
        rows += harbor(a.harbor)
    counts: Counter[str] = Counter()
    flagged = 0
    for r in rows:
        found = source_findings(r["code"], r["reference"])
        r["classes"] = [f.code for f in found if f.code not in NOT_HACKS]
        r["findings"] = [{"class": f.code, "line": f.line, "what": f.what, "evidence": f.evidence}
                         for f in found if f.code not in NOT_HACKS]
        counts.update(set(r["classes"]))
        flagged += bool(r["classes"])
        print(f"{'FLAG' if r['classes'] else 'ok  '}  {r['kind']:6}  {r['source']}  "
              f"{','.join(r['classes']) or '-'}")
        for f in r["findings"]:
            print(f"        {f['class']}: line {f['line']}: {f['what'][:110]} | {f['evidence'][:90]}")
    kinds = Counter(r["kind"] for r in rows)
    print(f"\n{len(rows)} kernels ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); "
          f"{flagged} with a hack class; by class: {dict(counts.most_common())}")
    if a.json:
        Path(a.json).write_text(json.dumps([{k: v for k, v in r.items() if k not in ("code", "reference")}
                                            for r in rows], indent=1))
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
