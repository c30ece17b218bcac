"""``ktui export TRACE --version vK -o repro.py``: a standalone reproduction script.

The script holds the reference source, the kernel source, what the trace recorded, and the
whole timing / correctness harness (``ktui/repro/harness.py``, copied verbatim), so it runs
anywhere torch runs, without ktui::

    python repro.py [--device cuda|cuda:N|cpu] [--trials N] [--method M] [--json] [--build-dir DIR]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT_HEAD = '''#!/usr/bin/env python3
"""Standalone reproduction of kernel {label} (sha1 {sha1}) from {trace}.

Written by `ktui export` (ktui {ktui_version}) on {date}. Problem: {problem}.
The reference ({origin}) and the kernel are below, with the harness ktui uses: KernelBench-style
correctness (5 seeded trials + a held-out one, allclose at 1e-4 fp32 / 1e-2 fp16-bf16), timing
(cuda_event: 3 warmups, N trials, 256 MiB L2 flush before each), memory peak, launches per
forward and honesty checks. It does not import ktui. It RUNS MODEL-WRITTEN CODE: read it first.

    python {script} [--device cuda|cuda:N|cpu] [--trials N] [--method cuda_event|do_bench|cuda_graph|host]
                    [--json] [--build-dir DIR]

Needs torch (and ninja plus a C++/CUDA compiler when the kernel uses load_inline).
Exit status: 0 when the kernel is correct here, 1 otherwise.
"""
'''

SCRIPT_MAIN = '''

# ---- the snapshot ---------------------------------------------------------------------------

KERNEL_LABEL = {label!r}
KERNEL_SHA1 = {sha1!r}
REFERENCE_ORIGIN = {origin!r}
RECORDED = {recorded}

KERNEL_SOURCE = {kernel_src}

REFERENCE_SOURCE = {reference_src}


def main(argv=None):
    import argparse
    import json as _json
    import shutil
    import tempfile

    ap = argparse.ArgumentParser(description="Reproduce " + KERNEL_LABEL + " (" + KERNEL_SHA1[:12] + ")")
    ap.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if available)")
    ap.add_argument("--trials", type=int, default=100, help="timed trials (default 100)")
    ap.add_argument("--method", default="cuda_event", choices=["cuda_event", "do_bench", "cuda_graph", "host"])
    ap.add_argument("--correctness-trials", type=int, default=5)
    ap.add_argument("--build-dir", default=None,
                    help="root of the keyed build directories (default: $KTUI_CACHE_DIR/build or "
                         "~/.cache/ktui/repro/build)")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="ktui-export-")
    request = {{
        "kernel_code": KERNEL_SOURCE, "kernel_sha1": KERNEL_SHA1, "kernel_label": KERNEL_LABEL,
        "reference_source": REFERENCE_SOURCE, "reference_origin": REFERENCE_ORIGIN,
        "device": args.device, "method": args.method, "trials": args.trials,
        "correctness_trials": args.correctness_trials,
        "build_root": args.build_dir or os.path.join(default_cache_root(), "build"),
    }}

    def progress(ev):
        if ev.get("event") == "stage" and ev.get("state") == "start":
            print("[" + ev["stage"] + "]", file=sys.stderr, flush=True)

    cwd = os.getcwd()
    try:
        os.chdir(work)
        result = run_request(request, emit=progress, work_dir=work)
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(_json.dumps({{"version": KERNEL_LABEL, "sha1": KERNEL_SHA1, "recorded": RECORDED,
                           "result": result}}, default=str))
    else:
        print(KERNEL_LABEL + " (sha1 " + KERNEL_SHA1[:12] + ")")
        print(format_result(result, RECORDED))
    corr = result.get("correctness") or {{}}
    return 0 if result.get("status") == "completed" and corr.get("passed") else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def _literal(text: str) -> str:
    """A readable Python literal for a source text: a raw triple-quoted string when safe."""
    for q in ("'''", '"""'):
        if q not in text and not text.endswith("\\") and not text.endswith(q[0]):
            return f"r{q}{text}{q}"
    return repr(text)


def recorded_summary(rec: Any) -> dict[str, str]:
    """What the trace recorded, as readable strings (for the script's report)."""
    out: dict[str, str] = {}
    for oc in rec.outcomes:
        t = f"turn {oc.turn}" if oc.turn is not None else "seed"
        word = {"ok": "passed", "failed": "FAILED"}.get(oc.status, oc.status)
        out[f"{oc.tool} ({t})"] = word + (f": {' '.join(oc.error.split())[:200]}" if oc.error else "")
    for m in rec.metrics:
        if not m.key.startswith(("timing.", "memory.", "launches.", "precision.")) or m.value is None:
            continue
        s = f"{m.value:g} {m.unit}".strip() if isinstance(m.value, (int, float)) else str(m.value)
        if m.note:
            s += f" ({m.note})"
        elif m.recorded_unit and m.recorded_unit not in (m.unit, None) and m.recorded is not None:
            s += f" (recorded {m.recorded} {m.recorded_unit})"
        out[m.label if m.key.split(".")[0] in ("timing",) else m.key] = s
    if rec.hardware:
        out["hardware"] = rec.hardware
    return out


def export_script(run: Any, kv: Any, reference: str, origin: str, script_name: str = "repro.py") -> str:
    from ktui import __version__
    from ktui.repro.recorded import recorded_for

    harness = (Path(__file__).resolve().parent / "harness.py").read_text(encoding="utf-8")
    rec = recorded_for(run, kv)
    head = SCRIPT_HEAD.format(label=kv.label, sha1=kv.sha1, trace=Path(str(run.path)).name,
                              ktui_version=__version__, date=time.strftime("%Y-%m-%d"),
                              problem=run.problem.title, origin=origin.replace('"', "'"), script=script_name)
    recorded = json.dumps(recorded_summary(rec), indent=4, ensure_ascii=False)
    main = SCRIPT_MAIN.format(label=kv.label, sha1=kv.sha1, origin=origin, recorded=recorded,
                              kernel_src=_literal(kv.code), reference_src=_literal(reference))
    return head + "\n" + harness.rstrip() + "\n" + main


def export_command(path: Path | str, *, version: str = "final", output: str, reference: str | None = None) -> int:
    from ktui.repro.api import ReproError, resolve_reference, select_kernels
    from ktui.trace import load

    run = load(str(path))
    try:
        if version in (None, "", "final", "last"):
            kv = select_kernels(run, final=True)[0]
        else:
            kv = select_kernels(run, version=version)[0]
        ref, origin = resolve_reference(run, reference)
    except ReproError as exc:
        print(f"ktui: {exc}", file=sys.stderr)
        return 2
    if not ref:
        print("ktui: the trace has no reference source (no fetch_problem ref_arch_src); pass --reference FILE",
              file=sys.stderr)
        return 2
    out = Path(output)
    text = export_script(run, kv, ref, origin, script_name=out.name)
    try:
        compile(text, str(out), "exec")
    except SyntaxError as exc:  # pragma: no cover - a bug in the template, not in the input
        print(f"ktui: internal error: the exported script does not compile: {exc}", file=sys.stderr)
        return 3
    try:
        out.write_text(text, encoding="utf-8")
        out.chmod(0o755)
    except OSError as exc:
        print(f"ktui: {output}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"wrote {output}: {kv.label} (sha1 {kv.sha1[:12]}), {len(text.splitlines())} lines; "
          f"run it with: python {output} --device cuda", file=sys.stderr)
    return 0
