"""Kernel versions from the ways agents write code.

A :class:`FileTracker` follows the content of every file an agent writes, in call order:

- a write tool's full content (Wafer ``write``, Claude Code ``Write``);
- an edit applied to the last known content of that file (Claude Code ``Edit`` / ``MultiEdit``
  old/new strings); when the base is not in the trace the edit is kept as a *partial* version
  (only the new text) and says so;
- a Codex ``apply_patch`` (``*** Begin Patch`` ... ``*** Update File:`` hunks) applied the same way;
- a shell heredoc (``cat > solution.py << 'EOF'`` ... ``EOF``, ``tee``, ``>>`` appends) in Harbor
  keystrokes, Bash / shell commands or mini-swe-agent actions, plus ``cp`` / ``mv`` of a known file;
- file content the agent read (Claude Code ``Read`` results, an Edit's ``originalFile``), which
  becomes the base of later edits without being a version itself.

Fenced code blocks in assistant text that define ``ModelNew`` or a Triton / CUDA / HIP kernel are
versions too (``from_final_answer``). A version belongs to a file path; the versions kept are those
of kernel files (content with ``ModelNew`` or GPU-kernel markers, or a ``.cu`` / ``.hip`` file).

Verifier results in tool outputs (:func:`ktui.trace.importers.evidence.evidence`) are attached to
the version they tested. Nothing here runs trace code.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from ktui.trace.derive import kernel_sha1
from ktui.trace.importers.evidence import Evidence
from ktui.trace.importers.inplace import changes as inplace_changes
from ktui.trace.importers.inplace import diff_changes, diff_files
from ktui.trace.importers.kernels import (
    MAX_CODE,
    Candidate,
    defines_model_new,
    fenced_kernels,
    is_kernel_code,
    is_kernel_path,
    norm_path,
)
from ktui.trace.importers.patches import apply_codex_patch, body_text, parse_patch, split_hunks
from ktui.trace.model import ERROR, OK, KernelUse, KernelVersion, Metrics, Run, ToolCall

# ---- the file tracker --------------------------------------------------------------------------
_HEREDOC = re.compile(r"<<(-?)\s*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\?([A-Za-z_][\w.-]*))")
_TARGET = re.compile(r"(?:^|[\s;&|(])(?:cat|command cat)\b[^\n]*?(>>?)\s*(\"[^\"]+\"|'[^']+'|[^\s;&|<>]+)")
_TEE = re.compile(r"\btee\s+((?:-a\s+)?)(\"[^\"]+\"|'[^']+'|[^\s;&|<>]+)")
# formatters that rewrite files in place, by the sources they touch (None: a project recipe, any)
_FORMATTER = re.compile(
    r"(?P<rust>\bcargo\s+(?:\+\S+\s+)?fmt\b(?![^;&|]*--check)|\brustfmt\b(?![^;&|]*--check))"
    r"|(?P<py>\bblack\b(?![^;&|]*--(?:check|diff))|\bruff\s+format\b(?![^;&|]*--(?:check|diff))|"
    r"\bruff\b[^;&|]*\s--fix\b|\bisort\b(?![^;&|]*--(?:check|diff))|\b(?:autopep8|yapf)\b[^;&|]*\s(?:-i|--in-place)\b)"
    r"|(?P<c>\bclang-format\b[^;&|]*\s-i\b)"
    r"|(?P<js>\bprettier\b[^;&|]*\s--write\b|\beslint\b[^;&|]*\s--fix\b|\bbiome\b[^;&|]*\s--write\b)"
    r"|(?P<go>\bgofmt\b[^;&|]*\s-w\b|\bgo\s+fmt\b)"
    r"|(?P<any>\b(?:just|make)\s+(?:fmt|format)\b|\bpre-commit\s+run\b|\bnpm\s+run\s+(?:fmt|format)\b)")
_FORMATTER_EXTS = {"rust": {".rs"}, "py": {".py", ".pyi"}, "c": {".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h",
                                                                  ".hpp", ".hip"},
                   "js": {".js", ".jsx", ".ts", ".tsx", ".css", ".json", ".md", ".html", ".mjs"}, "go": {".go"}}
_SOURCE_EXTS = set().union(*_FORMATTER_EXTS.values())
_FORMATTER_HINT = re.compile(r"fmt|format|black|ruff|isort|autopep8|yapf|prettier|eslint|biome|pre-commit")
_FORMATTER_MAX_LINES, _FORMATTER_MAX_LINE = 2000, 4096
_CP_MV = re.compile(r"^\s*(cp|mv)\s+(?:-\w+\s+)*(\S+)\s+(\S+)\s*$")


@dataclass(slots=True)
class _Action:
    kind: str  # "candidate" | "evidence"
    candidate: Candidate | None = None
    call: ToolCall | None = None
    ev: Evidence | None = None
    hint: str = ""  # command text naming the tested file


class FileTracker:
    """The content of every file an agent writes, and the kernel versions it implies."""

    def __init__(self) -> None:
        self.content: dict[str, str] = {}  # path -> last known full content
        self.fragment: dict[str, str] = {}  # path -> last partial text (base unknown)
        self.actions: list[_Action] = []
        self.notes: list[tuple[int, str]] = []
        self.paths_by_name: dict[str, set[str]] = {}  # file name -> the paths written or seen
        self.reformatted: dict[str, str] = {}  # path -> the formatter that may have rewritten it since
        self.cwds: list[str] = []  # working directories a tool's own result showed (see learn)

    # -- what agents do
    def _cand(self, path: str | None, code: str, origin: str, call: ToolCall | None, turn: int | None,
              line: int, partial: bool = False, final_answer: bool = False) -> None:
        if len(code) > MAX_CODE:
            code, partial = code[:MAX_CODE], True
            origin += f" (cut at {MAX_CODE:,} characters)"
        if path:
            self.paths_by_name.setdefault(posixpath.basename(path), set()).add(path)
        self.actions.append(_Action("candidate", Candidate(path, code, origin, call, turn, line, partial,
                                                           final_answer)))

    def observe(self, path: str, content: str) -> None:
        """File content seen in the trace (a Read result): the base of later edits."""
        if isinstance(content, str) and path:
            self.content[path] = content
            self.fragment.pop(path, None)
            self.reformatted.pop(path, None)
            self.paths_by_name.setdefault(posixpath.basename(path), set()).add(path)

    def write(self, path: str, content: str, call: ToolCall | None, turn: int | None, line: int,
              origin: str = "write") -> None:
        if not isinstance(content, str) or not path:
            return
        self.content[path] = content
        self.fragment.pop(path, None)
        self.reformatted.pop(path, None)
        self._cand(path, content, origin, call, turn, line)

    def append(self, path: str, content: str, call, turn, line, origin: str) -> None:
        base = self.content.get(path)
        if base is None:
            self.fragment[path] = content
            self._cand(path, content, origin + " (appended to a file whose content is not in the trace)",
                       call, turn, line, partial=True)
            return
        self.write(path, base + content, call, turn, line, origin)

    def edit(self, path: str, old: str | None, new: str | None, call: ToolCall | None, turn: int | None, line: int,
             replace_all: bool = False, origin: str = "Edit") -> str | None:
        """Apply an old/new string edit; returns a problem message when it cannot be applied."""
        if not isinstance(old, str) or not isinstance(new, str) or not path:
            return "edit without string old/new text"
        base = self.content.get(path)
        if base is None:
            frag = self.fragment.get(path)
            if frag is not None and old and old in frag:
                text = frag.replace(old, new) if replace_all else frag.replace(old, new, 1)
            else:
                text = new
            self.fragment[path] = text
            self._cand(path, text, f"{origin} (partial: the file's earlier content is not in the trace)",
                       call, turn, line, partial=True)
            return None
        if old == "":
            text = new + base if base else new
        elif old in base:
            text = base.replace(old, new) if replace_all else base.replace(old, new, 1)
        else:
            fmt = self.reformatted.get(path)
            why = (f"the file was rewritten by {fmt} since its last known content" if fmt else
                   "its old text is not in the last known content")
            self._cand(path, new, f"{origin} (partial: {why})", call, turn, line, partial=True)
            if fmt:
                self.notes.append((line, f"{origin} of {path}: {why}; kept as a partial version"))
                return None
            return f"{origin} of {path}: old text not found in the last known content; kept as a partial version"
        self.content[path] = text
        self._cand(path, text, f"{origin} applied to the last known content", call, turn, line)
        return None

    def patch(self, patch: str, call: ToolCall | None, turn: int | None, line: int,
              cwd: str | None = None) -> list[str]:
        """A Codex ``apply_patch`` body; returns problem messages."""
        problems: list[str] = []
        for op, path, body, move in parse_patch(patch):
            p = norm_path(path, cwd)
            if op == "add":
                self.write(p, body_text(body, add=True), call, turn, line, "apply_patch Add File")
            elif op == "delete":
                self.content.pop(p, None)
                self.fragment.pop(p, None)
            elif op == "update":
                base = self.content.get(p)
                target = norm_path(move, cwd) if move else p
                if base is None:
                    frag = "\n".join(body_text(h, add=False) for h in split_hunks(body))
                    self.fragment[target] = frag
                    self._cand(target, frag, "apply_patch Update File (partial: the file's earlier content is "
                               "not in the trace; only the patched hunks)", call, turn, line, partial=True)
                    continue
                text, err = apply_codex_patch(base, body)
                if err:
                    fmt = self.reformatted.get(p)
                    if fmt:
                        err = f"the file was rewritten by {fmt} since its last known content"
                        self.notes.append((line, f"apply_patch {path}: {err}; kept as a partial version"))
                    else:
                        problems.append(f"apply_patch {path}: {err}")
                    self._cand(target, "\n".join(body_text(h, add=False) for h in split_hunks(body)),
                               f"apply_patch Update File (partial: {err})", call, turn, line, partial=True)
                    continue
                if move:
                    self.content.pop(p, None)
                self.content[target] = text
                self._cand(target, text, "apply_patch applied to the last known content", call, turn, line)
        return problems

    def resolve(self, path: str, cwd: str | None = None) -> str:
        """A path as the tracker knows it: a relative path whose directory is not known matches
        the one known file with that name (``solution.py`` and ``/app/solution.py``)."""
        p = norm_path(path, cwd)
        if p in self.content or p.startswith("/") or not p:
            return p
        name = posixpath.basename(p)
        tail = "/" + p
        known = {k for k in self.paths_by_name.get(name, ()) if k.endswith(tail)}
        return next(iter(known)) if len(known) == 1 else p

    _MAX_CWDS = 8

    def learn(self, path: str, result: str) -> None:
        """The working directory a relative path was written in, where the tool's own result names
        the absolute path (Gemini CLI: ``write_file solution.py`` → "Successfully created and wrote to
        new file: /app/solution.py."). Only what the result shows: no directory is guessed."""
        rel = norm_path(path) if isinstance(path, str) else ""
        if not rel or rel.startswith("/") or rel.startswith("..") or not isinstance(result, str) \
                or len(self.cwds) >= self._MAX_CWDS:
            return
        pat = re.compile(r"(?<![\w.~-])(/[^\s'\"`:;,()<>|]{0,400}?)/" + re.escape(rel) + r"(?![\w/-])")
        for m in pat.finditer(result[:4096]):
            d = posixpath.normpath(m.group(1))
            if d not in self.cwds and d != "/":
                self.cwds.append(d)
            if len(self.cwds) >= self._MAX_CWDS:
                break

    def locate(self, path: str, cwd: str | None = None) -> str:
        """The tracked path a call's path names: the same file under the relative name it was first
        written by and the absolute one under a working directory a result showed (``solution.py``
        and ``/app/solution.py``, in either order); else the path as given."""
        p = norm_path(path, cwd)
        if not p or p in self.content or p in self.fragment or not self.cwds:
            return p
        for d in self.cwds:
            if p.startswith("/"):
                if p.startswith(d + "/"):
                    rel = p[len(d) + 1:]
                    if rel in self.content or rel in self.fragment:
                        return rel
            else:
                a = posixpath.join(d, p)
                if a in self.content or a in self.fragment:
                    return a
        return p

    def changed(self, path: str, how: str, call: ToolCall | None, turn: int | None, line: int) -> None:
        """A file a tool changed without the trace holding its new content (Codex ``exec --json``'s
        ``file_change``: paths and kinds only): a version whose content is not known."""
        if not path:
            return
        self.content.pop(path, None)
        self.fragment.pop(path, None)
        self.paths_by_name.setdefault(posixpath.basename(path), set()).add(path)
        self.actions.append(_Action("candidate", Candidate(
            path, "", f"{how}: its new content is not in the trace", call, turn, line, partial=True, unknown=True)))

    def inplace(self, command: str, call: ToolCall | None, turn: int | None, line: int,
                cwd: str | None = None) -> None:
        """Files a command changes in place (sed -i, perl -pi, a Python script): the new
        content when the change can be replayed on the last known content, else a version whose
        content is not known."""
        chs = inplace_changes(command)
        for df in diff_files(command):  # patch < fix.diff / git apply fix.diff, written earlier
            known = self.content.get(self.resolve(df, cwd))
            if known is not None:
                chs += diff_changes(known)
        for ch in chs:
            p = self.resolve(ch.path, cwd)
            if ch.whole is not None:
                self.write(p, ch.whole, call, turn, line, f"{ch.how} (wrote the file whole)")
                continue
            base = self.content.get(p)
            if base is not None and ch.apply is not None:
                try:
                    new = ch.apply(base)
                except (re.error, IndexError, RecursionError, ValueError):
                    new = None
                if new is not None:
                    if new != base:
                        self.write(p, new, call, turn, line, f"{ch.how} applied to the last known content")
                    continue
            why = "the change cannot be replayed" if ch.apply is None else "the file's earlier content is not in the trace"
            self.content.pop(p, None)
            self.fragment.pop(p, None)
            self.paths_by_name.setdefault(posixpath.basename(p), set()).add(p)
            self.actions.append(_Action("candidate", Candidate(
                p, "", f"modified in place by {ch.how} ({why}): its new content is not in the trace",
                call, turn, line, partial=True, unknown=True)))

    def shell(self, command: str, call: ToolCall | None, turn: int | None, line: int,
              cwd: str | None = None) -> None:
        """Heredocs that write files, in-place changes (sed -i, perl -pi, Python scripts), and
        cp / mv of known files, in a shell command."""
        if not isinstance(command, str) or not command:
            return
        if "<<" in command:
            self._heredocs(command, call, turn, line, cwd)
        self._formatters(command, cwd)
        self.inplace(command, call, turn, line, cwd)
        if "cp " in command or "mv " in command:
            for ln in command.splitlines():
                m = _CP_MV.match(ln)
                if m and "*" not in ln:
                    src, dst = norm_path(m.group(2), cwd), norm_path(m.group(3), cwd)
                    if src in self.content:
                        if dst in self.content or not dst.endswith("/"):
                            code = self.content[src]
                            if m.group(1) == "mv":
                                del self.content[src]
                            self.write(dst, code, call, turn, line, f"{m.group(1)} {m.group(2)}")

    def _formatters(self, command: str, cwd: str | None) -> None:
        """A formatter run in place (cargo fmt, black, ruff format, clang-format -i, prettier
        --write ...) may rewrite files ktui knows: their last known content may be stale, so a later
        edit whose text is not found there is a partial version, not a problem."""
        for ln in command.splitlines()[:_FORMATTER_MAX_LINES]:
            if len(ln) > _FORMATTER_MAX_LINE or not _FORMATTER_HINT.search(ln):  # a command line is short
                continue
            for m in _FORMATTER.finditer(ln):
                tool = m.group(0).strip()
                exts = _FORMATTER_EXTS.get(m.lastgroup or "", None)
                args = re.split(r"[;&|]", ln[m.end():], maxsplit=1)[0]
                words = [w for w in re.findall(r"[^\s<>'\"]+", args)
                         if not w.startswith("-") and w not in ("check", "format", "fmt", "run")]
                files = [norm_path(w, cwd) for w in words if posixpath.splitext(w)[1] in _SOURCE_EXTS]
                dirs = [norm_path(w, cwd) for w in words if not posixpath.splitext(w)[1] and "=" not in w]
                for path in list(self.content):
                    if exts is not None and posixpath.splitext(path)[1] not in exts and path not in files:
                        continue
                    if files or dirs:
                        hit = path in files or any(not d or d == "." or path.startswith(d.rstrip("/") + "/")
                                                   for d in dirs)
                    else:
                        hit = True
                    if hit:
                        self.reformatted[path] = f"`{tool}`"

    def _heredocs(self, command: str, call, turn, line, cwd) -> None:
        pos = 0
        while True:
            m = _HEREDOC.search(command, pos)
            if m is None:
                return
            strip_tabs = m.group(1) == "-"
            delim = m.group(2) or m.group(3) or m.group(4)
            ls = command.rfind("\n", 0, m.start()) + 1
            le = command.find("\n", m.end())
            if le < 0:
                return
            head = command[ls:le]
            body_start = le + 1
            # the body ends at a line that is the delimiter alone
            end = body_start
            body_end = None
            while end <= len(command):
                nl = command.find("\n", end)
                cur = command[end: nl if nl >= 0 else len(command)]
                cmp = cur.lstrip("\t") if strip_tabs else cur
                if cmp.rstrip() == delim:
                    body_end = end
                    pos = nl + 1 if nl >= 0 else len(command)
                    break
                if nl < 0:
                    break
                end = nl + 1
            if body_end is None:
                body = command[body_start:]
                pos = len(command)
                complete = False
            else:
                body = command[body_start:body_end]
                complete = True
            if strip_tabs:
                body = "\n".join(x.lstrip("\t") for x in body.split("\n"))
            t = _TARGET.search(head) or None
            target, append = None, False
            if t is not None:
                target, append = t.group(2), t.group(1) == ">>"
            else:
                te = _TEE.search(head)
                if te is not None:
                    target, append = te.group(2), bool(te.group(1))
            if target is None:
                continue
            p = self.resolve(target, cwd)
            origin = "heredoc" if complete else "heredoc (no closing delimiter: cut short)"
            if append:
                self.append(p, body, call, turn, line, origin + " >>")
            elif complete:
                self.write(p, body, call, turn, line, origin)
            else:
                self.content[p] = body
                self._cand(p, body, origin, call, turn, line, partial=True)

    def fenced(self, text: str, turn: int | None, line: int) -> None:
        """Kernel code in fenced blocks of assistant text."""
        for code in fenced_kernels(text):
            self._cand(None, code, "fenced code block in the assistant's text", None, turn, line, final_answer=True)

    def tested(self, call: ToolCall, ev: Evidence, hint: str = "") -> None:
        """A tool output with verifier results: it is about the kernel written last (or the one
        whose file the command names)."""
        self.actions.append(_Action("evidence", call=call, ev=ev, hint=hint or ""))

    # -- the versions
    def finish(self, run: Run) -> None:
        """Kernel versions into ``run.kernels`` (ordinary KernelVersion objects), call.kernel, uses,
        ``run.final_kernel_number`` and, from the last verifier output, ``run.metrics``."""
        cands = [a.candidate for a in self.actions if a.kind == "candidate" and a.candidate is not None]
        kernel_paths = {c.path for c in cands if c.path is not None and (is_kernel_code(c.code)
                                                                          or is_kernel_path(c.path))}
        n_unknown = 0
        by_sha: dict[str, KernelVersion] = {}
        run.kernels = []
        latest_by_path: dict[str, int] = {}
        latest: int | None = None
        latest_model: int | None = None  # the last version that defines ModelNew
        last_ev: dict[int, tuple[Evidence, ToolCall, int]] = {}  # version -> its last verifier output
        for a in self.actions:
            if a.kind == "candidate":
                c = a.candidate
                if c is None:  # (never: a candidate action carries one)
                    continue
                if c.path is not None and c.path not in kernel_paths:
                    continue
                if c.path is None and not is_kernel_code(c.code):
                    continue
                if c.unknown:
                    n_unknown += 1
                    sha = kernel_sha1(f"ktui: unknown content #{n_unknown} of {c.path} (line {c.line})")
                else:
                    sha = kernel_sha1(c.code)
                kv = by_sha.get(sha)
                if c.final_answer and kv is None:
                    stripped = c.code.strip()
                    kv = next((k for k in run.kernels if k.code.strip() == stripped), None)
                if kv is None:
                    kv = KernelVersion(number=len(run.kernels) + 1, sha1=sha, code=c.code, first_turn=c.turn,
                                       first_line=c.line, from_final_answer=c.final_answer, path=c.path,
                                       origin=c.origin, partial=c.partial,
                                       attachment=c.origin if c.unknown else None)
                    by_sha[sha] = kv
                    run.kernels.append(kv)
                    if kv.partial:
                        self.notes.append((c.line, f"{kv.label} ({c.path or 'fenced block'}) is a partial version: "
                                                   f"{c.origin}"))
                call = c.call
                if call is not None:
                    call.kernel = kv.number
                    summary = ""
                    if call.result is not None:
                        summary = call.result.summary.strip().split("\n", 1)[0][:200]
                    kv.uses.append(KernelUse(call.turn, call.index, call.name, call.status, summary))
                else:
                    kv.uses.append(KernelUse(c.turn, -1, "final_answer", OK, "the model's answer (fenced block)"))
                if c.path is not None:
                    latest_by_path[c.path] = kv.number
                latest = kv.number
                if defines_model_new(kv.code) or (c.unknown and latest_model is not None
                                             and run.kernels[latest_model - 1].path == c.path):
                    latest_model = kv.number  # (a change of unknown content to the ModelNew file)
            else:
                if latest is None or a.call is None or a.ev is None:
                    continue
                num = latest
                named = [(len(p), n) for p, n in latest_by_path.items()
                         if p and posixpath.basename(p) and posixpath.basename(p) in a.hint]
                if named:
                    num = max(named)[1]
                kv = run.kernels[num - 1]
                a.call.kernel = num
                kv.uses.append(KernelUse(a.call.turn, a.call.index, a.call.name, a.ev.status, a.ev.summary, True))
                prev = last_ev.get(num)
                if a.ev.correct is not None or a.ev.status != ERROR or prev is None:
                    last_ev[num] = (a.ev, a.call, num)  # an infrastructure error does not hide a verdict
        final = latest_model
        if final is None and latest_by_path:  # no ModelNew: the file the task names, else the last whole version
            prompt = run.problem.prompt or ""
            in_prompt = [n for p, n in latest_by_path.items() if posixpath.basename(p) and posixpath.basename(p) in prompt]
            whole = [k.number for k in run.kernels if not k.partial]
            final = max(in_prompt) if in_prompt else (whole[-1] if whole else None)
        run.final_kernel_number = final if final is not None else latest
        # the run's metrics are the final kernel's: another version's result is not credited to it
        fin = run.final_kernel_number
        chosen = last_ev.get(fin) if fin is not None else None
        if chosen is None and last_ev and fin is None:
            chosen = max(last_ev.values(), key=lambda x: x[1].index)
        # (a final kernel without a result of its own: the flag final_unevaluated says so)
        if chosen is not None:
            ev, call, num = chosen
            m = Metrics(source=f"{call.name} result (line {call.result.line if call.result else call.line}) "
                               f"about v{num}")
            m.correct = ev.correct if ev.correct is not None else (ev.status == OK if ev.status != ERROR else None)
            m.speedup = ev.speedup
            if ev.runtime_ms is not None:
                m.runtime_us = ev.runtime_ms * 1000.0
            if ev.ref_runtime_ms is not None:
                m.ref_runtime_us = ev.ref_runtime_ms * 1000.0
            run.metrics = m
