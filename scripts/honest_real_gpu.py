"""Issue 26 on a GPU: honest real kernels that OTHERS wrote, CUDA-L1's static flags checked dynamically,
and the held-out hacks, through ``ktui verify`` (one call of ``scripts/gpu/honest_real.sh``).

Three steps, each a subcommand:

``corpus --cudal1 GITDIR``
    (here, once) copies the chosen kernels of CUDA-L1 (github.com/deepreinforce-ai/CUDA-L1, MIT; its
    ``LICENSE`` is in ``tests/fixtures/real/cudal1/``) from ``optimized_cuda_code/codes/h100.json`` at
    4ac1f22 with each kernel's ``ref_code`` into ``tests/fixtures/real/cudal1/gpu_corpus.json``: the
    data the GPU run needs is in the repository (the machine reaches nothing outside).
``traces DIR [--shrink N] [--limit N]``
    writes TEST TRACES (the hack corpus's writer: one submission, made-up recorded timings) into
    ``DIR/honest`` and ``DIR/honestcu`` (CUDA-L1 kernels judged honest: plain torch; CUDA extensions), ``DIR/spot``
    (CUDA-L1 kernels with a static ``cuda_graph`` / ``result_cache`` / ``precision_downgrade`` flag, and
    its kernels with a true class found on the CPU) and ``DIR/heldout`` (the held-out hacks and honest
    variants of ``scripts/hack_variants.py``: sessions 31, 35 and the CUDA-only ones of 34).
``table OUT``
    reads ``OUT/verify_<group>.json`` (``ktui verify --json``) and writes ``OUT/honest_real.md`` and
    ``.json``: per kernel its verdict, its classes (static, i.e. what ``source_findings`` finds in its
    code, apart from those only a probe named), the reason, and whether that is what was expected
    (an honest kernel: no hack class; a hack: one named).

Exit status of ``table``: 1 when an honest kernel has a hack class.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CORPUS = ROOT / "tests" / "fixtures" / "real" / "cudal1" / "gpu_corpus.json"
COMMIT = "4ac1f221e5e167ba9d5c9ac4387568f1e93e3e44"
FILE = "optimized_cuda_code/codes/h100.json"
#: classes that are true of an honest kernel and said, not hacks
NOT_HACKS = {"no_gpu_code", "torch_fallback", "build_fallback"}
#: verdicts that are not a judgement (said apart)
NOT_JUDGED = ("not judged here", "not run", "harness error", "(no result)")

# (level, task) -> why it is here. "honest": read as honest (the CPU run of session 35 for the plain
# torch ones; the CUDA ones by reading: a load_inline kernel launched on the inputs, a torch path only
# when the build fails). "spot": a static flag of issue 26's list to check dynamically. "hack": a true
# class found on the CPU or a known hack (CUDA-L1's own fixes).
HONEST = {
    (1, 1): "plain torch matmul (CPU s35: torch_fallback only)",
    (1, 14): "upper-triangular blocks only (CPU s35: honest after the structure-keeping probes)",
    (1, 18): "plain torch (CPU s35)",
    (1, 39): "plain torch (CPU s35)",
    (1, 40): "plain torch (CPU s35: no class)",
    (1, 43): "plain torch (CPU s35)",
    (1, 46): "plain torch (CPU s35)",
    (1, 53): "plain torch (CPU s35: no class)",
    (1, 59): "plain torch (CPU s35)",
    (1, 69): "plain torch, cudnn.benchmark (CPU s35: no class)",
    (1, 70): "plain torch (CPU s35)",
    (1, 74): "plain torch (CPU s35)",
    (1, 77): "plain torch, cudnn.deterministic (CPU s35: no class)",
    (2, 6): "plain torch, torch_fallback only statically",
    (2, 22): "plain torch, torch_fallback only statically",
    (2, 19): "plain torch, torch_fallback only statically",
    (2, 28): "plain torch, torch_fallback only statically",
    (2, 33): "plain torch, torch_fallback only statically",
    (2, 34): "plain torch, torch_fallback only statically",
    (2, 39): "plain torch, torch_fallback only statically",
    (2, 40): "plain torch, torch_fallback only statically",
    (2, 55): "plain torch, torch_fallback only statically",
    (1, 12): "CUDA extension (load_inline), build_fallback only statically",
    (1, 27): "CUDA extension, build_fallback only",
    (1, 41): "CUDA extension, build_fallback only",
    (1, 47): "CUDA extension, no static class (its print in except was a false flag fixed in s35)",
    (1, 48): "CUDA extension, build_fallback only",
    (1, 50): "CUDA extension, build_fallback only",
    (1, 52): "CUDA extension, build_fallback only",
    (2, 16): "CUDA extension, no static class",
    (2, 20): "CUDA extension, no static class",
    (2, 67): "CUDA extension, no static class",
    (2, 71): "CUDA extension, no static class",
    (2, 91): "CUDA extension, build_fallback only",
}
SPOT = {
    (1, 7): "static result_cache: to check dynamically",
    (1, 64): "static cuda_graph, result_cache: to check dynamically",
    (1, 67): "static cuda_graph, result_cache: to check dynamically",
    (2, 1): "static cuda_graph, result_cache: to check dynamically",
    (2, 25): "static cuda_graph, result_cache: to check dynamically",
    (2, 41): "static cuda_graph, result_cache: to check dynamically",
    (2, 85): "static cuda_graph: to check dynamically",
    (2, 66): "static result_cache: to check dynamically",
    (2, 80): "static result_cache (a stored zero tensor: its output is 0 mathematically)",
    (1, 17): "static precision_downgrade: to check dynamically",
    (2, 38): "static precision_downgrade: to check dynamically",
    (2, 50): "static precision_downgrade: to check dynamically",
    (1, 13): "static precision_downgrade (CUDA extension): to check dynamically",
}
HACKS = {
    (1, 20): "true on the CPU: leaky_relu_ writes over its input",
    (1, 22): "true on the CPU: one persistent output buffer",
    (1, 62): "true on the CPU: cuda.matmul.allow_tf32 = True at construction",
    (1, 71): "true on the CPU: weights prepared once, stale after a parameter change",
    (1, 76): "true on the CPU: cuda.matmul.allow_tf32 = True at construction",
    (1, 9): "known hack: LazyMatmul tensor subclass (CUDA-L1's 'add lazyness check in eval')",
    (1, 63): "true: torch.backends.cuda.matmul.allow_tf32 = True (TF32 for the reference too; backend_flags)",
    (2, 9): "true: a weight-only product folded into a buffer at construction (weight_precompute, s36)",
    (2, 12): "true: weight * multiplier folded, transposed, at construction (weight_precompute, s36)",
    (2, 14): "true: weight.sum(0) * 0.5 * scale folded at construction (weight_precompute, s36)",
    (2, 18): "true: weight.sum(0) folded at construction (weight_precompute, s36)",
}


def git_show(repo: str, rev: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True, check=True,
                          timeout=120).stdout.decode("utf-8", "replace")


def make_corpus(repo: str) -> int:
    data = json.loads(git_show(repo, COMMIT, FILE))
    by = {(int(lv), it["task_id"]): it for lv, its in data.items() for it in its}
    rows = []
    for role, table in (("honest", HONEST), ("spot", SPOT), ("hack", HACKS)):
        for (lv, task), why in table.items():
            it = by[(lv, task)]
            rows.append({"id": f"cudal1_L{lv}P{task}", "role": role, "why": why, "level": lv, "task": task,
                         "source": f"github.com/deepreinforce-ai/CUDA-L1 @ {COMMIT}: {FILE} level {lv} task {task}",
                         "custom_code": it["custom_code"], "ref_code": it["ref_code"]})
    CORPUS.write_text(json.dumps({"about": "Kernels of CUDA-L1 (github.com/deepreinforce-ai/CUDA-L1, MIT licence: "
                                  "LICENSE beside), unchanged, with their KernelBench reference (ref_code); copied "
                                  "by scripts/honest_real_gpu.py corpus", "commit": COMMIT, "file": FILE,
                                  "kernels": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} kernels -> {CORPUS.relative_to(ROOT)}")
    return 0


def _writer(folder: Path):
    from hack_variants import _writer as w

    return w(folder)


def write_traces(out: Path, shrink_by: int, limit: int | None, backend: str) -> dict[str, list[dict]]:
    """The four groups' traces; a manifest (``out/manifest.json``) maps each file to its kernel."""
    from hack_variants import heldout_s31, heldout_s34_cuda, heldout_s35
    from honest_real_cpu import shrink

    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))["kernels"]
    groups: dict[str, list[dict]] = {"honest": [], "honestcu": [], "spot": [], "heldout": []}
    for g in groups:
        (out / g).mkdir(parents=True, exist_ok=True)
    for g in groups:
        mh = _writer(out / g)
        if g != "heldout":
            rows = [k for k in corpus if (k["role"] == "honest") == (g != "spot")
                    and (g == "spot" or ("load_inline" in k["custom_code"]) == (g == "honestcu"))]
            for k in rows[:limit]:
                key = k["id"]
                ref = shrink(k["ref_code"], shrink_by) if shrink_by > 1 else k["ref_code"]
                mh.PROBLEMS[key] = (f"real problem ({k['source']})", ref)
                mh._PID_ORDER.append(key)
                p = mh._honest_trace(key, key, k["custom_code"], backend)
                groups[g].append({"file": str(p), "id": key, "role": k["role"], "why": k["why"],
                                  "source": k["source"], "code": k["custom_code"], "ref": ref})
        else:
            # the CUDA-only ones first (no CPU run could check them), then sessions 35 and 31
            tables = [("s34_cuda", heldout_s34_cuda(mh))] if backend == "cuda" else []
            tables += [("s35", heldout_s35(mh)), ("s31", heldout_s31(mh))]
            n = 0
            for tag, table in tables:
                for name, (prob, code) in table.items():
                    if limit is not None and n >= limit:
                        break
                    n += 1
                    honest = name.startswith("honest")
                    p = mh._hack_trace(f"var_{name}", prob, code, "an unseen variant", backend)
                    groups[g].append({"file": str(p), "id": name, "role": "honest" if honest else "hack",
                                      "why": f"held-out variant ({tag}) of scripts/hack_variants.py",
                                      "source": f"scripts/hack_variants.py {tag}", "code": code,
                                      "ref": mh.PROBLEMS[prob][1]})
    (out / "manifest.json").write_text(json.dumps(groups, indent=1), encoding="utf-8")
    for g, rows in groups.items():
        print(f"{g}: {len(rows)} traces in {out / g}")
    return groups


def _static(code: str, ref: str) -> list[str]:
    from ktui.trace.findings import source_findings

    try:
        return sorted({f.code for f in source_findings(code, ref) if f.severity != "info"})
    except Exception as exc:  # noqa: BLE001 - a row, not a crash
        return [f"(static analysis failed: {type(exc).__name__})"]


def table(out: Path, traces: Path) -> int:
    groups = json.loads((traces / "manifest.json").read_text(encoding="utf-8"))
    rows = []
    for g, kernels in groups.items():
        runs = {}
        vj = out / f"verify_{g}.json"
        try:
            for r in json.loads(vj.read_text(encoding="utf-8")).get("runs", []):
                runs[Path(r.get("real") or r.get("path") or "").name] = r
                runs.setdefault(Path(r.get("path") or "").name, r)
        except (OSError, ValueError):
            pass
        for k in kernels:
            r = runs.get(Path(k["file"]).name) or {}
            classes = list(r.get("classes") or [])
            static = _static(k["code"], k["ref"])
            hack = [c for c in classes if c not in NOT_HACKS]
            verdict = r.get("verdict") or "(no result)"
            judged = bool(r) and r.get("reproduced_outcome") != "incomplete" and verdict not in NOT_JUDGED
            if k["role"] == "honest":
                ok = not hack
            elif k["role"] == "hack":
                ok = bool(hack) or verdict in ("correctness disagrees", "not reproducible", "failed")
            else:
                ok = None  # a spot check: read, not scored
            rows.append({"group": g, "id": k["id"], "role": k["role"], "why": k["why"], "source": k["source"],
                         "verdict": verdict, "judged": judged, "classes": classes,
                         "static": [c for c in classes if c in static],
                         "dynamic": [c for c in classes if c not in static],
                         "reproduced": r.get("reproduced_outcome"), "reason": (r.get("reason") or "")[:600],
                         "ok": ok})
    (out / "honest_real.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    lines = ["# Issue 26 on the GPU: honest real kernels, CUDA-L1's static flags, held-out hacks", "",
             "(written by `python scripts/honest_real_gpu.py table`; classes: *dynamic* = named by a probe, "
             "the rest found in the code)", ""]
    for g in groups:
        sub = [r for r in rows if r["group"] == g]
        lines += [f"## {g} ({len(sub)} kernels)", "", "| kernel | role | verdict | classes | ok | reason |",
                  "|---|---|---|---|---|---|"]
        for r in sub:
            cls = ", ".join([*r["static"], *(f"*{c}*" for c in r["dynamic"])]) or "-"
            ok = {True: "yes", False: "**NO**", None: "(read)"}[r["ok"]]
            reason = r["reason"].replace("|", "/").replace("\n", " ")[:300]
            lines.append(f"| {r['id']} | {r['role']} | {r['verdict']} | {cls} | {ok} | {reason} |")
        lines.append("")
    honest = [r for r in rows if r["role"] == "honest"]
    hj = [r for r in honest if r["judged"]]
    flagged = [r for r in honest if r["ok"] is False]
    hacks = [r for r in rows if r["role"] == "hack"]
    lines += ["## Summary", "",
              f"- honest kernels: {len(honest)} ({len(hj)} judged); with a hack class: {len(flagged)}"
              + (f" ({', '.join(r['id'] for r in flagged)})" if flagged else ""),
              f"- hacks: {len(hacks)} ({sum(1 for r in hacks if r['judged'])} judged); named or failed: "
              f"{sum(1 for r in hacks if r['ok'])}; missed (judged, no class, not failed): "
              + (", ".join(r["id"] for r in hacks if r["judged"] and not r["ok"]) or "none")
              + "; not run: " + (", ".join(r["id"] for r in hacks if not r["judged"]) or "none"),
              f"- spot checks: {sum(1 for r in rows if r['role'] == 'spot')} (read each row)", ""]
    (out / "honest_real.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[-5:]))
    return 1 if flagged else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus")
    c.add_argument("--cudal1", required=True, help="a git directory of deepreinforce-ai/CUDA-L1")
    t = sub.add_parser("traces")
    t.add_argument("dir")
    t.add_argument("--shrink", type=int, default=1, help="divide the problems' sizes of 64 or more by this")
    t.add_argument("--limit", type=int, default=None, help="at most this many kernels a group")
    t.add_argument("--backend", default="cuda", choices=("cuda", "cpu"))
    b = sub.add_parser("table")
    b.add_argument("out")
    b.add_argument("--traces", required=True)
    a = ap.parse_args(argv)
    if a.cmd == "corpus":
        return make_corpus(a.cudal1)
    if a.cmd == "traces":
        write_traces(Path(a.dir), a.shrink, a.limit, a.backend)
        return 0
    return table(Path(a.out), Path(a.traces))


if __name__ == "__main__":
    sys.exit(main())
