"""``ktui export TRACE --version vK -o repro.py``: the command around
:func:`ktui.repro.export.export_script` (which writes the standalone script). What it prints (the
output path, the version's label, the trace's hardware, an error) is cleaned here, once, with the
view's :func:`~ktui.view.text.clean`: the service hands it over raw."""

from __future__ import annotations

import sys
from pathlib import Path

from ktui.trace.words import count
from ktui.view.text import clean


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


def export_command(path: Path | str, *, version: str = "final", output: str, reference: str | None = None) -> int:
    from ktui.repro.api import ReproError, resolve_reference, select_kernels
    from ktui.repro.export import export_script, suggested_device
    from ktui.trace import load

    run = load(str(path))
    try:
        if version in (None, "", "final", "last"):
            kv = select_kernels(run, final=True)[0]
        else:
            kv = select_kernels(run, version=version)[0]
        ref, origin = resolve_reference(run, reference)
    except ReproError as exc:
        _say(f"ktui: {clean(str(exc))}")
        return 2
    if not ref:
        _say("ktui: the trace has no reference source (no fetch_problem ref_arch_src); pass --reference FILE")
        return 2
    out = Path(output)
    text = export_script(run, kv, ref, origin, script_name=out.name)
    try:
        compile(text, str(out), "exec")
    except SyntaxError as exc:  # pragma: no cover - a bug in the template, not in the input
        _say(f"ktui: internal error: the exported script does not compile: {exc}")
        return 3
    try:
        out.write_text(text, encoding="utf-8")
        out.chmod(0o755)
    except OSError as exc:
        _say(f"ktui: {clean(output)}: cannot write: {clean(exc.strerror or exc)}")
        return 2
    device, why = suggested_device(run)
    _say(f"wrote {clean(output)}: {clean(kv.label)} (sha1 {clean(kv.sha1[:12])}), {count(len(text.splitlines()), 'line')}; "
         f"run it with: python {clean(output)}" + (f" --device {device}" if device else "") + f" ({clean(why)})")
    return 0
