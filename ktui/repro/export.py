"""``ktui export TRACE --version vK -o repro.py``: a standalone reproduction script.

The script holds the reference source, the kernel source, what the trace recorded, and ktui's
whole re-execution engine (the ``ktui/engine`` and ``ktui/engine/probes`` packages,
embedded as module sources and installed under a private package name at start), so it runs
anywhere torch runs, without ktui, with the same judge and the same sandboxed workers as
``ktui repro`` (the workers are this script again, with ``--ktui-worker``)::

    python repro.py [--device cuda|cuda:N|cpu] [--trials N] [--method M] [--json] [--build-dir DIR]

Every string that comes from the trace (title, labels, origin, sources, recorded values) is
written as a Python literal built by ``repr``: nothing in a trace can end a string early.
The command that writes the file and says so is :mod:`ktui.report.export` (it cleans what it prints).
The script itself runs without ktui, so it has no view to clean its text output with: its
``_shown`` writes a control character or a bidi override as ``<U+001B>`` (its ``--json`` is
JSON with every such character escaped).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ktui import engine

PKG = "ktui_standalone"

SCRIPT_HEAD = '''#!/usr/bin/env python3
# Standalone reproduction of one kernel snapshot, written by `ktui export` (ktui {ktui_version}) on {date}.
# It RUNS MODEL-WRITTEN CODE (in sandboxed worker processes where this machine allows): read it first.
#
#   python {script} [--device cuda|cuda:N|cpu] [--trials N] [--method cuda_event|do_bench|cuda_graph|host]
#                   [--json] [--build-dir DIR]
#
# KernelBench-style correctness (seeded trials + a held-out one, allclose at 1e-4 fp32 / 1e-2
# fp16-bf16), timing (cuda_event: warmups, batches until the median is stable, 256 MiB L2 flush
# before each trial, cross-checked by the judge's own clock), memory peak, launches per forward
# and honesty checks. Needs torch (and ninja plus a C++/CUDA compiler when the kernel uses
# load_inline). It does not import ktui. Exit status: 0 when the kernel is correct here, 1 otherwise.
'''

SCRIPT_MAIN = '''
import sys

# ---- the snapshot (every value below is a Python literal made by repr) ------------------

TRACE_NAME = {trace}
PROBLEM_TITLE = {problem}
KERNEL_LABEL = {label}
KERNEL_SHA1 = {sha1}
REFERENCE_ORIGIN = {origin}
RECORDED = {recorded}

KERNEL_SOURCE = {kernel_src}

REFERENCE_SOURCE = {reference_src}

# ---- the engine (ktui/engine and ktui/engine/probes, as module sources) ------------

MODULES = {modules}


def _install():
    """Make the embedded modules importable (as the private package {pkg})."""
    import importlib.util

    class Finder:
        def find_spec(self, name, path=None, target=None):
            if name in MODULES:
                return importlib.util.spec_from_loader(name, self, is_package=MODULES[name][0])
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, mod):
            mod.__file__ = __file__
            exec(compile(MODULES[mod.__name__][1], __file__ + "::" + mod.__name__, "exec"), mod.__dict__)

    if not any(type(f).__name__ == "Finder" and getattr(f, "ktui", False) for f in sys.meta_path):
        f = Finder()
        f.ktui = True
        sys.meta_path.insert(0, f)
    import importlib

    for name in ("{pkg}.roles", "{pkg}.pipeline", "{pkg}.report", "{pkg}.probes.basic"):
        importlib.import_module(name)


def _finite(o):
    """The --json result as JSON can hold it: an inf or nan becomes null, and a field
    NAME_nonfinite beside it says which ("inf", "-inf", "nan"); an item of a list: null."""
    if isinstance(o, float):
        return o if o == o and o not in (float("inf"), float("-inf")) else None
    if isinstance(o, dict):
        out = {{}}
        for k, v in o.items():
            out[k] = _finite(v)
            if isinstance(v, float) and out[k] is None and (str(k) + "_nonfinite") not in o:
                out[str(k) + "_nonfinite"] = "nan" if v != v else ("inf" if v > 0 else "-inf")
        return out
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def _shown(text):
    """What this script prints (the kernel's errors, the trace's values): a character the terminal
    would act on (escapes, other controls, bidi overrides) is written as its code point instead."""
    return "".join(ch if ch.isprintable() or ch == "\\n" else "<U+%04X>" % ord(ch) for ch in str(text))


def main(argv=None):
    import argparse
    import json as _json

    argv = sys.argv[1:] if argv is None else argv
    if "--ktui-worker" in argv:
        _install()
        sys.modules["{pkg}.roles"].main(argv)
        return 0
    ap = argparse.ArgumentParser(description="Reproduce " + KERNEL_LABEL + " (" + KERNEL_SHA1[:12] + ")")
    ap.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if available)")
    ap.add_argument("--trials", type=int, default=100, help="timed trials per batch (default 100)")
    ap.add_argument("--method", default="cuda_event", choices=["cuda_event", "do_bench", "cuda_graph", "host"])
    ap.add_argument("--correctness-trials", type=int, default=5)
    ap.add_argument("--build-dir", default=None,
                    help="root of the keyed build directories (default: $KTUI_CACHE_DIR/build or "
                         "~/.cache/ktui/repro/build)")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    _install()
    import os

    errors = sys.modules["{pkg}.errors"]
    pipeline = sys.modules["{pkg}.pipeline"]
    report = sys.modules["{pkg}.report"]
    here = os.path.dirname(os.path.abspath(__file__))
    job = {{
        "kernel_code": KERNEL_SOURCE, "kernel_sha1": KERNEL_SHA1, "kernel_label": KERNEL_LABEL,
        "reference_source": REFERENCE_SOURCE, "reference_origin": REFERENCE_ORIGIN,
        "device": args.device, "method": args.method, "trials": args.trials,
        "correctness_trials": args.correctness_trials,
        "build_root": args.build_dir or os.path.join(errors.default_cache_root(), "build"),
        "worker_argv": [sys.executable, os.path.abspath(__file__), "--ktui-worker"], "python_path": [here],
    }}

    def progress(ev):
        if ev.get("event") == "stage" and ev.get("state") == "start":
            print("[" + ev["stage"] + "]", file=sys.stderr, flush=True)

    result = pipeline.judge(job, emit=progress)
    if args.json:
        print(_json.dumps(_finite({{"version": KERNEL_LABEL, "sha1": KERNEL_SHA1, "recorded": RECORDED,
                                   "result": result}}), default=str, allow_nan=False))
    else:
        print(_shown(KERNEL_LABEL + " (sha1 " + KERNEL_SHA1[:12] + ")"))
        print(_shown(report.format_result(result, RECORDED)))
    corr = result.get("correctness") or {{}}
    return 0 if result.get("status") == "completed" and corr.get("passed") else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def engine_modules() -> dict[str, tuple[bool, str]]:
    """{module name: (is a package, source)} for the embedded engine (``ktui/engine`` without its
    process entry points, and ``ktui/engine/probes``)."""
    root = Path(engine.__file__).resolve().parent
    mods: dict[str, tuple[bool, str]] = {}
    for f in sorted(root.glob("*.py")):
        if f.stem in _ENTRY_POINTS:
            continue
        name = PKG if f.name == "__init__.py" else f"{PKG}.{f.stem}"
        mods[name] = (f.name == "__init__.py", f.read_text(encoding="utf-8"))
    for f in sorted((root / "probes").glob("*.py")):
        name = f"{PKG}.probes" if f.name == "__init__.py" else f"{PKG}.probes.{f.stem}"
        mods[name] = (f.name == "__init__.py", f.read_text(encoding="utf-8"))
    return mods


# the engine's own process entry points (absolute imports of ktui): not embedded
_ENTRY_POINTS = ("judge", "worker", "profile_target", "netup")


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


def _dict_literal(d: dict[str, str]) -> str:
    if not d:
        return "{}"
    return "{\n" + "".join(f"    {str(k)!r}: {str(v)!r},\n" for k, v in d.items()) + "}"


def _modules_literal(mods: dict[str, tuple[bool, str]]) -> str:
    return "{\n" + "".join(f"    {k!r}: ({p!r}, {src!r}),\n" for k, (p, src) in mods.items()) + "}"


def export_script(run: Any, kv: Any, reference: str, origin: str, script_name: str = "repro.py") -> str:
    from ktui import __version__
    from ktui.repro.recorded import recorded_for

    rec = recorded_for(run, kv)
    head = SCRIPT_HEAD.format(ktui_version=__version__, date=time.strftime("%Y-%m-%d"),
                              script="".join(ch for ch in script_name if ch.isprintable() and ch not in "\n\r"))
    title = getattr(getattr(run, "problem", None), "title", None)
    main = SCRIPT_MAIN.format(trace=repr(Path(str(run.path)).name), problem=repr(str(title or "")),
                              label=repr(str(kv.label)), sha1=repr(str(kv.sha1)), origin=repr(str(origin)),
                              recorded=_dict_literal(recorded_summary(rec)), kernel_src=repr(str(kv.code)),
                              reference_src=repr(str(reference)), modules=_modules_literal(engine_modules()),
                              pkg=PKG)
    return head + main


def suggested_device(run: Any) -> tuple[str | None, str]:
    """The ``--device`` to suggest for a run's script, and why: the hardware the trace recorded
    (a CPU, or a GPU), or none when it recorded none (the script then takes a GPU if it sees one).
    The reason quotes the trace's hardware as it is (raw): whoever prints it cleans it."""
    import re

    from ktui.repro.recorded import recorded_hardware
    from ktui.trace.text import shorten

    hw = recorded_hardware(run)
    if not hw:
        return None, "the trace records no hardware: the script uses a GPU when it sees one, else add --device cpu"
    if re.search(r"\bcpu\b", hw, re.I):
        return "cpu", f"the trace ran on {shorten(hw, 60)}"
    return "cuda", f"the trace ran on {shorten(hw, 60)}"
