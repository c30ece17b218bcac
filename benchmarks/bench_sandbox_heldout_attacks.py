"""The sandbox's held-out attacks (tests/fixtures/sandbox/heldout_corpus.py): each attack in a sandboxed
worker under a planted fake user, as root and (a child through setpriv) as uid 65534; the read attacks
also as a plain child (the control: what the same code gets outside the sandbox).

    python benchmarks/bench_sandbox_heldout_attacks.py --out /tmp/heldout.md [--only a,b]

Results: benchmarks/results/sandbox_heldout_s34.md."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sandbox"
sys.path.insert(0, str(FIX))

from attack_run import bench_main  # noqa: E402
from heldout_corpus import ATTACKS, run_all  # noqa: E402


def _here(a):
    return run_all([n for n in a.only.split(",") if n] if a.only else None)


def _cell(r):
    if r is None:
        return "not run"
    if r.get("held") is None:
        return r["what"]
    return ("held" if r["held"] else "GOT THROUGH") + ": " + str(r["what"])[:220].replace("|", "/")


def _render(root, user, note, who, a):
    lines = [f"Kernel {platform.release()}, Python {platform.python_version()}; first column: {who}; "
             f"second: {note}.", "",
             "| attack | class | source | control (plain child, root) | sandboxed (root) | sandboxed (uid 65534) |",
             "|---|---|---|---|---|---|"]
    for name, (cls, src, _code, _kind) in ATTACKS.items():
        if name not in root:
            continue
        r, u = root.get(name), (user or {}).get(name)
        ctl = f"{r['control']} item(s)" if "control" in r else "—"
        lines.append(f"| {name} | {cls} | {src} | {ctl} | {_cell(r)} | {_cell(u)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(bench_main(__file__, _here, _render, options=[("--only", {"default": ""})]))
