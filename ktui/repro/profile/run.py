"""Profile one kernel version (and its reference) under Nsight Compute.

    report = profile(run, kv, ProfileOptions())     # blocks; run it in a worker thread
    report.status        # "completed" | "unavailable" (no ncu / no GPU / no counters) | "failed" | "cancelled"
    report.message       # one line when not completed
    report.rows          # recorded vs reproduced (ktui.repro.verdict.Row)
    report.roofline      # peaks, ridge, points, "chart" (lines of text)

Each side (kernel, then reference) is one worker process run under ncu (see
:mod:`ktui.repro.profile.ncu`), and the whole command runs in the repro workers' sandbox
(:mod:`ktui.engine.sandbox`): sandbox(ncu ... python -m ktui.engine.profile_target), with
HOME/TMPDIR in a fresh temp dir, an allow-listed environment, namespaces where this machine
allows them; the target's prologue makes every mount read-only but that temp dir and hides ktui's
cache and credential folders (for ncu too: they share the mount namespace). ncu writes its report
and log inside the temp dir; the parent reads them back with ``ncu --import``. A deadline per
stage; cancel kills the tree. The report's notes say which protections were in force, in the
sandbox's own words. Nothing here imports torch.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from ktui import settings
from ktui.repro.profile import ncu as N
from ktui.repro.profile.chart import roofline_chart
from ktui.repro.profile.compare import compare_profile
from ktui.repro.profile.metrics import CORE_METRICS, NCU_METRICS
from ktui.repro.profile.parse import NcuParseError, parse_passes, parse_raw_csv
from ktui.repro.profile.roofline import roofline
from ktui.repro.profile.summary import summarize
from ktui.repro.results import PROFILE_SCHEMA, ResultError
from ktui.repro.verdict import DIFFERS, NOT_REPRODUCIBLE, REPRODUCED, SEVERITY, Row

SIDES = ("kernel", "reference")
IMPORT_TIMEOUT = 120.0


@dataclass
class ProfileOptions:
    device: str | None = None
    clock_control: str = "none"
    warmup: int = 3
    timeout: float = 600.0  # seconds per stage (the profiled forward's replay passes included)
    compile_timeout: float | None = None
    correctness_trials: int = 1  # a guard only: `ktui repro` checks correctness properly
    max_launches: int = N.MAX_LAUNCHES
    reference_path: str | None = None
    ncu: str | None = None  # the ncu to use (default: find_ncu())


@dataclass
class SideProfile:
    side: str
    status: str  # completed | failed | cancelled | unavailable
    message: str = ""
    launches: list[dict[str, Any]] = field(default_factory=list)  # per-launch summaries
    forward: dict[str, Any] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)
    wall_seconds: float | None = None
    worker: dict[str, Any] = field(default_factory=dict)  # the worker's result (correctness, stages...)
    command: list[str] = field(default_factory=list)
    sandbox: list[str] = field(default_factory=list)  # what was in force around ncu + the worker, in words


@dataclass
class ProfileReport:
    trace: str
    version: str
    sha1: str
    status: str
    message: str = ""
    ncu: str | None = None
    ncu_version: str | None = None
    clock_control: str = "none"
    cache_control: str = "all"
    sides: dict[str, SideProfile] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    callouts: list[str] = field(default_factory=list)
    roofline: dict[str, Any] = field(default_factory=dict)
    verdict: str = NOT_REPRODUCIBLE
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float | None = None
    created: str = ""  # when a kept profile was made (ktui.repro.profile.stored); "" for a new one

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows"] = [asdict(r) for r in self.rows]
        d["schema"] = PROFILE_SCHEMA
        return d

    @classmethod
    def from_dict(cls, d: Any) -> ProfileReport:
        """A report back from :meth:`to_dict` (``--json``); :class:`ResultError` when it is not one
        (another schema, a missing or mistyped field)."""
        if not isinstance(d, dict) or d.get("schema") != PROFILE_SCHEMA:
            raise ResultError("schema", f"expected a profile of schema {PROFILE_SCHEMA}")
        kw = {k: v for k, v in d.items() if k in _REPORT_FIELDS}
        try:
            kw["sides"] = {str(k): SideProfile(**{f: x for f, x in v.items() if f in _SIDE_FIELDS})
                           for k, v in (d.get("sides") or {}).items()}
            kw["rows"] = [Row(**{f: x for f, x in r.items() if f in _ROW_FIELDS}) for r in d.get("rows") or []]
            rep = cls(**kw)
        except (TypeError, AttributeError) as exc:
            raise ResultError("profile", str(exc)) from None
        for k, t in (("trace", str), ("version", str), ("sha1", str), ("status", str), ("verdict", str),
                     ("callouts", list), ("notes", list), ("roofline", dict), ("environment", dict)):
            if not isinstance(getattr(rep, k), t):
                raise ResultError(k, f"expected {t.__name__}")
        return rep


_REPORT_FIELDS = {f.name for f in fields(ProfileReport)}
_SIDE_FIELDS = {f.name for f in fields(SideProfile)}
_ROW_FIELDS = {f.name for f in fields(Row)}


def unavailable(reason: str, **kw: Any) -> ProfileReport:
    return ProfileReport(trace=kw.get("trace", ""), version=kw.get("version", ""), sha1=kw.get("sha1", ""),
                         status="unavailable", message=reason, reason=reason)


def read_report(ncu: str, rep: Path, timeout: float = IMPORT_TIMEOUT) -> str:
    """The raw-page CSV of an exported report."""
    out = subprocess.run(N.import_command(ncu, rep), capture_output=True, text=True, timeout=timeout,
                         errors="replace")
    if out.returncode != 0 and not out.stdout.strip():
        raise NcuParseError(f"ncu --import failed ({out.returncode}): {(out.stderr or '').strip()[:300]}")
    return out.stdout


def _failure_line(res: dict[str, Any]) -> str:
    f = res.get("failure") or {}
    if f.get("kind") in ("environment", "cancelled"):
        return str(f.get("message", ""))
    return f"{f.get('kind', 'failed')}: {f.get('message', '')}".strip(": ")


STAGE_WEIGHTS = {"startup": 10, "build": 40, "reference": 5, "check": 10, "profile": 35}
COMPILE_STAGES = ("startup", "build")


def sandbox_spec(cwd: Path, device: str | None = None) -> Any:
    """The repro workers' sandbox for one profiled side: ``cwd`` is its only writable folder (ncu's
    report and log go there too), HOME/TMPDIR inside it, ktui's cache and the credential folders
    hidden, an allow-listed environment plus ktui's own (non-secret) ``KTUI_`` settings."""
    from ktui.engine import sandbox
    from ktui.repro import cache

    pkg_root = str(Path(__file__).resolve().parents[3])
    pp = [pkg_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    extra = {k: v for k, v in os.environ.items()
             if k.startswith("KTUI_") and k != sandbox.SPEC_ENV and not sandbox.is_secret_name(k)}
    masks = sandbox.default_masks([str(cache.cache_root())])
    # root=False: the profiled side keeps the host's tree (read-only, the folders above hidden):
    # ncu (anywhere under /opt, /usr/local...) and its helpers must be reachable, and the
    # worker's own root has not been tried under ncu on a GPU yet
    return sandbox.Spec(str(cwd), mask=masks, device=device or "cuda", env=extra, python_path=pp, root=False)


def sandbox_words(res: dict[str, Any], namespaces: bool) -> list[str]:
    """What was in force around the profiled worker, in the sandbox's own words (only what its
    prologue reported; no watchdog runs here, so none is claimed)."""
    from ktui.engine import sandbox

    report = res.get("sandbox_report")
    if not isinstance(report, dict):
        return ["the profiled worker did not report its sandbox" + (" (launched in namespaces)" if namespaces
                                                                     else " (no namespaces)")]
    # only the shapes the prologue reports (the worker's words are data: a wrong type is dropped)
    clean = {k: bool(v) for k, v in report.items() if isinstance(v, bool)}
    clean.update({k: list(v) for k, v in report.items() if isinstance(v, list)})
    return [w for w in sandbox.describe(clean, namespaces) if "watchdog" not in w] + ["rlimits"]


def run_target(argv: list[str], request: dict[str, Any], *, cwd: Path, compile_timeout: float, run_timeout: float,
               on_progress: Callable[[Any], None] | None = None, cancel: threading.Event | None = None,
               label: str = "", finish_timeout: float = 180.0, device: str | None = None) -> dict[str, Any]:
    """Run the profiled worker (``argv``: ncu + ``python -m ktui.engine.profile_target``; the
    request file's path is appended) for one request: its own process group and temporary
    directory, a deadline per stage, ``cancel`` kills the group. After the worker's result it waits
    (up to ``finish_timeout``) for the command to exit: ncu writes its report then. Always
    returns a result dict."""
    import json
    import queue
    import signal

    from ktui.repro.runner import Progress, event_of

    t0 = time.monotonic()
    err_path = cwd / "worker.stderr"
    req_path = cwd / "request.json"  # a file, not stdin: ncu sits between ktui and the worker
    req_path.write_text(json.dumps({**request, "work_dir": str(cwd)}), encoding="utf-8")
    from ktui.engine import sandbox

    spec = sandbox_spec(cwd, device)
    namespaces = bool(sandbox.detect()["namespaces"])
    # the whole command (ncu in front of the worker) runs in the sandbox: sandbox(ncu ... python -m target)
    # netup brings the namespace's own loopback up first (ncu may use localhost to reach its
    # injected library; no other interface exists there), then execs ncu
    netup = [sys.executable, "-m", "ktui.engine.netup"] if namespaces else []
    cmd = sandbox.command(spec, [*netup, *argv, str(req_path)])
    with open(err_path, "wb") as err:
        proc = sandbox.popen(spec, cmd, subprocess.PIPE, err)
    lines: queue.Queue[bytes | None] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for ln in proc.stdout:
            lines.put(ln[:1 << 20])
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()

    def kill() -> None:
        sandbox.kill_tree(proc)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    sandbox_report: list[Any] = [None]
    # whether the worker started a stage that loads trace code (build, reference, check, profile): from
    # then on its files, its events and ncu's log (in its temp dir) may be the trace code's words
    trace_ran = [False]

    def failed(kind: str, message: str, stage: str | None) -> dict[str, Any]:
        res = {"status": "cancelled" if kind == "cancelled" else "failed",
               "failure": {"stage": stage or "startup", "kind": kind, "message": message, "fatal": True},
               "stderr_tail": _tail(err_path), "wall_seconds": round(time.monotonic() - t0, 3)}
        res["sandbox_report"] = sandbox_report[0]
        res["sandbox"] = sandbox_words(res, namespaces)
        res["trace_code_ran"] = trace_ran[0]
        return res

    stage: str | None = "startup"
    done = 0.0
    total = float(sum(STAGE_WEIGHTS.values()))
    deadline = t0 + compile_timeout
    try:
        while True:
            now = time.monotonic()
            if cancel is not None and cancel.is_set():
                kill()
                return failed("cancelled", f"cancelled during {label}{' ' if label else ''}{stage}", stage)
            if now > deadline:
                kill()
                limit = compile_timeout if stage in COMPILE_STAGES else run_timeout
                return failed("timeout", f"timed out after {limit:g} s during {stage} (worker killed)", stage)
            try:
                raw = lines.get(timeout=min(0.1, max(0.01, deadline - now)))
            except queue.Empty:
                continue
            if raw is None:
                try:  # stdout closed: the process is ending (or hides: the stage deadline still holds)
                    rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    kill()
                    return failed("timeout", f"closed its output and did not exit during {stage} (killed)", stage)
                if rc is not None and rc < 0:
                    try:
                        name = signal.Signals(-rc).name
                    except ValueError:
                        name = f"signal {-rc}"
                    return failed("crash", f"the profiled worker died of {name} during {stage}", stage)
                return failed("exit", f"the profiled worker (or ncu) exited with status {rc} during {stage} "
                                      "without a result", stage)
            ev = event_of(raw)
            if ev is None:
                continue
            kind = ev.get("event")
            msg = None
            if kind == "ready" and isinstance(ev.get("sandbox"), dict) and sandbox_report[0] is None:
                sandbox_report[0] = ev["sandbox"]  # the first ready event only: the worker's prologue
            elif kind == "stage" and ev.get("state") == "start":
                stage = str(ev.get("stage"))
                trace_ran[0] = trace_ran[0] or stage not in ("startup",)
                deadline = time.monotonic() + (compile_timeout if stage in COMPILE_STAGES else run_timeout)
                msg = f"{stage}…"
            elif kind == "stage":
                done += STAGE_WEIGHTS.get(str(ev.get("stage")), 1)
            elif kind == "trial":
                msg = f"{stage} ({ev.get('what')}) {ev.get('trial')}/{ev.get('of')}"
            elif kind == "result":
                res = {k: v for k, v in ev.items() if k != "event"}
                # the worker is done; ncu (its parent) writes the report after it exits
                try:
                    proc.wait(timeout=finish_timeout)
                except subprocess.TimeoutExpired:
                    res.setdefault("notes", []).append(f"the profiler had not exited {finish_timeout:g} s after the "
                                                       "worker's result: killed")
                res["wall_seconds"] = round(time.monotonic() - t0, 3)
                res["returncode"] = proc.returncode
                res["sandbox_report"] = sandbox_report[0]
                res["sandbox"] = sandbox_words(res, namespaces)
                res["trace_code_ran"] = trace_ran[0]
                if res.get("status") != "completed":
                    res["stderr_tail"] = _tail(err_path)
                return res
            if msg and on_progress is not None:
                try:
                    on_progress(Progress(stage=stage or "startup", state="start", fraction=min(1.0, done / total),
                                         elapsed=time.monotonic() - t0, message=f"{label}{' ' if label else ''}{msg}"))
                except Exception as exc:  # a broken progress callback must not end the profile
                    print(f"ktui: progress callback failed: {exc}", file=sys.stderr)
    finally:
        kill()


def _tail(p: Path, limit: int = 4000) -> str:
    try:
        data = p.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def profile_side(side: str, request: dict[str, Any], ncu: str, options: ProfileOptions, *,
                 on_progress: Callable[[Any], None] | None = None, cancel: threading.Event | None = None,
                 metrics: list[str] | None = None) -> SideProfile:
    """One side (the kernel's forward, or the reference's) under ncu, read back and summed."""
    metrics = list(metrics or NCU_METRICS)
    root = Path(tempfile.mkdtemp(prefix="ktui-ncu-"))
    work = root / "work"
    out_dir = work / "ncu"  # inside the sandbox's writable temp dir: ncu runs in the sandbox too
    try:
        for attempt in range(2):
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            out_dir.mkdir()
            req = dict(request)
            req["profile"] = {"side": side, "warmup": int(options.warmup)}
            # ktui's cache is hidden from the sandbox: the kernel builds in the worker's own temp dir
            req["build_root"] = str(work / "build")
            argv = N.profile_command(ncu, out_dir, [sys.executable, "-m", "ktui.engine.profile_target"],
                                     clock_control=options.clock_control, metrics=metrics,
                                     max_launches=options.max_launches)
            res = run_target(argv, req, cwd=work, compile_timeout=options.compile_timeout or options.timeout,
                             run_timeout=options.timeout, on_progress=on_progress, cancel=cancel, label=side,
                             device=options.device)
            log = _read(out_dir / "ncu.log")
            sp = SideProfile(side=side, status="completed", wall_seconds=res.get("wall_seconds"), command=argv)
            sp.worker = {k: v for k, v in res.items() if k not in ("stderr_tail",)}
            sp.sandbox = list(res.get("sandbox") or [])
            sp.passes = parse_passes(log)
            if res.get("status") == "cancelled":
                sp.status, sp.message = "cancelled", _failure_line(res)
                return sp
            rep = out_dir / "profile.ncu-rep"
            if res.get("status") != "completed" or not rep.exists():
                bad = N.unknown_metrics(log, metrics)
                if attempt == 0 and (bad or ("==ERROR==" in log and "metric" in log.lower())):
                    # an ncu / GPU that lacks some names: drop those it named, else keep the core list
                    metrics = [m for m in metrics if m not in bad] if bad else \
                        [m for m in metrics if m in CORE_METRICS]
                    continue
                # ncu's log and the worker's failure kind are the trace code's words once it ran: the
                # counters' permission then needs the judge's own reading of the driver
                ran = bool(res.get("trace_code_ran"))
                why = N.explain_log(log, trace_code_ran=ran, admin_only=N.counters_admin_only() if ran else None)
                kind = (res.get("failure") or {}).get("kind") if not ran else None
                sp.status = "unavailable" if kind == "environment" or why == N.PERMISSION else "failed"
                if why == N.PERMISSION:
                    sp.message = why
                elif res.get("status") != "completed":
                    sp.message = _failure_line(res) + (f" ({why})" if why else "")
                else:
                    sp.message = why or "ncu wrote no report (no kernel launched in the profiled forward?)"
                return sp
            try:
                text = read_report(ncu, rep)
                _keep(side, text, log)
                launches = parse_raw_csv(text)
            except (NcuParseError, OSError, subprocess.SubprocessError) as exc:
                sp.status, sp.message = "failed", f"cannot read the ncu report: {exc}"
                return sp
            summ = summarize(launches)
            sp.launches, sp.forward = summ["kernels"], summ["forward"]
            if not launches:
                sp.message = "the profiled forward launched no kernel"
            return sp
        raise AssertionError("unreachable")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _keep(side: str, csv_text: str, log: str) -> None:
    """With $KTUI_PROFILE_KEEP=DIR, keep each side's raw page and ncu log there (GPU scripts use it
    to capture the profiler's real output as test fixtures)."""
    d = settings.current().profile_keep
    if not d:
        return
    Path(d).mkdir(parents=True, exist_ok=True)
    (Path(d) / f"{side}_raw.csv").write_text(csv_text, encoding="utf-8")
    (Path(d) / f"{side}_ncu.log").write_text(log, encoding="utf-8")


def _read(p: Path) -> str:
    try:
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _overall(rows: list[Row]) -> tuple[str, str]:
    compared = [r for r in rows if r.verdict in SEVERITY]
    if not compared:
        return REPRODUCED, "the trace recorded no hardware counters to compare"
    bad, labels = [], set()
    for r in compared:
        if r.verdict == DIFFERS and r.label not in labels:
            bad.append(r)
            labels.add(r.label)
    if bad:
        return DIFFERS, "; ".join(f"{r.label}: recorded {r.recorded_text}, measured {r.reproduced_text}"
                                  for r in bad[:6]) + (f" (+{len(bad) - 6} more)" if len(bad) > 6 else "")
    return REPRODUCED, f"{len(compared)} hardware-counter rows within tolerance"


def build_report(trace: str, version: str, sha1: str, sides: dict[str, SideProfile], recorded: Any, *,
                 ncu: str, ncu_version: str | None, options: ProfileOptions) -> ProfileReport:
    """Combine the sides' profiles into rows, callouts and the roofline (no process runs here)."""
    rep = ProfileReport(trace=trace, version=version, sha1=sha1, status="completed", ncu=ncu, ncu_version=ncu_version,
                        clock_control=options.clock_control, sides=sides)
    k = sides.get("kernel")
    r = sides.get("reference")
    first_bad = next((s for s in sides.values() if s.status != "completed"), None)
    if first_bad is not None and (k is None or k.status != "completed"):
        rep.status = first_bad.status
        rep.message = first_bad.message if first_bad.status == "unavailable" else \
            f"{first_bad.side}: {first_bad.message}"
        rep.reason = rep.message
        rep.verdict = NOT_REPRODUCIBLE if first_bad.status != "cancelled" else "cancelled"
        return rep
    if r is not None and r.status != "completed":
        rep.notes.append(f"reference not profiled: {r.message}")
    kf = k.forward if k else {}
    rf = r.forward if r and r.status == "completed" else None
    if k and not k.launches:
        rep.notes.append("the kernel's profiled forward launched no CUDA kernel: nothing was measured")
    rep.rows, rep.callouts = compare_profile(recorded, kf)
    rep.roofline = roofline(kf, rf)
    rep.roofline["chart"] = roofline_chart(rep.roofline)
    rep.verdict, rep.reason = _overall(rep.rows)
    env = (k.worker.get("environment") if k else None) or {}
    rep.environment = env
    hw = getattr(recorded, "hardware", None)
    if hw and env.get("gpu") and hw.strip() != str(env["gpu"]).strip():
        rep.notes.append(f"recorded on {hw}, profiled on {env['gpu']}: peaks and throughputs are not expected "
                         f"to match")
    for s in sides.values():
        if s.sandbox:
            rep.notes.append(f"sandbox ({s.side}, ncu and the worker): " + ", ".join(s.sandbox))
    rep.notes.append(f"clock control: {options.clock_control} (ncu --clock-control {options.clock_control}); "
                     f"caches flushed before every replay pass (--cache-control all)")
    passes = [max(s.passes.values()) for s in sides.values() if s.passes]
    if passes:
        rep.notes.append(f"ncu replayed each profiled kernel up to {max(passes)} times (one pass per counter group)")
    return rep


def profile(run: Any, kv: Any, options: ProfileOptions | None = None, *,
            on_progress: Callable[[Any], None] | None = None,
            cancel: threading.Event | None = None) -> ProfileReport:
    """Profile one kernel version and its reference; never raises for what the kernel does."""
    from ktui.repro.api import ReproError, ReproOptions, make_request, resolve_reference
    from ktui.repro.recorded import recorded_for

    options = options or ProfileOptions()
    t0 = time.monotonic()
    meta = {"trace": str(getattr(run, "path", "")), "version": kv.label, "sha1": kv.sha1}
    ncu = options.ncu or N.find_ncu()
    if not ncu:
        return unavailable(N.NOT_FOUND, **meta)
    if options.device == "cpu":
        return unavailable("Nsight Compute profiles CUDA kernels: --device cpu cannot be profiled", **meta)
    ref, origin = resolve_reference(run, options.reference_path)
    if not ref:
        raise ReproError("the trace has no reference source (no fetch_problem ref_arch_src); "
                         "pass --reference FILE with the problem's PyTorch reference")
    ropts = ReproOptions(device=options.device, trials=1, timeout=options.timeout,
                         compile_timeout=options.compile_timeout, correctness_trials=options.correctness_trials,
                         reference_path=options.reference_path)
    request = make_request(kv, ropts, ref, origin)
    version = N.ncu_version(ncu)
    sides: dict[str, SideProfile] = {}
    for side in SIDES:
        sp = profile_side(side, request, ncu, options, on_progress=on_progress, cancel=cancel)
        sides[side] = sp
        if sp.status in ("cancelled", "unavailable") or (side == "kernel" and sp.status != "completed"):
            break
    rep = build_report(meta["trace"], kv.label, kv.sha1, sides, recorded_for(run, kv), ncu=ncu,
                       ncu_version=version, options=options)
    rep.wall_seconds = round(time.monotonic() - t0, 3)
    keep(rep, ref, options.device)  # for `ktui report` (cache lookups only)
    return rep


def keep(report: Any, reference: str | None, device: str | None) -> None:
    """Store ``report`` when it completed, signed, in the repro cache (read back by
    :func:`ktui.repro.profile.stored.latest`): one per kernel, reference, device kind and ncu settings."""
    if getattr(report, "status", None) != "completed" or not report.sha1:
        return
    from ktui.engine import sha1_text
    from ktui.repro import cache

    ref = sha1_text(reference) if reference else None
    key = cache.profile_key(reference_sha1=ref, device=device, clock_control=report.clock_control,
                            cache_control=report.cache_control)
    cache.store_profile(report.sha1, key, ref, report.to_dict())
