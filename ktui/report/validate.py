"""`ktui validate PATH...`: per file the variant, counts and every problem with its line."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rich.text import Text

from ktui.report.console import err_console, out_console
from ktui.trace import load
from ktui.trace.address import split as split_address
from ktui.trace.words import count, plural
from ktui.view.text import json_text, one_line


def _is_trace(fp: Path) -> bool:
    """Under a directory, the files ``ktui runs`` lists: every ``*.jsonl`` and KernelBench sample
    file, and the ``.json`` / ``.traj`` / ``.eval`` files that are traces (a result or config file
    is not, nor a KernelBench Triton generation's ``results.jsonl``)."""
    if fp.name.endswith(".jsonl"):
        from ktui.trace.results import is_sidecar

        return not is_sidecar(str(fp))
    if not fp.name.endswith((".json", ".traj", ".eval")):
        return True
    from ktui.trace.importers import detect

    try:
        return detect(str(fp)).name not in ("unknown", "none")
    except (OSError, ValueError):
        return True  # load() reports it


def trace_files(paths: list[str], err) -> list[Path]:
    """Files named directly, plus the traces under named directories: the files ``ktui runs``
    lists (``*.jsonl``, KernelBench sample files, and ``.json`` / ``.traj`` / ``.eval`` traces;
    not runs.jsonl or other sweep records, not result or config files): the sweep index's
    ``looked_at`` decides for both."""
    from ktui.trace.index.walk import agent_copy, looked_at

    out: list[Path] = []
    seen: set[str] = set()
    skipped = 0
    for p in paths:
        path = Path(p)
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except FileNotFoundError:
            err.print(Text(f"ktui: {one_line(p)}: no such file or directory"))
            out.append(path)  # counted, and in --json; no second line on stdout
            continue
        except OSError:
            is_dir = False  # load() reports it as one problem line
        if is_dir:
            for root, dirs, files in os.walk(path, followlinks=True, onerror=None):
                real = os.path.realpath(root)
                if real in seen:  # symlink loop or duplicate
                    dirs[:] = []
                    continue
                seen.add(real)
                dirs.sort()
                names = frozenset(files) | frozenset(dirs)
                dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__" and not agent_copy(d, names)]
                for f in sorted(files):
                    if looked_at(f):
                        fp = Path(root) / f
                        rp = os.path.realpath(fp)
                        if rp not in seen:
                            seen.add(rp)
                            if _is_trace(fp):
                                out.append(fp)
                            else:
                                skipped += 1
        else:
            out.append(path)
    if skipped:
        err.print(Text(f"ktui: {count(skipped, '.json / .jsonl / .traj / .eval file')} under the directories "
                       f"{plural(skipped, 'is not a trace (a result file?)', 'are not traces (result files among them)')}; "
                       "skipped"))
    return _runs_inside(out)


def _runs_inside(files: list[Path]) -> list[Path]:
    """A file that holds many runs stands for each of them (``path#key``, ktui.trace.address), as
    in ``ktui runs``; a file of none stays, to be reported."""
    from ktui.trace.address import join
    from ktui.trace.importers import runs_in_file

    out: list[Path] = []
    for fp in files:
        found = runs_in_file(str(fp)) if fp.name.endswith(".json") and os.path.isfile(fp) else None
        if found and found[1]:
            out.extend(Path(join(str(fp), k)) for k in found[1])
        else:
            out.append(fp)
    return out


def validate_command(paths: list[str], as_json: bool = False) -> int:
    """One record a line (grep-able, never wrapped, whatever the width): a file's line, then one
    line per problem. A file that is not a trace at all (missing, binary, no readable event) is
    one line saying so, the same words every other command prints."""
    from ktui.trace.facts import not_a_trace

    console = out_console()
    err = err_console()
    files = trace_files(paths, err)
    if not files:
        err.print(Text("ktui: no trace files (*.jsonl, .json / .traj / .eval traces, KernelBench sample files) found"))
        return 1
    bad = 0
    report = []
    for f in files:
        run = load(f)
        probs = run.problems
        why = not_a_trace(run) if probs else None
        bad += bool(probs)
        entry = {
            "file": str(f), "variant": run.variant, "events": len(run.events), "turns": len(run.turns),
            "tool_calls": len(run.agent_calls), "kernel_versions": len(run.kernels),
            "terminal_state": run.terminal_state, "incomplete": run.incomplete,
            "problems": [{"line": p.line, "severity": p.severity, "message": p.message, "excerpt": p.excerpt}
                         for p in probs],
        }
        if why:
            entry["not_a_trace"] = why
        report.append(entry)
        if as_json:
            continue
        name = (one_line(str(f)), "bold")
        if not os.path.lexists(split_address(str(f)).path):
            continue  # said on stderr by trace_files
        if why:
            console.print(Text.assemble(("✗ ", "red"), name, "  ", (one_line(why), "red")), soft_wrap=True)
            continue
        mark = Text("✗ ", "red") if probs else Text("✓ ", "green")
        line = Text.assemble(mark, name,
                             f"  {run.variant}  events={len(run.events)} turns={len(run.turns)} "
                             f"calls={len(run.agent_calls)} kernels={len(run.kernels)} end={run.terminal_state}")
        if run.incomplete:
            line.append("  (incomplete last line)", "yellow")
        console.print(line, soft_wrap=True)
        for p in probs:
            console.print(Text.assemble(f"    line {p.line}: ", (one_line(p.message), "red" if p.severity == "error"
                                                                  else "yellow"),
                                        (f"  [{one_line(p.excerpt)}]" if p.excerpt else "", "dim")), soft_wrap=True)
    if as_json:
        print(json_text(report, indent=2))
    else:
        console.print(Text(f"{count(len(files), 'file')}, {bad} with problems", "bold"))
    return 1 if bad else 0
