"""Parse throughput and peak memory of the trace reader on large traces.

Builds traces by replicating the real fixtures (../shared/fixtures) and the bundled seed trace
until they reach the requested sizes, then loads each in a fresh subprocess and prints
MB/s and peak RSS.

    python benchmarks/bench_load.py              # 100 MB and 1 GB
    python benchmarks/bench_load.py --sizes 100  # just 100 MB
    python benchmarks/bench_load.py --formats    # each imported format (../shared/formats), 50 MB each
    python benchmarks/bench_load.py --formats --format-mb 200

``--formats`` grows each real sample of ../shared/formats to the size asked (its lines, messages,
samples or steps repeated, with tool-call ids made unique per copy so pairing stays by id) and
loads it the way ``ktui show`` does (format detected from the content).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT.parent / "shared" / "fixtures").rglob("*.jsonl")) + [
    ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
]


def build(path: Path, size_mb: int, sources: list[Path] = SOURCES) -> None:
    blob = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in sources if p.exists())
    target = size_mb << 20
    with open(path, "wb") as f:
        written = 0
        while written < target:
            f.write(blob)
            written += len(blob)


CHILD = r"""
import json, resource, sys, time
from ktui.trace import load
t = time.perf_counter()
run = load(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "events": len(run.events), "turns": len(run.turns),
                  "calls": len(run.calls), "kernels": len(run.kernels), "problems": len(run.problems),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

BASELINE = r"""
import json, resource
import ktui.trace.reader, ktui.trace.builder
print(json.dumps({"maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


FORMATS = ROOT.parent / "shared" / "formats"
FORMAT_SAMPLES = {
    "chat-messages": "chat-messages/wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl",
    "claude-code": "claude-code/vsla_cuda_toolchain_check_bash_todowrite.jsonl",
    "codex-cli": "codex-cli/code_butler_docstring_fix_shell_command_apply_patch_v0.63.jsonl",
    "inspect": "inspect/vitals_arithmetic_with_tool_claude35_v0.3.77.json",
    "harbor-atif": "swe-agent/harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json",
    "mini-swe-agent": "swe-agent/mini_swe_agent_v1.15_gemini3pro_django16255.traj.json",
}
_ID_PREFIXES = (b"toolu_", b"call_", b"msg_")


def _unique_ids(raw: bytes, i: int) -> bytes:
    for pre in _ID_PREFIXES:
        raw = raw.replace(b'"' + pre, b'"' + pre + b"r%d_" % i)
    return raw


def build_format(fmt: str, path: Path, size_mb: int) -> None:
    """A big trace of one imported format, grown from its real sample."""
    src = (FORMATS / FORMAT_SAMPLES[fmt]).read_bytes()
    target = size_mb << 20
    if fmt in ("claude-code", "codex-cli"):  # JSONL sessions: the lines again, ids renamed per copy
        head = src if fmt == "claude-code" else src.split(b"\n", 1)[0] + b"\n"
        body = src if fmt == "claude-code" else src.split(b"\n", 1)[1]
        with open(path, "wb") as f:
            f.write(head)
            i, written = 0, len(head)
            while written < target:
                chunk = _unique_ids(body, i)
                f.write(chunk if chunk.endswith(b"\n") else chunk + b"\n")
                written += len(chunk)
                i += 1
        return
    obj = json.loads(src)
    key, keep = {"chat-messages": ("messages", 2), "inspect": ("samples", 0), "harbor-atif": ("steps", 1),
                 "mini-swe-agent": ("messages", 2)}[fmt]
    items = obj[key]
    unit = json.dumps(items[keep:]).encode()
    copies = max(1, target // max(1, len(unit)))
    grown = items[:keep]
    for i in range(copies):
        grown.extend(json.loads(_unique_ids(unit, i)))
    obj[key] = grown
    if fmt == "chat-messages":
        obj["completions"] = json.loads(b"[" + b",".join(_unique_ids(json.dumps(obj["completions"]).encode()[1:-1], i)
                                                         for i in range(copies)) + b"]")
    data = json.dumps(obj).encode() if fmt == "chat-messages" else json.dumps(obj, indent=1).encode()
    path.write_bytes(data)


CHILD_FORMAT = r"""
import json, resource, sys, time
from ktui.trace import load
t = time.perf_counter()
run = load(sys.argv[1])
dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "format": run.format, "turns": len(run.turns), "calls": len(run.calls),
                  "kernels": len(run.kernels), "problems": len(run.problems),
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def bench_formats(size_mb: int, where: str | None, env: dict) -> None:
    with tempfile.TemporaryDirectory(dir=where) as td:
        for fmt in FORMAT_SAMPLES:
            if not (FORMATS / FORMAT_SAMPLES[fmt]).exists():
                print(f"  {fmt:15s} sample missing under {FORMATS}")
                continue
            p = Path(td) / f"big_{fmt}.data"
            build_format(fmt, p, size_mb)
            size = p.stat().st_size
            r = json.loads(subprocess.check_output([sys.executable, "-c", CHILD_FORMAT, str(p)], env=env))
            print(f"  {fmt:15s} {size / 2**20:7,.0f} MB  {r['seconds']:6.2f}s  {size / 2**20 / r['seconds']:7.1f} MB/s  "
                  f"peak RSS {r['maxrss_kb'] / 1024:,.0f} MB  read as {r['format']}  turns={r['turns']:,} "
                  f"calls={r['calls']:,} kernels={r['kernels']:,} problems={r['problems']}")
            p.unlink()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1024], help="sizes in MB")
    ap.add_argument("--formats", action="store_true", help="benchmark each imported format instead")
    ap.add_argument("--format-mb", type=int, default=50, help="size of each imported-format trace (MB)")
    ap.add_argument("--dir", default=None, help="where to write the big traces (default: a temp dir)")
    ap.add_argument("--mix", choices=["all", "seed"], default="all",
                    help="replicate every fixture (many small events) or only the seed trace (kernel-heavy)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = json.loads(subprocess.check_output([sys.executable, "-c", BASELINE], env=env))
    print(f"interpreter + ktui baseline RSS: {base['maxrss_kb'] / 1024:.0f} MB")
    if args.formats:
        bench_formats(args.format_mb, args.dir, env)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as td:
        for mb in args.sizes:
            p = Path(td) / f"big_{mb}mb.jsonl"
            t = time.perf_counter()
            build(p, mb, SOURCES if args.mix == "all" else SOURCES[-1:])
            size = p.stat().st_size
            print(f"built {size / 2**20:,.0f} MB trace ({args.mix}) in {time.perf_counter() - t:.1f}s")
            out = subprocess.check_output([sys.executable, "-c", CHILD, str(p)], env=env)
            r = json.loads(out)
            mbps = size / 2**20 / r["seconds"]
            print(f"  {size / 2**20:8,.0f} MB  {r['seconds']:6.2f}s  {mbps:7.1f} MB/s  "
                  f"peak RSS {r['maxrss_kb'] / 1024:,.0f} MB  events={r['events']:,} turns={r['turns']:,} "
                  f"calls={r['calls']:,} kernels={r['kernels']:,} problems={r['problems']}")
            p.unlink()


if __name__ == "__main__":
    main()
