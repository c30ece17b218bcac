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

Further sets (:data:`MORE`: KernelBench forks' run folders, KernelAgent artifacts, agents' sandboxes,
GPU MODE submissions) are read with ``--more NAME=DIR``; ``--harbor-all`` takes every Harbor run,
rewarded or not.

Usage::

    python scripts/honest_corpus.py --leaderboard DIR --kernelbench DIR [--harbor-all] --harbor DIR \
        [--more NAME=DIR ...] [--limit N] [--json OUT]

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

#: further public kernel sets (``--more NAME=DIR``): repository, commit, a path pattern naming the
#: kernel files, and where each kernel's reference is (``kb``: the KernelBench problem the path names,
#: from the repository's own ``KernelBench/level*`` copy or ScalingIntelligence's; a file name: the
#: file of that name next to the kernel). Every file the pattern matches is a row, passing or not:
#: a hack class on an honest kernel that failed is still a false flag.
MORE = {
    # KernelBench fork with runs of Gemini, Qwen3, Qwen-Coder and Opus 4 (eval_results.json beside them)
    "technoabsurdist": ("technoabsurdist/KernelBench", "9202a5c",
                        r"runs/[^/]*level(?P<level>\d)[^/]*/(?:level_\d_)?problem_(?P<problem>\d+)(?:_sample_\d+)?_kernel\.py$",
                        "kb"),
    # KernelBench fork with level-2 runs of Kimi K2 and grok-code-fast-1 in CUDA, Triton, CuTe, TileLang
    "hzeng2000": ("hzeng2000/KernelBench", "833e16d",
                  r"runs/[^/]+/level_(?P<level>\d)_problem_(?P<problem>\d+)_sample_\d+_kernel\.py$", "kb"),
    # zero-shot, guided and iterative agent runs (Qwen) on KernelBench levels 1-2
    "pango0": ("pango0/KernelBench-Agentic", "6b0549d",
               r"(?:zeroshot|guided|iterative)/.*level_(?P<level>\d)_problem_(?P<problem>\d+)_sample_\d+_kernel\.py$",
               "kb"),
    # KernelBench v3 raw CUDA run of Kimi K2 (metrics.yaml beside each kernel)
    "infatoshi": ("Infatoshi/KernelBench-v3", "25827f2",
                  r"runs/[^/]+/kernel_(?P<problem>\d+)_[^/]*/generated_code\.py$", "kb1"),
    # Meta's KernelAgent / KernelFalcon artifacts: Triton kernels for KernelBench L1-L3 problems
    "laurawly": ("Laurawly/kernelagent-artifacts", "14ed07a",
                 r"(?:kernel_code|generated_kernel|triton_kernel|composed_kernel)\.py$", "original.py|input_model.py"),
    # an RL project's example KernelBench solutions (CUDA)
    "yoenoo": ("yoenoo/eh_kernelbench", "5e83c45", r"examples/kernel_solutions/[^/]+\.py$", None),
    # agents (Claude, Codex, Kimi) writing RMSNorm / SwiGLU / SDPA-prelude kernels in a sandbox
    "ianbarber": ("ianbarber/kernelbench-agents-vs-compile", "cfbb6de", r"agent_loop/sandbox/[^/]+/candidate\.py$",
                  "reference.py"),
    # GPU MODE (popcorn) leaderboard submissions of one competitor (PMPP, AMD distributed), `custom_kernel(data)`
    "gaunernst": ("gau-nernst/gpu-mode-kernels", "0b216c3", r"/submission[^/]*\.py$", "reference.py"),
    # GPU MODE's problems and their example submissions
    "gpumode": ("gpu-mode/reference-kernels", "f83cb92", r"^problems/.*/submission[^/]*\.py$", "reference.py"),
    # GPU MODE (popcorn) leaderboard submissions: NVFP4 group GEMM
    "popcorn": ("cybernetic-physics/kernel_agent", "cd2a4e4", r"^kernels/[^/]+\.py$", None),
}
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
        out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, *([under] if under else [])],
                             capture_output=True,
                             check=True, timeout=60).stdout.decode()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return []
    return out.splitlines()


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


def more(name: str, repo: str, refs: References) -> list[dict]:
    """Every kernel file of one :data:`MORE` set."""
    slug, pin, pattern, where = MORE[name]
    files = git_ls(repo, pin, "")
    own: dict[tuple[int, int], str] = {}
    for p in files:  # the repository's own copy of the KernelBench problems
        m = re.search(r"KernelBench/level(\d)/(\d+)_[^/]*\.py$", p)
        if m:
            own[(int(m.group(1)), int(m.group(2)))] = p
    rows = []
    for p in files:
        m = re.search(pattern, p)
        if not m:
            continue
        code = git_show(repo, pin, p)
        if not code:
            continue
        ref = None
        if where in ("kb", "kb1"):
            key = (int(m.groupdict().get("level") or 1), int(m.group("problem")))
            ref = git_show(repo, pin, own[key]) if key in own else refs.get(*key)
        elif where:
            for sib in where.split("|"):
                ref = git_show(repo, pin, p.rsplit("/", 1)[0] + "/" + sib) if "/" in p else git_show(repo, pin, sib)
                if ref:
                    break
        cfg = git_show(repo, pin, p.rsplit("/", 1)[0] + "/generation_config.yaml") if "/" in p else None
        pm = re.search(r"(?m)^precision:\s*(\w+)", cfg or "")  # KernelBench runs the problem in this dtype
        rows.append({"source": f"{slug}@{pin}:{p}", "problem": p, "author": slug, "code": code, "reference": ref,
                     "precision": pm.group(1) if pm else None, "kind": "triton" if "triton" in code else "cuda"})
    return rows


#: CUDA-L1 (deepreinforce-ai/CUDA-L1, MIT): the kernels its RL system published for KernelBench L1-L3, per
#: GPU, at every commit of ``optimized_cuda_code/``. The first release (cfff841) still had kernels that
#: its authors later removed as reward hacks ("Remove caching", "proper stream timing synchronization"
#: in the README's list of fixes); the last commit (4ac1f22) is the cleaned set.
CUDAL1_COMMITS = ("cfff841", "8afc155", "7e62f3f", "5d5e64d", "262b891", "4ac1f22")
CUDAL1_FINAL = "4ac1f22"


def _cudal1_rows(text: str) -> list[dict]:
    try:
        data = json.loads(text)
    except ValueError:  # one JSON object a line
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(data, dict):  # {"1": [...], "2": [...]}
        return [dict(it, level_id=it.get("level_id", int(lv))) for lv, items in data.items() for it in items]
    return list(data)


def cudal1(repo: str) -> list[dict]:
    """Every distinct ``custom_code`` CUDA-L1 published, each with its ``ref_code`` (the KernelBench
    problem); ``final`` says whether the last commit still lists it (the others were replaced or
    removed, some of them as the reward hacks its README names)."""
    import hashlib

    seen: dict[str, dict] = {}
    final: set[str] = set()
    for commit in CUDAL1_COMMITS:
        for path in git_ls(repo, commit, "optimized_cuda_code"):
            if not path.endswith(".json") or path.endswith("log.json"):
                continue
            for it in _cudal1_rows(git_show(repo, commit, path) or "[]"):
                code = it.get("custom_code")
                if not isinstance(code, str) or code.strip() in ("", "None"):  # "None": no kernel for it
                    continue
                key = hashlib.sha1(code.encode()).hexdigest()[:12]
                if commit == CUDAL1_FINAL:
                    final.add(key)
                seen.setdefault(key, {
                    "source": f"CUDA-L1@{commit}:{path} L{it.get('level_id')} P{it.get('task_id')}",
                    "problem": f"L{it.get('level_id')} P{it.get('task_id')}", "author": "CUDA-L1", "code": code,
                    "reference": it.get("ref_code"), "kind": "triton" if "triton" in code else "cuda"})
    rows = list(seen.values())
    for key, r in seen.items():
        r["final"] = key in final
        r["source"] += " [final]" if r["final"] else " [removed later]"
    return rows


def tritondump(folder: str) -> list[dict]:
    """The 134 recorded-correct Triton kernels of KernelBench's ``sokserey/tritonDump`` branch (6842d4f,
    MIT), read from a folder on disk (``triton_runs/level*_triton/kernels/``), each with its problem
    (``KernelBench/level*/``)."""
    base = Path(folder)
    refs = {}
    for p in base.glob("KernelBench/level*/*.py"):
        m = re.match(r"(\d+)_", p.name)
        if m:
            refs[(int(p.parent.name.removeprefix("level")), int(m.group(1)))] = p.read_text(encoding="utf-8")
    rows = []
    for p in sorted(base.glob("triton_runs/level*_triton/kernels/*.py")):
        m = re.match(r"level(\d)_problem(\d+)_", p.name)
        if not m:
            continue
        rows.append({"source": f"KernelBench@6842d4f (tritonDump):{p.relative_to(base)}", "problem": p.name,
                     "author": "tritonDump", "code": p.read_text(encoding="utf-8"),
                     "reference": refs.get((int(m.group(1)), int(m.group(2)))), "kind": "triton"})
    return rows


def harbor(repo: str, every: bool = False) -> list[dict]:
    """Every kernel version (and script) of the Harbor runs that earned a reward (``every``: of
    every run with a reward file, rewarded or not: an honest kernel that failed is no hack)."""
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
        if not isinstance(val, (int, float)) or (val <= 0 and not every):
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
                         "reference": task_ref, "kind": "triton" if "triton" in kv.code else "cuda", "reward": val,
                         "final": kv is run.kernels[-1]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leaderboard")
    ap.add_argument("--kernelbench")
    ap.add_argument("--harbor")
    ap.add_argument("--harbor-all", action="store_true", help="every Harbor run, not only the rewarded ones")
    ap.add_argument("--more", action="append", default=[], metavar="NAME=DIR",
                    help=f"a further kernel set, NAME one of {', '.join(MORE)}")
    ap.add_argument("--tritondump", metavar="DIR",
                    help="a folder with KernelBench's sokserey/tritonDump sweep (triton_runs/) and its problems "
                         "(KernelBench/level1, level2)")
    ap.add_argument("--cudal1", metavar="DIR",
                    help="a git directory of deepreinforce-ai/CUDA-L1: every kernel it published (see CUDAL1_COMMITS)")
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
        rows += harbor(a.harbor, a.harbor_all)
    if a.tritondump:
        rows += tritondump(a.tritondump)
    if a.cudal1:
        rows += cudal1(a.cudal1)
    for spec in a.more:
        name, _, repo = spec.partition("=")
        rows += more(name, repo, refs)
    counts: Counter[str] = Counter()
    flagged = 0
    for r in rows:
        found = source_findings(r["code"], r["reference"], r.get("precision"))
        # a finding of severity info (Triton's default TF32) is a fact, not a hack class (as in the verdict)
        r["classes"] = [f.code for f in found if f.code not in NOT_HACKS and f.severity != "info"]
        r["findings"] = [{"class": f.code, "line": f.line, "what": f.what, "evidence": f.evidence}
                         for f in found if f.code not in NOT_HACKS and f.severity != "info"]
        r["info"] = sorted({f.code for f in found if f.severity == "info"})
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
