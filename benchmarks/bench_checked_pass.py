"""What keeping every output of ktui's checked wall-clock pass costs an honest kernel (CPU judge).

The checked pass keeps a copy of every call's output (or, above WALL_RETAIN_BYTES of copies,
a fingerprint of each) and is compared with the timed passes (``slower_when_checked`` needs
more than INTERLEAVED_RATIO x the timed pass + WALL_SLACK_US per forward). For honest kernels of
several output sizes, in both modes, this prints the timed pass's and the checked pass's time per
forward (ktui's clock) and whether anything was flagged.

    python benchmarks/bench_checked_pass.py [--repeat N] [--out FILE]
    python benchmarks/bench_checked_pass.py --kernelbench GITDIR@COMMIT NAME... [--out FILE]

With ``--kernelbench``, real problems instead: KernelBench's level-1 references (read with
``git show`` from a clone, never copied here; ScalingIntelligence/KernelBench, MIT), each judged
against itself renamed ModelNew (an honest kernel by construction), in both modes.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {ref_body}


def get_inputs():
    return [torch.randn({rows}, {cols})]


def get_init_inputs():
    return []
'''
KERNEL = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
{body}
'''
# (name, the reference's expression, the kernel's body): an elementwise op, and a pure copy (the
# output written once, nothing computed: the most a kept output can weigh against the work)
KERNELS = [("relu", "torch.relu(x) * 2.0", "        c = torch.clamp(x, min=0)\n        return c + c"),
           ("copy", "x.clone()", "        return torch.empty_like(x).copy_(x)")]
SIZES = [(64, 64), (512, 512), (2048, 2048)]


def _ratio(cc: dict) -> str:
    a, b = cc.get("kernel_checked_pass_us"), cc.get("kernel_timed_raw_us")
    return f"{a / b:.2f}" if a and b else "-"


def _judge(kernel: str, ref: str, mode: str) -> dict:
    from ktui.repro.runner import run_request

    req = {"kernel_code": kernel, "reference_source": ref, "device": "cpu", "trials": 5, "correctness_trials": 1,
           "checks": False, "build_root": os.path.join(tempfile.mkdtemp(prefix="ktui-bcp-"), "build")}
    if mode == "fingerprints":
        req["wall_retain_bytes"] = 0
    return run_request(req, run_timeout=240, compile_timeout=240)


def kernelbench(a: argparse.Namespace) -> int:
    import re
    import subprocess

    gitdir, commit = a.kernelbench.rsplit("@", 1)
    rows = []
    for name in a.names:
        src = subprocess.run(["git", "-C", gitdir, "show", f"{commit}:KernelBench/level1/{name}"],
                             capture_output=True, text=True, check=True).stdout
        kernel = re.sub(r"\bModel\b", "ModelNew", src)
        for mode in ("copies", "fingerprints"):
            t0 = time.monotonic()
            res = _judge(kernel, src, mode)
            cc = (res.get("timing") or {}).get("cross_check") or {}
            flags = sorted({f["class"] for f in res.get("findings") or []})
            failed = [c["name"] for c in res.get("checks") or [] if c.get("ok") is False]
            rows.append((name.removesuffix(".py"), cc.get("checked_by", mode), cc.get("kernel_forwards"),
                         cc.get("kernel_timed_raw_us"), cc.get("kernel_checked_pass_us"), _ratio(cc),
                         res.get("status"), ", ".join(flags + failed) or "none", f"{os.getloadavg()[0]:.1f}",
                         f"{time.monotonic() - t0:.0f}"))
            print(*rows[-1], flush=True)
    head = ("problem", "checked by", "forwards", "timed pass μs/fwd (raw)", "checked pass μs/fwd",
            "checked / timed", "status", "findings, failed checks", "load", "run s")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    text = (f"## Real problems: KernelBench level 1 at {commit} (each against itself; CPU judge, "
            f"{time.strftime('%Y-%m-%d')})\n\n"
            f"Command: `python benchmarks/bench_checked_pass.py --kernelbench CLONE@{commit} {' '.join(a.names)}`\n\n"
            + "\n".join(lines) + "\n")
    if a.out:
        with open(a.out, "a", encoding="utf-8") as fh:
            fh.write("\n" + text)
    print(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--kernelbench", help="GITDIR@COMMIT of a KernelBench clone")
    ap.add_argument("names", nargs="*", help="level-1 problem files (with --kernelbench)")
    a = ap.parse_args()
    if a.kernelbench:
        return kernelbench(a)
    from ktui.repro.runner import run_request

    rows = []
    for (kname, ref_body, body), (rows_, cols) in [(k, sz) for k in KERNELS for sz in SIZES]:
        for mode in ("copies", "fingerprints"):
            for _ in range(a.repeat):
                req = {"kernel_code": KERNEL.format(body=body),
                       "reference_source": REF.format(rows=rows_, cols=cols, ref_body=ref_body), "device": "cpu",
                       "trials": 5, "correctness_trials": 1, "checks": False,
                       "build_root": os.path.join(tempfile.mkdtemp(prefix="ktui-bcp-"), "build")}
                if mode == "fingerprints":
                    req["wall_retain_bytes"] = 0
                t0 = time.monotonic()
                res = run_request(req, run_timeout=240, compile_timeout=240)
                cc = (res.get("timing") or {}).get("cross_check") or {}
                flags = sorted({f["class"] for f in res.get("findings") or []})
                load = os.getloadavg()[0]
                rows.append((kname, f"{rows_}x{cols}", cc.get("checked_by", mode), cc.get("kernel_forwards"),
                             cc.get("kernel_timed_raw_us"), cc.get("kernel_checked_pass_us"), _ratio(cc), res.get("status"),
                             ", ".join(flags) or "none", f"{load:.1f}", f"{time.monotonic() - t0:.0f}"))
                print(*rows[-1], flush=True)
    head = ("kernel", "output (fp32)", "checked by", "forwards", "timed pass μs/fwd (raw)", "checked pass μs/fwd",
            "checked / timed", "status", "findings", "load", "run s")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(x) for x in r) + " |" for r in rows]
    text = (f"# The checked pass's cost to honest kernels (CPU judge, {time.strftime('%Y-%m-%d')})\n\n"
            f"Command: `python benchmarks/bench_checked_pass.py {' '.join(sys.argv[1:])}`\n\n"
            f"Python {platform.python_version()}, {os.cpu_count()} CPUs (shared with other work).\n\n"
            + "\n".join(lines) + "\n")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
