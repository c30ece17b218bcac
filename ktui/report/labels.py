"""``ktui label TRACE ...`` and ``ktui labels export DIR``: labels and notes kept outside the traces.

The store is :mod:`ktui.trace.labels` (JSON Lines, keyed by the trace's content identity). Every
string that came from a trace or from a labels file is sanitized before it is printed.
"""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import IO

from ktui.trace.labels import (
    Label,
    LabelError,
    LabelStore,
    append,
    content_id,
    default_file,
    files_for,
    record,
)
from ktui.trace.words import count, plural
from ktui.view.text import finite_data, one_line


def _err(msg: str) -> None:
    print(f"ktui: {msg}", file=sys.stderr)


def _line(lab: Label) -> str:
    where = f" @ {lab.where}" if lab.where else ""
    note = f"  — {one_line(lab.note, 200)}" if lab.note else ""
    by = f"  ({one_line(lab.by, 40)} {one_line(lab.at, 30)})" if lab.by or lab.at else ""
    return f"{one_line(lab.label)}{where}{note}{by}"


def label_command(trace: Path, label: str | None, *, version: str | None = None, turn: int | None = None,
                  note: str | None = None, remove: bool = False, labels_file: str | None = None,
                  out: IO[str] | None = None) -> int:
    """Add (or ``remove``) a label on the run, a turn or a kernel version; without a label, list them."""
    out = out or sys.stdout
    try:
        cid = content_id(trace)
    except OSError as exc:
        _err(f"{one_line(str(trace))}: cannot read: {exc.strerror or exc}")
        return 2
    target = labels_file or default_file()
    if label is None:
        store = LabelStore.read(files_for(None, [labels_file] if labels_file else []))
        labs = store.for_id(cid)
        for lab in labs:
            out.write(_line(lab) + "\n")
        if not labs:
            out.write(f"no labels on {one_line(str(trace))}\n")
        return 0
    if version is not None and turn is not None:
        _err("choose one of --version, --turn")
        return 2
    scope, kernel_sha1, vlabel = "run", None, None
    if version is not None or turn is not None:
        from ktui.trace import load

        run = load(str(trace))
        if turn is not None:
            if not 0 <= turn < len(run.turns):
                _err(f"no turn {turn} (the run has turns 0-{len(run.turns) - 1})" if run.turns else "the run has no turns")
                return 2
            scope = "turn"
        else:
            kv = run.kernel(version) if version != "final" else run.final_kernel
            if kv is None:
                have = ", ".join(k.label for k in run.kernels) or "none"
                _err(f"no kernel version {one_line(version)!r} in this trace (it has {have})")
                return 2
            scope, kernel_sha1, vlabel = "version", kv.sha1, kv.label
    try:
        rec = record(cid, label, op="remove" if remove else "add", scope=scope, turn=turn, version=vlabel,
                     kernel_sha1=kernel_sha1, note=note or "", trace=os.path.abspath(trace))
        append(target, rec)
    except LabelError as exc:
        _err(str(exc))
        return 2
    except OSError as exc:
        _err(f"{target}: cannot write: {exc.strerror or exc}")
        return 2
    where = {"run": "the run", "turn": f"turn {turn}", "version": vlabel}[scope]
    verb = "removed" if remove else "labelled"
    print(f"ktui: {verb} {where} of {one_line(trace.name)} {one_line(rec['label'])!r} in {target}", file=sys.stderr)
    return 0


EXPORT_FIELDS = ["trace", "content_id", "scope", "turn", "version", "kernel_sha1", "label", "note", "by", "at",
                 "model", "problem", "outcome", "speedup", "hacks", "flags"]


def export_command(root: Path, fmt: str = "jsonl", *, labels_file: str | None = None, output: str | None = None,
                   use_cache: bool = True, with_code: bool = True) -> int:
    """One row per label on a run of the sweep under ``root`` (jsonl: with the labelled code)."""
    from ktui.trace.index import SweepIndex

    store = LabelStore.read(files_for(root, [labels_file] if labels_file else []))
    for p in store.problems:
        _err(one_line(p))
    if store.bad_lines:
        _err(f"{count(store.bad_lines, 'line')} of {plural(len(store.files), 'the labels file', 'the labels files')} "
             "skipped (not a label)")
    idx = SweepIndex(root, use_cache=use_cache, labels=store)
    fh: IO[str]
    fh = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115
    n = 0
    try:
        w = csv.writer(fh) if fmt == "csv" else None
        if w is not None:
            w.writerow(EXPORT_FIELDS)
        for s in idx.summaries():
            labs = store.for_id(s.content_id)
            if not labs:
                continue
            run = None
            for lab in labs:
                row = {"trace": s.path, "content_id": s.content_id, "scope": lab.scope, "turn": lab.turn,
                       "version": lab.version, "kernel_sha1": lab.kernel_sha1, "label": lab.label, "note": lab.note,
                       "by": lab.by, "at": lab.at, "model": s.model, "problem": s.problem, "outcome": s.outcome,
                       "speedup": s.speedup, "hacks": list(s.hacks), "flags": list(s.flags)}
                if w is not None:
                    w.writerow([_csv(row[k]) for k in EXPORT_FIELDS])
                else:
                    if with_code and lab.scope in ("version", "run"):
                        if run is None:
                            from ktui.trace import load

                            run = load(s.real or s.path)
                        kv = run.kernel(lab.version) if lab.scope == "version" else run.final_kernel
                        if kv is not None and lab.kernel_sha1 and kv.sha1 != lab.kernel_sha1:
                            kv = next((k for k in run.kernels if k.sha1 == lab.kernel_sha1), None)
                        row["code"] = kv.code if kv is not None else None
                        row["code_version"] = kv.label if kv is not None else None
                    fh.write(json.dumps(finite_data(row), ensure_ascii=False, allow_nan=False) + "\n")
                n += 1
    except OSError as exc:
        _err(f"{output or 'stdout'}: cannot write: {exc.strerror or exc}")
        return 2
    finally:
        if output:
            fh.close()
    _err(f"{count(n, 'label')} exported" + (f" to {output}" if output else ""))
    return 0 if n else 1


def _csv(v: object) -> object:
    """A CSV cell: lists joined; a text a spreadsheet would run as a formula gets a leading quote."""
    if isinstance(v, list):
        v = " ".join(str(x) for x in v)
    if v is None:
        return ""
    if isinstance(v, str):
        v = one_line(v)
        if v[:1] in ("=", "+", "-", "@", "\t", "\r"):
            v = "'" + v
    return v
