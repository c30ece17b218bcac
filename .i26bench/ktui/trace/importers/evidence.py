"""Verifier outcomes in a tool output: :func:`evidence` reads PASS / FAIL, correctness, speedup,
timings, compile and runtime errors, with the lines that say so; the importers attach it to the
kernel version it tested (:mod:`ktui.trace.importers.tracker`). Pure functions over strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ktui.trace.model import ERROR, FAILED, OK


@dataclass(slots=True)
class Evidence:
    """What a tool output says about the kernel it tested."""

    status: str  # OK | FAILED | ERROR
    lines: list[str] = field(default_factory=list)
    correct: bool | None = None
    speedup: float | None = None
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None

    @property
    def summary(self) -> str:
        return " · ".join(self.lines[:4])


# ---- verifier outputs --------------------------------------------------------------------------
_RESULT = re.compile(r"^[^\w\n]*(?:result|status|verdict|overall)\s*[:=]\s*\**\s*"
                     r"(PASS(?:ED)?|FAIL(?:ED)?|ERROR|CORRECT|INCORRECT)\b", re.I | re.M)
_CORRECT = re.compile(r"\bcorrect(?:ness)?\b[\"']?\s*[:=]\s*[\"']?(True|False|PASS(?:ED)?|FAIL(?:ED)?|yes|no|"
                      r"(\d+)\s*/\s*(\d+))", re.I | re.M)
# a verifier's own error line: "[KernelBench] Error: RuntimeError: ..." (tagged with the harness name)
_TAGGED_ERR = re.compile(r"^[^\S\n]*\[(?!(?:INFO|DEBUG|WARN|WARNING|NOTICE|TRACE|LOG)\])[A-Za-z][\w .:-]{0,40}\][^\S\n]*(?:Error|ERROR|Exception|EXCEPTION)[^\S\n]*:[^\S\n]*\S.*$",
                         re.M)
_CORRECT_FAILED = re.compile(r"\bcorrectness (?:check )?failed\b", re.I)
_SPEEDUP = re.compile(r"\bspeed[- ]?up\b\s*[:=]\s*([0-9]*\.?[0-9]+)\s*x?", re.I)
_NEW_REF = re.compile(r"\bNew:\s*([0-9.]+)\s*ms,\s*Ref:\s*([0-9.]+)\s*ms", re.I)
_COMPILE_ERR = re.compile(r"CompilationError|Error building extension|ptxas (?:fatal|error)|"
                          r"triton\.compiler\.errors|nvcc fatal|error: identifier|\berror: expected\b|"
                          r"undefined symbol|hipcc[^\n]*error")
_RUNTIME_ERR = re.compile(r"CUDA error|HIP Error|hipError|illegal memory access|invalid configuration argument|"
                          r"CUDA out of memory|misaligned address")
_INFRA_ERR = re.compile(r"No space left on device|Connection refused|Evaluation failed")
_COMPILE_HINTS = ("compilationerror", "error building extension", "ptxas", "triton.compiler.errors", "nvcc fatal",
                  "error: identifier", "error: expected", "undefined symbol", "hipcc")
_RUNTIME_HINTS = ("cuda error", "hip error", "hiperror", "illegal memory", "invalid configuration", "out of memory",
                  "misaligned")
_INFRA_HINTS = ("no space left", "connection refused", "evaluation failed")
# cheap substring tests first: most tool outputs have none of these words
_HINTS = ("result", "status", "verdict", "overall", "correct", "speed", "error", "compil", "ptxas", "nvcc",
          "undefined symbol", "illegal memory", "misaligned", "no space left", "connection refused",
          "evaluation failed", "new:")
_LINE_LIMIT = 200


def _short(line: str) -> str:
    s = line.strip()
    return s if len(s) <= _LINE_LIMIT else s[: _LINE_LIMIT - 1] + "…"


def _line_of(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return text[a: b if b >= 0 else len(text)]


def evidence(text: str) -> Evidence | None:
    """Verifier results in a tool output, with the lines that say so; None when there are none."""
    if not text or not isinstance(text, str):
        return None
    if len(text) > (4 << 20):  # a huge output: its head and tail carry the verdict
        text = text[: 2 << 20] + "\n" + text[-(2 << 20):]
    low = text.lower()
    if not any(h in low for h in _HINTS):
        return None
    groups: dict[str, list[str]] = {"verdict": [], "speedup": [], "correct": [], "error": []}

    def add(group: str, s: str) -> None:
        s = _short(s)
        if s and all(s not in g for g in groups.values()):
            groups[group].append(s)

    verdict = None
    for m in (_RESULT.finditer(text) if any(h in low for h in ("result", "status", "verdict", "overall"))
              else ()):
        verdict = m.group(1).upper()
        add("verdict", m.group(0))
    correct = None
    has_correct = "correct" in low
    for m in (_CORRECT.finditer(text) if has_correct else ()):
        v = m.group(1).lower()
        if m.group(2) is not None:
            correct = int(m.group(2)) == int(m.group(3)) and int(m.group(3)) > 0
        else:
            correct = v in ("true", "pass", "passed", "yes")
        add("correct", text[text.rfind("\n", 0, m.start()) + 1: m.end()])
    for m in (_CORRECT_FAILED.finditer(text) if has_correct else ()):
        correct = False
        add("correct", _line_of(text, m.start(), m.end()))
    speedup = None
    for m in (_SPEEDUP.finditer(text) if "speed" in low else ()):
        try:
            speedup = float(m.group(1))
        except ValueError:
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        add("speedup", text[start: end if end >= 0 else len(text)])
    new = ref = None
    m = _NEW_REF.search(text)
    if m:
        new, ref = float(m.group(1)), float(m.group(2))
    def lines_of(rx: re.Pattern, n: int) -> list[str]:
        out: list[str] = []
        for mm in rx.finditer(text):
            ln = _line_of(text, mm.start(), mm.end())
            if ln not in out:
                out.append(ln)
                if len(out) >= n:
                    break
        return out

    compile_err = lines_of(_COMPILE_ERR, 2) if any(h in low for h in _COMPILE_HINTS) else []
    runtime_err = lines_of(_RUNTIME_ERR, 2) if any(h in low for h in _RUNTIME_HINTS) else []
    if "error" in low or "exception" in low:  # the harness's own "[Name] Error: ..." line
        tagged = [x for x in lines_of(_TAGGED_ERR, 2) if x not in compile_err + runtime_err]
        if tagged and not compile_err:
            runtime_err = runtime_err + tagged
    infra_err = lines_of(_INFRA_ERR, 1) if any(h in low for h in _INFRA_HINTS) else []
    for s in compile_err + runtime_err + infra_err:
        add("error", s)
    lines = [x for g in ("verdict", "speedup", "correct", "error") for x in groups[g]]
    if not lines:
        return None
    if verdict in ("PASS", "PASSED", "CORRECT"):
        status = OK
    elif verdict in ("FAIL", "FAILED", "INCORRECT"):
        status = FAILED
    elif verdict == "ERROR":
        status = ERROR
    elif correct is True and not compile_err and not runtime_err:
        status = OK
    elif correct is False or compile_err or runtime_err:
        status = FAILED
    elif infra_err:
        status = ERROR
    elif speedup is not None:
        status = OK
    else:
        return None
    if correct is None and status == OK and verdict is not None:
        correct = True
    return Evidence(status, lines, correct, speedup, new, ref)
