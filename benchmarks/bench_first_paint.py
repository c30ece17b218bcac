#!/usr/bin/env python3
"""First paint and memory of `ktui replay` on big traces, against toolong and a bare orjson loop,
in one run on the same files (issue 25).

For each size (default 40, 400 and 1000 MB) a trace is grown from the real fixtures
(``../shared/fixtures``) and the seed trace, as ``bench_load.py`` does, under
``$KTUI_BENCH_DIR`` (default ``/tmp/ktui_bench``; never in the repo). Then, interleaved:

- **first paint**: each app is started in its own tmux session at 160x48 (a real terminal, the
  whole start-up included) and the screen is read every 20 ms until it shows the file: for ktui
  the first turn ("turn 0" in the turn pane), for toolong the file's first line (``"tick"``).
  toolong runs from its own virtual environment (``--toolong``, default
  ``benchmarks/_data/toolong-venv/bin/tl``: ``python3 -m venv benchmarks/_data/toolong-venv &&
  benchmarks/_data/toolong-venv/bin/pip install toolong``).
- **memory**: the app process's resident and anonymous memory at first paint and once it is
  idle (ktui: the whole file read, the header no longer says "loading the rest"; toolong: its CPU
  time has stopped growing for 2 s).
- **parse**: CPU seconds of ``ktui.trace.load`` (the full parse ``validate`` and ``show`` do)
  against a bare loop of ``orjson.loads`` over the lines, each in a fresh process.

    python benchmarks/bench_first_paint.py [--sizes 40 400 1000] [--skip-toolong] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "_data"
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_load import SOURCES, build  # noqa: E402

KTUI_SHOWN = re.compile(r"\bturn 0\b")
TOOLONG_SHOWN = re.compile(r'"?tick"?')


TRACES = Path(os.environ.get("KTUI_BENCH_DIR", "/tmp/ktui_bench"))  # generated traces: never in the repo


def make(mb: int) -> Path:
    TRACES.mkdir(parents=True, exist_ok=True)
    p = TRACES / f"paint_{mb}MB.jsonl"
    if not p.exists() or p.stat().st_size < (mb << 20):
        build(p, mb, SOURCES)
    return p


# ---- a process in tmux ------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _app_pid(session: str) -> int | None:
    out = subprocess.run(["tmux", "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True, text=True)
    if out.returncode:
        return None
    pid = int(out.stdout.strip())
    for _ in range(3):  # through a shell, if tmux started one
        comm = Path(f"/proc/{pid}/comm").read_text().strip() if Path(f"/proc/{pid}/comm").exists() else ""
        kids = _children(pid)
        if comm in ("sh", "bash", "dash") and kids:
            pid = kids[0]
        else:
            break
    return pid


def _mem(pid: int) -> dict:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "VmHWM"):
                out[k] = round(int(v.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


def _cpu(pid: int) -> float:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0


def _screen(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


KTUI_SRC = ""  # --ktui-src: another checkout's ktui (the code before a change)


def run_app(name: str, cmd: list[str], shown: re.Pattern[str], idle, timeout: float, idle_timeout: float) -> dict:
    session = f"bench_paint_{os.getpid()}_{name}"
    env = dict(os.environ, TERM="xterm-256color")
    if name == "ktui" and KTUI_SRC:
        env["PYTHONPATH"] = KTUI_SRC
    t0 = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48", "--", *cmd], env=env,
                   check=True)
    out: dict = {"app": name}
    try:
        pid = None
        while time.perf_counter() - t0 < timeout:
            time.sleep(0.02)
            pid = pid or _app_pid(session)
            if shown.search(_screen(session)):
                out["first_paint_s"] = round(time.perf_counter() - t0, 2)
                break
        if pid is None or "first_paint_s" not in out:
            out["first_paint_s"] = None
            out["screen"] = _screen(session)[-2000:]
            return out
        out["mem_at_paint_mb"] = _mem(pid)
        t1 = time.perf_counter()
        last_cpu, still = _cpu(pid), time.perf_counter()
        while time.perf_counter() - t1 < idle_timeout:
            time.sleep(0.25)
            scr = _screen(session)
            cpu = _cpu(pid)
            if cpu > last_cpu + 0.05:
                last_cpu, still = cpu, time.perf_counter()
            if idle(scr, time.perf_counter() - still):
                out["idle_after_s"] = round(time.perf_counter() - t0, 1)
                break
        out["mem_idle_mb"] = _mem(pid)
        out["cpu_s"] = round(_cpu(pid), 1)
        return out
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def ktui_paint(path: Path, idle_timeout: float, timeout: float = 900) -> dict:
    # -P: not the current directory's ktui; PYTHONPATH on the command line itself (a tmux server
    # already running gives a new session its own environment, not the client's)
    cmd = [sys.executable, "-P", "-m", "ktui", "replay", str(path)]
    if KTUI_SRC:
        cmd = ["env", f"PYTHONPATH={KTUI_SRC}", *cmd]
    return run_app("ktui", cmd, KTUI_SHOWN,
                   lambda scr, quiet: "loading" not in scr and "reading the kernels" not in scr and quiet > 1.0,
                   timeout=timeout, idle_timeout=idle_timeout)


def toolong_paint(tl: str, path: Path, idle_timeout: float) -> dict:
    return run_app("toolong", [tl, str(path)], TOOLONG_SHOWN, lambda scr, quiet: quiet > 2.0,
                   timeout=300, idle_timeout=idle_timeout)


# ---- parse floor ------------------------------------------------------------------------------------
ORJSON_LOOP = r"""
import orjson, resource, sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            try:
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
            n += 1
r = resource.getrusage(resource.RUSAGE_SELF)
print(orjson.dumps({"wall_s": time.perf_counter() - t, "cpu_s": r.ru_utime + r.ru_stime, "lines": n,
                    "maxrss_mb": r.ru_maxrss / 1024}).decode())
"""

KTUI_PARSE = r"""
import json, resource, sys, time
from ktui.trace import load
t = time.perf_counter()
run = load(sys.argv[1])
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": r.ru_utime + r.ru_stime, "events": len(run.events),
                  "turns": len(run.turns), "maxrss_mb": r.ru_maxrss / 1024}))
"""


def parse_floor(path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = json.loads(subprocess.check_output([sys.executable, "-c", "import resource, json; import ktui.trace.reader;"
                                               "r=resource.getrusage(resource.RUSAGE_SELF);"
                                               "print(json.dumps(r.ru_utime+r.ru_stime))"], env=env))
    o = json.loads(subprocess.check_output([sys.executable, "-c", ORJSON_LOOP, str(path)], env=env))
    k = json.loads(subprocess.check_output([sys.executable, "-c", KTUI_PARSE, str(path)], env=env))
    k["cpu_s"] -= base  # the interpreter's and the imports' start-up
    return {"orjson_loop": o, "ktui_load": k, "cpu_ratio": round(k["cpu_s"] / o["cpu_s"], 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[40, 400, 1000], help="trace sizes in MB")
    ap.add_argument("--toolong", default=str(DATA / "toolong-venv" / "bin" / "tl"))
    ap.add_argument("--skip-toolong", action="store_true")
    ap.add_argument("--skip-parse", action="store_true")
    ap.add_argument("--idle-timeout", type=float, default=600, help="seconds to wait for an app to go idle")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces")
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--ktui-src", default="", help="run this checkout's ktui in the app (e.g. the code before)")
    ap.add_argument("--paint-timeout", type=float, default=900)
    ap.add_argument("--repeat", type=int, default=1, help="first paints per app and size (interleaved, medians)")
    args = ap.parse_args()
    global KTUI_SRC
    KTUI_SRC = args.ktui_src
    if not shutil.which("tmux"):
        print("needs tmux", file=sys.stderr)
        return 2
    results = []
    for mb in args.sizes:
        t = time.perf_counter()
        path = make(mb)
        size = path.stat().st_size
        print(f"\n{path.name}: {size / 1e6:,.0f} MB (built in {time.perf_counter() - t:.0f} s)", flush=True)
        row: dict = {"file": path.name, "bytes": size}
        # interleaved: toolong, ktui, then ktui, toolong, ... (a file just written is in the page cache)
        use_tl = not args.skip_toolong and Path(args.toolong).exists()
        for rep in range(args.repeat):
            order = ["toolong", "ktui"] if rep % 2 == 0 else ["ktui", "toolong"]
            for app in order:
                if app == "toolong" and use_tl:
                    r = toolong_paint(args.toolong, path, min(args.idle_timeout, 120))
                    row.setdefault("toolong_runs", []).append(r)
                    print(f"  toolong  first paint {r['first_paint_s']} s   memory at paint "
                          f"{r.get('mem_at_paint_mb')}  idle {r.get('mem_idle_mb')}", flush=True)
                elif app == "ktui":
                    r = ktui_paint(path, args.idle_timeout, args.paint_timeout)
                    row.setdefault("ktui_runs", []).append(r)
                    print(f"  ktui     first paint {r['first_paint_s']} s   memory at paint "
                          f"{r.get('mem_at_paint_mb')}  idle (whole file read) {r.get('mem_idle_mb')} "
                          f"after {r.get('idle_after_s')} s", flush=True)
        for app in ("toolong", "ktui"):
            got = sorted(r["first_paint_s"] for r in row.get(f"{app}_runs", []) if r.get("first_paint_s"))
            if got:
                row[f"{app}_paint_median_s"] = got[len(got) // 2]
        if row.get("toolong_paint_median_s") and row.get("ktui_paint_median_s"):
            row["paint_ratio"] = round(row["ktui_paint_median_s"] / row["toolong_paint_median_s"], 2)
            print(f"  first paint medians: ktui {row['ktui_paint_median_s']} s, toolong "
                  f"{row['toolong_paint_median_s']} s: ratio {row['paint_ratio']}", flush=True)
        if not args.skip_parse:
            row["parse"] = parse_floor(path)
            p = row["parse"]
            print(f"  parse    ktui load {p['ktui_load']['cpu_s']:.1f} s CPU ({p['ktui_load']['maxrss_mb']:,.0f} MB "
                  f"peak)   orjson loop {p['orjson_loop']['cpu_s']:.1f} s CPU   ratio {p['cpu_ratio']}", flush=True)
        results.append(row)
        if not args.keep:
            path.unlink()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
