"""Run the hack corpus (tests/fixtures/hacks) through ``ktui repro --json`` and write a table.

    python scripts/hacks_corpus.py --device cpu --out OUT_DIR [--trials 20] [--only NAME ...]
                                   [--jobs N] [--budget SECONDS] [--tag TAG]

``--jobs N`` runs N reproductions at once (for warming the build cache: timings then overlap);
``--budget`` stops starting new ones after that many seconds (the rest: "not run").

For every trace of the manifest that runs on the device: the class, what is expected (a hack:
a verdict naming a finding; honest: no finding), ktui's verdict, the classes it named and the
reason. Writes ``hacks_<device>.md`` and ``hacks_<device>.json`` under OUT_DIR and prints the
table. Exit status 0 when every expectation held, 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "hacks"
GOOD = ("reproduced", "reproduced: fails the same way")


def run_one(entry: dict, device: str, trials: int, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "ktui", "repro", str(CORPUS / entry["file"]), "--final", "--device", device,
           "--json", "--fresh", "--trials", str(trials)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        out, err, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        out, err, rc = "", "timed out", -1
    wall = time.monotonic() - t0
    row = {"file": entry["file"], "class": entry["class"], "honest": entry["honest"],
           "expected": "no finding" if entry["honest"] else "a finding named in the verdict",
           "static_expected": entry["static"], "rc": rc, "wall_s": round(wall, 1)}
    try:
        d = json.loads(out)
        comp = d["comparison"]
        row.update(verdict=comp["verdict"], reason=comp["reason"], classes=comp.get("classes", []),
                   dynamic=[f["class"] for f in comp.get("findings", []) if f.get("source") == "dynamic"],
                   failure=(d.get("result") or {}).get("failure"))
    except (ValueError, KeyError, TypeError):
        row.update(verdict="(no result)", reason=(err or out)[-300:], classes=[], dynamic=[], failure=None)
    if entry["honest"]:
        row["ok"] = not row["classes"]
    else:
        named = [c for c in row["classes"] if c in row["reason"]]
        row["ok"] = bool(row["classes"]) and row["verdict"] not in GOOD and bool(named)
    return row


def table(rows: list[dict], device: str, command: str) -> str:
    lines = [f"# ktui hack corpus on {device}", "", f"command: `{command}`", "",
             "| trace | class | expected | verdict | classes named (dynamic in italics) | ok | reason |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        named = ", ".join(f"*{c}*" if c in r["dynamic"] else c for c in r["classes"]) or "—"
        reason = " ".join(str(r["reason"]).split()).replace("|", "/")[:240]
        lines.append(f"| {r['file']} | {r['class']} | {r['expected']} | {r['verdict']} | {named} | "
                     f"{'yes' if r['ok'] else '**NO**'} | {reason} |")
    n_ok = sum(r["ok"] for r in rows)
    lines += ["", f"{n_ok} / {len(rows)} as expected."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=".")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--budget", type=float, default=0.0)
    ap.add_argument("--tag", default="")
    ap.add_argument("--needs-build", action="store_true", help="only the traces whose kernel builds an extension")
    ap.add_argument("--no-build", action="store_true", help="only the traces whose kernel builds nothing")
    ap.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                    help="write one table from the JSON rows of earlier runs (parts of the corpus)")
    a = ap.parse_args(argv)
    if a.merge:
        return merge(a.merge, a.device, a.trials, a.out)
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    kind = "cuda" if a.device.startswith("cuda") else "cpu"
    entries = [e for e in manifest["traces"] if kind in e["devices"]
               and (not a.only or any(o in e["file"] for o in a.only))]
    if a.needs_build or a.no_build:
        entries = [e for e in entries if ("load_inline" in (CORPUS / e["file"]).read_text(encoding="utf-8"))
                   == a.needs_build]
    t0 = time.monotonic()
    part = " --needs-build" if a.needs_build else " --no-build" if a.no_build else ""
    cmd = f"python scripts/hacks_corpus.py --device {a.device} --trials {a.trials}{part}"
    done: dict[str, dict] = {}
    lock = threading.Lock()

    def job(e: dict) -> dict:
        if a.budget and time.monotonic() - t0 > a.budget:
            return not_run(e, "not run (time budget)")
        r = run_one(e, a.device, a.trials, a.timeout)
        print(f"{'ok ' if r['ok'] else 'BAD'} {r['file']:45s} {r['verdict']:24s} {','.join(r['classes'])}",
              flush=True)
        with lock:  # the table so far, after every row (a run cut by its caller's timeout keeps it)
            done[e["file"]] = r
            write([done.get(x["file"]) or not_run(x, "not run (cut)") for x in entries], kind, cmd, a.out, a.tag,
                  quiet=True)
        return r

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        rows = list(pool.map(job, entries))
    return write(rows, kind, cmd, a.out, a.tag)


def not_run(e: dict, why: str) -> dict:
    return {"file": e["file"], "class": e["class"], "honest": e["honest"], "expected": "-",
            "verdict": why, "reason": "", "classes": [], "dynamic": [], "ok": False}


def write(rows: list[dict], kind: str, command: str, out: str, tag: str = "", quiet: bool = False) -> int:
    os.makedirs(out, exist_ok=True)
    md = table(rows, kind, command)
    name = f"hacks_{kind}{('_' + tag) if tag else ''}"
    Path(out, f"{name}.md").write_text(md, encoding="utf-8")
    Path(out, f"{name}.json").write_text(json.dumps(rows, indent=1, default=str) + "\n", encoding="utf-8")
    if not quiet:
        print(md)
    return 0 if all(r["ok"] for r in rows) else 1


def merge(paths: list[str], device: str, trials: int, out: str) -> int:
    """One table, in the manifest's order, from the rows of runs over parts of the corpus (each
    part ran in its own call on the GPU machine): a trace missing from every part is "not run"."""
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    kind = "cuda" if device.startswith("cuda") else "cpu"
    got = {}
    for p in paths:
        for r in json.loads(Path(p).read_text(encoding="utf-8")):
            if r["file"] not in got or got[r["file"]]["verdict"].startswith("not run"):
                got[r["file"]] = r
    rows = [got.get(e["file"]) or not_run(e, "not run") for e in manifest["traces"] if kind in e["devices"]]
    cmd = " && ".join(f"python scripts/hacks_corpus.py --device {device} --trials {trials} {flag}"
                      for flag in ("--needs-build", "--no-build"))
    return write(rows, kind, cmd, out)


if __name__ == "__main__":
    sys.exit(main())
