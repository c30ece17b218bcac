"""Honest kernels that OTHERS wrote, re-executed on the CPU with ``ktui repro --device cpu``: every
dynamic probe (and the static findings) must name no hack class on them. A false flag on an honest
kernel costs more trust than a missed hack.

The kernels run where they can run here: plain-torch ``ModelNew`` kernels (a model's own port that
calls torch, ``torch.autograd.Function`` wrappers) and KernelBench's reference problems written as
``ModelNew`` (a library kernel: the reference's own code). KernelBench's sizes are sized for a GPU
(a 4096^3 product, batches of 128 images of 256 x 256); here every module-level integer size of the
problem of 64 or more is divided by ``--shrink`` (8) so that a kernel runs in seconds on a loaded
2-core machine. The kernel's own code is not changed; only the problem's sizes are.

Each kernel is written as a TEST TRACE (the hack corpus's writer: one honest submission, made-up
recorded timings) into a temporary folder and run through

    ktui repro TRACE --final --device cpu --json --fresh --trials 3

Sources (git mirrors read with ``git show``; none is copied into ktui):

- ``pango0/KernelBench-Agentic`` @ 6b0549d (MIT): Qwen's zero-shot, guided and iterative ``ModelNew``
  kernels for KernelBench L1-L3 problems 1-10, plain torch; references from its own
  ``KernelBench/KernelBench/level*`` copy;
- ``ScalingIntelligence/KernelBench`` @ 423217d (MIT): the same problems' references, as ``ModelNew``.

Usage::

    python scripts/honest_real_cpu.py --pango0 DIR --kernelbench DIR [--only SUBSTR] [--jobs 2] [--out rows.json]

Exit status 1 when any kernel has a hack class.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hack_variants import _writer  # noqa: E402

PINS = {"pango0": "6b0549d", "kernelbench": "423217d"}
NOT_HACKS = {"no_gpu_code", "torch_fallback"}  # true of a plain-torch kernel: said, not a hack
BAD = ("harness error",)


def git_show(repo: str, rev: str, path: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True, check=True,
                              timeout=60).stdout.decode("utf-8", "replace")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return None


def git_ls(repo: str, rev: str) -> list[str]:
    out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", rev], capture_output=True, check=True,
                         timeout=60).stdout.decode()
    return out.splitlines()


def shrink(src: str, factor: int) -> str:
    """Every module-level ``NAME = <int expression>`` of value 64 or more divided by ``factor`` (at
    least 8); tuples and lists of such ints likewise. The problem's sizes only: classes and
    functions are left as they are."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src
    lines = src.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []

    def small(v: int) -> int:
        return max(8, v // factor) if v >= 64 else v

    for node in tree.body:
        if not isinstance(node, ast.Assign) or node.lineno != node.end_lineno:
            continue
        try:
            v = ast.literal_eval(ast.unparse(node.value)) if not isinstance(node.value, ast.BinOp) else \
                eval(compile(ast.Expression(node.value), "<size>", "eval"), {"__builtins__": {}})  # noqa: S307
        except Exception:  # noqa: BLE001 - not a plain size
            continue
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            new = repr(small(v))
        elif isinstance(v, (tuple, list)) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            t = type(v)(small(x) for x in v)
            new = repr(t)
        else:
            continue
        if new != repr(v):
            edits.append((node.lineno, node.value.col_offset, node.value.end_col_offset, new))
    for ln, a, b, new in reversed(edits):
        s = lines[ln - 1]
        lines[ln - 1] = s[:a] + new + s[b:]
    return "".join(lines)


def pango0(repo: str, only: str | None) -> list[tuple[str, str, str]]:
    files = git_ls(repo, PINS["pango0"])
    refs = {}
    for p in files:
        m = re.match(r"KernelBench/KernelBench/level(\d)/(\d+)_", p)
        if m:
            refs[(int(m.group(1)), int(m.group(2)))] = p
    out = []
    for p in files:
        m = re.search(r"^(zeroshot|guided|iterative)/.*level_(\d)_problem_(\d+)_sample_\d+_kernel\.py$", p)
        if not m or (only and only not in p):
            continue
        key = (int(m.group(2)), int(m.group(3)))
        if key not in refs:
            continue
        code, ref = git_show(repo, PINS["pango0"], p), git_show(repo, PINS["pango0"], refs[key])
        if code and ref and "class ModelNew" in code:
            out.append((f"pango0@{PINS['pango0']}:{p}", code, ref))
    return out


def references(repo: str, problems: set[tuple[int, int]]) -> list[tuple[str, str, str]]:
    out = []
    for p in git_ls(repo, PINS["kernelbench"]):
        m = re.match(r"KernelBench/level(\d)/(\d+)_.*\.py$", p)
        if not m or (int(m.group(1)), int(m.group(2))) not in problems:
            continue
        ref = git_show(repo, PINS["kernelbench"], p)
        if ref and "class Model(" in ref:
            code = re.sub(r"\bclass Model\(", "class ModelNew(", ref)
            code = re.sub(r"super\(Model, self\)", "super(ModelNew, self)", code)
            out.append((f"KernelBench@{PINS['kernelbench']}:{p} (the reference as ModelNew)", code, ref))
    return out


def cudal1(repo: str, only: str | None, limit: int, offset: int = 0) -> list[tuple[str, str, str]]:
    """CUDA-L1's final published kernels (deepreinforce-ai/CUDA-L1 @ 4ac1f22, MIT;
    ``optimized_cuda_code/codes/h100.json``) that run on a CPU: plain torch (no extension, no Triton),
    with no static hack class (``scripts/honest_corpus.py --cudal1``), levels 1-2, at most ``limit``."""
    from honest_corpus import NOT_HACKS as STATIC_NOT_HACKS

    from ktui.trace.findings import source_findings

    data = json.loads(git_show(repo, "4ac1f22", "optimized_cuda_code/codes/h100.json") or "{}")
    items = [dict(it, level_id=int(lv)) for lv, its in data.items() for it in its] if isinstance(data, dict) else []
    out = []
    for it in sorted(items, key=lambda r: (r["level_id"], r["task_id"])):
        code, ref = it.get("custom_code") or "", it.get("ref_code") or ""
        src = f"CUDA-L1@4ac1f22:optimized_cuda_code/codes/h100.json L{it['level_id']} P{it['task_id']}"
        if it["level_id"] > 2 or (only and only not in src) or code.strip() in ("", "None") or not ref:
            continue
        if any(w in code for w in ("load_inline", "cpp_extension", "triton", "cupy", "numba")):
            continue
        found = source_findings(code, ref)
        if any(f.code not in STATIC_NOT_HACKS | {"torch_fallback", "build_fallback"} and f.severity != "info"
               for f in found):
            continue
        out.append((src, code, ref))
        if len(out) >= offset + limit:
            break
    return out[offset:]


def run_one(path: Path, trials: int) -> dict:
    t0 = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-m", "ktui", "repro", str(path), "--final", "--device", "cpu", "--json",
                            "--fresh", "--trials", str(trials)], capture_output=True, text=True, timeout=900,
                           cwd=ROOT)
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        out, err = "", "timed out (900 s)"
    row = {"wall_s": round(time.monotonic() - t0, 1)}
    try:
        comp = json.loads(out)["comparison"]
    except (ValueError, KeyError):
        return dict(row, verdict="(no result)", classes=[], hack=[], reason=(err or out)[-300:])
    classes = comp.get("classes", [])
    return dict(row, verdict=comp["verdict"], classes=classes, hack=[c for c in classes if c not in NOT_HACKS],
                reason=comp["reason"][:400])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pango0")
    ap.add_argument("--kernelbench")
    ap.add_argument("--cudal1", help="a git directory of deepreinforce-ai/CUDA-L1 (its final plain-torch kernels)")
    ap.add_argument("--limit", type=int, default=15, help="at most this many CUDA-L1 kernels")
    ap.add_argument("--offset", type=int, default=0, help="skip this many CUDA-L1 kernels first")
    ap.add_argument("--only", default=None, help="only kernel paths containing this")
    ap.add_argument("--shrink", type=int, default=8)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    kernels = pango0(a.pango0, a.only) if a.pango0 else []
    if a.kernelbench:
        probs = {(int(m.group(1)), int(m.group(2))) for s, _, _ in kernels
                 if (m := re.search(r"level_(\d)_problem_(\d+)_", s))}
        kernels += references(a.kernelbench, probs)
    if a.cudal1:
        kernels += cudal1(a.cudal1, a.only, a.limit, a.offset)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ktui-honest-real-") as tmp:
        mh = _writer(Path(tmp))
        paths = []
        for i, (src, code, ref) in enumerate(kernels):
            key = f"real{i}"
            mh.PROBLEMS[key] = (f"real problem ({src})", shrink(ref, a.shrink))
            mh._PID_ORDER.append(key)
            paths.append((src, mh._honest_trace(f"honest_real_{i:03d}", key, code, "cpu")))
        with ThreadPoolExecutor(a.jobs) as pool:
            for (src, _), r in zip(paths, pool.map(lambda sp: run_one(sp[1], a.trials), paths), strict=True):
                r = dict(r, source=src)
                rows.append(r)
                print(f"{'FLAG' if r['hack'] else 'ok  '} {r['verdict']:<22} {','.join(r['classes']) or '-':<40} {src}",
                      flush=True)
                if r["hack"] or r["verdict"] in BAD or r["verdict"] in ("not judged here", "(no result)"):
                    print(f"      {r['reason']}", flush=True)
    flagged = [r for r in rows if r["hack"]]
    print(f"{len(rows)} kernels; {len(flagged)} with a hack class")
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
