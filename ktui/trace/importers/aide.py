"""AIDE tree-search journals (``journal.json`` of aideml, ``__version`` "2"), as KernelBench's AIDE
kernel search writes them (``logs/kernel_search/<run>/``).

A journal is ``{nodes[], node2parent: {child id: parent id}, __version}``. Each node is one step
of the search: the model's ``plan`` and the whole ``code`` it wrote (``step``, ``id``, ``ctime``:
unix seconds), then the evaluation of that code (``_term_out``: its output lines, ``exec_time``,
``exc_type`` / ``exc_info`` when it failed: ``CompilationError``, ``CorrectnessError`` ...),
the feedback model's ``analysis``, ``metric`` ``{value, maximize}`` and ``is_buggy``. A node with
no parent is a draft; one whose parent is buggy debugs it; one whose parent works improves it.
The search's answer (its ``best_solution.py``) is its best working node (the lowest metric, or
the highest when ``maximize``; the first of equals), not its last; with no working node, the
first node.

One run a journal: one turn per node (its plan the turn's text; its code written as the agent's
file, then evaluated: ok or failed, with the evaluation's output), the analysis a message, the
answer's version the final kernel, the outcome passed when some node works. Beside the
journal, ``config.yaml`` names the model (``agent.code.model``), the problem (``kernel.level`` /
``problem_id``) and the file (``exec.agent_file_name``); ``reference_architecture.py`` is the
problem's reference. "Lines" are the nodes (1, 2, ...). The journal stamps a node only when
it is made (``ctime``, after the model wrote it): a node's time runs from the node before, so it
holds that node's evaluation and feedback as well as its own generation.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ktui.trace.importers.common import (
    Assembler,
    TooBig,
    as_dict,
    as_list,
    as_num,
    as_str,
    iso_ms,
    kernelbench_problem,
    read_bounded,
)
from ktui.trace.model import FAILED, OK, KernelUse, Metrics, Run, kernel_sha1
from ktui.trace.words import count

NAME = "aide"
LABEL = "AIDE tree-search journal (journal.json)"
LINE_BASED = False

_MAX_SIDE = 1 << 20
_MAX_NODES = 2000
_NODE_KEYS = ("code", "plan", "step", "metric", "is_buggy", "_term_out")


def detect_object(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("nodes"), list) or \
            not isinstance(obj.get("node2parent"), dict):
        return False
    first = obj["nodes"][:1]
    return not first or (isinstance(first[0], dict) and sum(k in first[0] for k in _NODE_KEYS) >= 3)


def _side(folder: str, name: str) -> str | None:
    try:
        return read_bounded(os.path.join(folder, name), _MAX_SIDE).decode("utf-8", "replace")
    except (OSError, TooBig):
        return None


def _yaml_value(text: str, section: str, key: str) -> str | None:
    """``key: value`` under a top-level ``section:`` of a simple YAML file (no YAML parser: the
    file is KernelBench AIDE's own flat config). Nested sections are searched too."""
    m = re.search(rf"^{re.escape(section)}:\s*\n((?:[ \t]+.*\n?|\s*\n)*)", text, re.M)
    if not m:
        return None
    v = re.search(rf"^[ \t]+{re.escape(key)}:[ \t]*['\"]?([^'\"\n#]*?)['\"]?[ \t]*(?:#.*)?$", m.group(1), re.M)
    val = v.group(1).strip() if v else ""
    return val if val and val not in ("null", "~") else None


def _config(run: Run, folder: str) -> str:
    """The model, the problem and the agent's file name from ``config.yaml`` beside the journal;
    the reference from ``reference_architecture.py``. Returns the file name."""
    cfg = _side(folder, "config.yaml") or ""
    code_section = re.search(r"^agent:\s*\n(?:[ \t]+.*\n)*?[ \t]+code:\s*\n((?:[ \t]{4,}.*\n?)*)", cfg, re.M)
    model = None
    if code_section:
        mm = re.search(r"^[ \t]+model:[ \t]*['\"]?([^'\"\n#]+?)['\"]?[ \t]*$", code_section.group(1), re.M)
        model = mm.group(1).strip() if mm else None
    run.model = model if model and model not in ("null", "~") else _yaml_value(cfg, "inference", "model_name")
    ref = _side(folder, "reference_architecture.py")
    pid = _yaml_value(cfg, "kernel", "problem_id")
    kernelbench_problem(run.problem, _yaml_value(cfg, "kernel", "level"), None,
                        int(pid) if pid and pid.isdigit() and len(pid) < 7 else pid, None, ref,
                        "reference_architecture.py beside the journal")
    if run.problem.level is not None and run.problem.problem_id is not None:
        run.problem.dataset_variant = "KernelBench"
    backend = _yaml_value(cfg, "gpu", "backend")
    if backend:
        run.backend = backend
    name = _yaml_value(cfg, "exec", "agent_file_name") or "kernel_code.py"
    return os.path.basename(name) or "kernel_code.py"


def _step_key(node: dict) -> float:
    """Nodes in the order of their ``step`` (those without one last, in file order)."""
    v = as_num(node.get("step"))
    return v if v is not None and v == v else 1e18


def _metric(node: dict) -> float | None:
    m = node.get("metric")
    return as_num(m.get("value")) if isinstance(m, dict) else as_num(m)


def _maximize(nodes: list[dict]) -> bool:
    for n in nodes:
        m = n.get("metric")
        if isinstance(m, dict) and isinstance(m.get("maximize"), bool):
            return m["maximize"]
    return False


def _unit_ms(node: dict) -> bool:
    """Whether the evaluation printed its metric in milliseconds (``Performance: 66.500 ms``)."""
    return any(isinstance(x, str) and re.search(r"Performance:\s*[\d.]+\s*ms\b", x)
               for x in as_list(node.get("_term_out"))[:200])


def load_object(obj: Any, path: str) -> Run:
    asm = Assembler(path, NAME)
    run = asm.run
    if not detect_object(obj):
        asm.problem(0, "not an AIDE journal: expected 'nodes' and 'node2parent'", "", "error", "$")
        return asm.finish()
    folder = os.path.dirname(os.path.abspath(path))
    fname = _config(run, folder)
    run.persona = "AIDE tree search"
    parents = {k: v for k, v in obj["node2parent"].items() if isinstance(k, str) and isinstance(v, str)}
    nodes = [n for n in obj["nodes"][:_MAX_NODES] if isinstance(n, dict)]
    if len(obj["nodes"]) > len(nodes):
        asm.note(0, f"{count(len(obj['nodes']) - len(nodes), 'node')} not read (not objects, or past {_MAX_NODES})")
    if not nodes:
        asm.event(1, 0, 0, "journal", None, None, None)
        asm.note(0, "the journal holds no node: the search wrote nothing")
        asm.outcome("incomplete", None, "no node in the journal", 0, "halt")
        return asm.finish()
    nodes.sort(key=_step_key)
    by_id = {n["id"]: n for n in nodes if isinstance(n.get("id"), str)}
    step_of = {nid: i + 1 for i, nid in enumerate(n.get("id") for n in nodes) if isinstance(nid, str)}
    evals: list[tuple[int, int, str, str, str]] = []  # (turn, call, status, summary, sha1)
    for i, n in enumerate(nodes):
        line, ts = i + 1, iso_ms(as_num(n.get("ctime")))
        t = asm.turn(line, ts)
        asm.event(line, 0, 0, "node", ts, "agent", t.index)
        nid = as_str(n.get("id"))
        parent = (parents.get(nid) if nid else None) or as_str(n.get("parent"))
        pn = by_id.get(parent) if parent else None
        stage = "draft" if pn is None else "debug" if pn.get("is_buggy") is True else "improve"
        of = f" of node {step_of[parent]}" if parent and parent in step_of else ""
        asm.note(line, f"node {i + 1} ({stage}{of})")
        asm.assistant_text(t, as_str(n.get("plan")), line)
        code = as_str(n.get("code"))
        if code:
            w = asm.call(t, "write_code", {"file_path": fname, "content": code}, line, ts)
            asm.result(w, f"{fname} written", line, ts, status=OK)
            asm.track_call(w)
        out = "\n".join(x for x in as_list(n.get("_term_out")) if isinstance(x, str))
        exc = as_str(n.get("exc_type"))
        buggy = n.get("is_buggy") is True or bool(exc)
        c = asm.call(t, "evaluate", {"command": f"evaluate {fname}"}, line, ts)
        info = as_dict(n.get("exc_info"))
        detail = as_str(info.get("error")) or ""
        text = out or (f"{exc}: {detail}" if exc else "evaluated")
        asm.result(c, text, line, ts, status=FAILED if buggy else OK)
        value = _metric(n)
        summary = f"node {i + 1}: " + (f"{exc or 'buggy'}" if buggy else
                                        "works" + (f", metric {value:g}" if value is not None else ""))
        evals.append((t.index, c.index, FAILED if buggy else OK, summary, kernel_sha1(code) if code else ""))
        analysis = as_str(n.get("analysis"))
        if analysis:
            asm.message(line, "feedback", analysis, "feedback")
    good = [(n, _metric(n)) for n in nodes if n.get("is_buggy") is not True and not n.get("exc_type")]
    scored = [(n, v) for n, v in good if v is not None]
    mx = _maximize(nodes)
    best = (max if mx else min)(scored, key=lambda nv: nv[1]) if scored else (good[0] if good else None)
    if best is not None:
        k = nodes.index(best[0]) + 1
        asm.outcome("passed", None, f"node {k} is the search's best working node"
                    + (f" (metric {best[1]:g}, {'higher' if mx else 'lower'} is better)" if best[1] is not None else ""),
                    len(nodes), "grader")
    else:
        asm.outcome("failed", None, f"none of the {count(len(nodes), 'node')} works", len(nodes), "grader")
    run = asm.finish()
    for turn, idx, status, summary, sha in evals:  # each evaluation judged the code its node wrote
        kv = next((v for v in run.kernels if v.sha1 == sha), None)
        if kv is not None and not any(u.verdict and u.call_index == idx for u in kv.uses):  # not read from its output
            kv.uses.append(KernelUse(turn, idx, "evaluate", status, summary, True))
    m = Metrics(source=f"{os.path.basename(path)} (the best node's metric)", correct=best is not None)
    # the search's answer (what AIDE saves as best_solution.py): the best working node; with none,
    # every metric ties at "worst" and AIDE keeps the first node
    answer = best[0] if best is not None else nodes[0]
    code = as_str(answer.get("code"))
    kv = next((v for v in run.kernels if code and v.sha1 == kernel_sha1(code)), None)
    if kv is not None:
        run.final_kernel_number = kv.number
    if best is not None:
        if best[1] is not None and _unit_ms(best[0]):
            m.runtime_us = best[1] * 1000
    run.metrics = m
    from ktui.trace.derive import flags as derive_flags

    derive_flags(run)
    return run
