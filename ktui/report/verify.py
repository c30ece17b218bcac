"""``ktui verify DIR|TRACE...``: re-execute the sweep's kernels and report which claims hold.

Exit status: 0 when every run's claim reproduced, 1 when any did not (or could not be tested),
2 for usage errors, 130 when interrupted (the partial report is still printed; what finished is
in the cache, so running the same command again goes on from there).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, Any

from ktui.repro.verify.engine import (
    BUILD_FAILED,
    BUILD_PROGRESS,
    BUILT,
    CANCELLED,
    FAILED,
    QUEUED,
    TIMED,
    Event,
    cpu_only,
    default_jobs,
    make_slots,
)
from ktui.view.text import one_line


def _err(msg: str) -> None:
    from ktui.view.text import clean

    print(f"ktui: {clean(msg)}", file=sys.stderr)


class ProgressDisplay:
    """Rich progress (built / timed / failed / cached, ETA) on a terminal; one quiet line per
    finished kernel otherwise. Fed by the engine's events, from any thread."""

    def __init__(self, planner: Any, *, live: bool, stream: IO[str] | None = None):
        self.planner = planner
        self.live = live
        self.stream = stream or sys.stderr
        self.n = {"built": 0, "timed": 0, "failed": 0, "queued": 0, "cancelled": 0}
        self._lock = threading.Lock()
        self._progress = None
        self._task = None
        self.t0 = time.monotonic()
        self.compiling: dict[str, str] = {}  # job -> what its build worker compiles now (build progress)

    def total(self) -> int:
        return self.n["queued"]

    def start(self) -> None:
        if not self.live:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(TextColumn("[bold]verify"), BarColumn(), MofNCompleteColumn(),
                                  TextColumn("{task.fields[counts]}", markup=False), TimeElapsedColumn(),
                                  TextColumn("ETA"), TimeRemainingColumn(),
                                  console=Console(file=self.stream), transient=True)
        self._progress.start()
        self._task = self._progress.add_task("verify", total=None, counts="planning…")

    def counts(self) -> str:
        cached = len(self.planner.cached)
        n = self.n
        nogpu = len(getattr(self.planner, "decided", None) or {})
        text = (f"built {n['built']} · timed {n['timed']} · failed {n['failed']} · cached {cached}"
                + (f" · {nogpu} need a GPU" if nogpu else "")
                + ("" if self.planner.done else " · planning…"))
        if self.compiling:  # build progress: how many compile now, and what the latest one compiles
            last = next(reversed(self.compiling.values()))
            text += f" · {len(self.compiling)} compiling ({one_line(last, 60)})"
        return text

    def __call__(self, ev: Event) -> None:
        with self._lock:
            k = ev.kind
            if k == QUEUED:
                self.n["queued"] += 1
            elif k == BUILT:
                self.n["built"] += 1
            if k == BUILD_PROGRESS and ev.detail:
                self.compiling.pop(ev.job, None)
                self.compiling[ev.job] = f"{one_line(ev.label, 20)}: {one_line(ev.detail, 60)}"
            elif k in (BUILT, BUILD_FAILED, CANCELLED):
                self.compiling.pop(ev.job, None)
            elif k == TIMED:
                self.n["timed"] += 1
            elif k == FAILED:
                self.n["failed"] += 1
            elif k == CANCELLED:
                self.n["cancelled"] += 1
            done = self.n["timed"] + self.n["failed"]
            if self._progress is not None:
                self._progress.update(self._task, completed=done, total=max(self.total(), done) or None,
                                      counts=self.counts())
            elif k == BUILD_PROGRESS and ev.detail:
                print(f"verify: building {one_line(ev.label, 20)} {one_line(ev.job[:10])}: {one_line(ev.detail, 80)}",
                      file=self.stream, flush=True)
            elif k in (TIMED, FAILED):
                status = "ok" if k == TIMED else ((ev.result or {}).get("failure") or {}).get("kind", "failed")
                secs = f" {ev.seconds:.1f}s" if isinstance(ev.seconds, (int, float)) else ""
                where = f" on {one_line(ev.slot)}" if ev.slot else " (build)"
                print(f"verify: [{done}/{self.total()}] {one_line(ev.label, 20)} {one_line(ev.job[:10])} "
                      f"{one_line(status, 40)}{where}{secs}", file=self.stream, flush=True)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _interrupt_on_terminate() -> dict[int, Any]:
    """SIGTERM / SIGHUP (a closed terminal) stop the sweep like Ctrl-C: every worker process is
    killed and what finished stays cached (the default action would leave the workers running)."""
    import signal

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    saved: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return saved
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            saved[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):
            pass
    return saved


def _restore(saved: dict[int, Any]) -> None:
    import signal

    for sig, old in saved.items():
        signal.signal(sig, old)


def parse_gpus(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = [g.strip() for g in text.split(",") if g.strip()]
    for g in ids:
        if not (g.isdigit() or g.startswith(("GPU-", "MIG-"))):
            raise ValueError(f"--gpus {text!r}: give GPU indices (0,1,...) or UUIDs")
    if len(set(ids)) != len(ids):
        raise ValueError(f"--gpus {text!r}: a GPU is named twice (one timing per GPU at a time)")
    return ids


def make_engine(name: str, options: Any, *, slots: list[Any], jobs: int | None, build_root: str | None, on_event: Any,
                address: str | None = None, gpus: list[str] | None = None, cpu_slots: int = 1,
                pipeline: bool = True) -> Any:
    if name == "ray":
        from ktui.repro.verify.ray_engine import RayEngine

        return RayEngine(options, jobs=jobs, build_root=build_root, on_event=on_event, address=address,
                         gpus=gpus, cpu_slots=cpu_slots, shared_build_root=build_root is not None)
    from ktui.repro.verify.engine import LocalEngine

    return LocalEngine(options, slots=slots, jobs=jobs, build_root=build_root, on_event=on_event, pipeline=pipeline)


def verify_command(paths: list[str], *, all_versions: bool = False, gpus: str | None = None, jobs: int | None = None,
                   engine: str = "local", address: str | None = None, fmt: str = "table", fresh: bool = False,
                   device: str | None = None, timeout: float = 600.0, compile_timeout: float | None = None,
                   method: str = "cuda_event", trials: int = 100, build_cache: str | None = None,
                   cpu_slots: int = 1, reference: str | None = None, out: IO[str] | None = None,
                   progress: bool | None = None, events_out: str | None = None, tasks: str | None = None,
                   pipeline: bool = True) -> int:
    from ktui.repro.api import ReproError, ReproOptions
    from ktui.repro.verify.plan import Planner
    from ktui.repro.verify.results import build_report

    out = out or sys.stdout
    if device and not (device in ("cpu", "cuda") or device.startswith("cuda:")):
        _err(f"--device {device!r}: use cuda or cpu")
        return 2
    if device and device.startswith("cuda:"):
        _err("--device cuda:N: use --gpus N (verify pins each timing worker to one GPU)")
        return 2
    try:
        options = ReproOptions(device=device, trials=trials, method=method, timeout=timeout, fresh=fresh,
                               reference_path=reference, compile_timeout=compile_timeout, tasks_dir=tasks)
        gpu_ids = parse_gpus(gpus)
    except (ReproError, ValueError) as exc:
        _err(str(exc))
        return 2
    if engine not in ("local", "ray"):
        _err(f"--engine {engine!r}: local or ray")
        return 2
    if address and engine != "ray":
        _err("--address needs --engine ray")
        return 2
    if build_cache:
        build_cache = os.path.abspath(build_cache)
        try:
            os.makedirs(build_cache, exist_ok=True)
        except OSError as exc:
            _err(f"--build-cache {build_cache}: {exc.strerror or exc}")
            return 2
    njobs = jobs if jobs and jobs > 0 else default_jobs()
    slots = make_slots(device, gpu_ids, cpu_slots) if engine == "local" else []
    if engine == "local" and not slots:
        _err("--device cuda: no GPU visible here (nvidia-smi lists none; CUDA_VISIBLE_DEVICES?)")
        return 2
    planner = Planner(paths, options, all_versions=all_versions,
                      cpu=cpu_only(device, slots) if engine == "local" else None)
    live = sys.stderr.isatty() if progress is None else progress
    display = ProgressDisplay(planner, live=live)
    try:
        # Ray without --jobs: the cluster's CPUs (less one per timing slot), not this machine's
        # the local engine without --jobs: builds from the cores its judges leave (steps.builders_for)
        eng = make_engine(engine, options, slots=slots, jobs=jobs if jobs and jobs > 0 else None,
                          build_root=build_cache, on_event=display,
                          address=address, gpus=gpu_ids, cpu_slots=cpu_slots, pipeline=pipeline)
    except (ImportError, RuntimeError, ValueError) as exc:
        _err(str(exc))
        return 2
    t0 = time.monotonic()
    interrupted = False
    saved = _interrupt_on_terminate()
    display.start()
    try:
        eng.run(iter(planner))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        _restore(saved)
        display.stop()
        close = getattr(eng, "close", None)
        if close is not None:
            close()
    wall = time.monotonic() - t0
    c = eng.counts
    stats = {"runs": len(planner.rows), "kernels": len(planner.jobs), "duplicates": planner.duplicates,
             "cached": len(planner.cached), "not_run_no_gpu": len(planner.decided), "built": c.get(BUILT, 0), "timed": c.get(TIMED, 0),
             "failed": c.get(FAILED, 0), "cancelled": c.get(CANCELLED, 0), "wall_s": round(wall, 3),
             "engine": engine, "slots": getattr(eng, "slot_count", len(slots)),
             "pipeline_depth": getattr(eng, "depth", 1),
             "jobs": getattr(eng, "max_builds", getattr(eng, "jobs", njobs)),
             "interrupted": interrupted}
    if events_out:
        import json

        timings = {k: {"verify": r.get("verify"), "stages": r.get("stages"), "status": r.get("status"),
                       "probes": r.get("probes"), "device_windows": r.get("device_windows"),
                       "reference_cache": r.get("reference_cache"),
                       "reference_timing": (r.get("timing") or {}).get("reference_timing"),
                       "worker_ops": r.get("worker_ops"), "worker_seconds": r.get("worker_seconds"),
                       "kernel_us": ((r.get("timing") or {}).get("kernel") or {}).get("mean_us")}
                   for k, r in eng.results.items()}
        with open(events_out, "w", encoding="utf-8") as fh:
            json.dump({"stats": stats, "events": [e.to_dict() for e in eng.events], "builds": eng.rec.builds,
                       "timings": timings, "cpu_count": os.cpu_count()}, fh, default=str)
    report = build_report(planner.rows, {**planner.known(), **eng.results}, cached=set(planner.cached), stats=stats)
    for issue in planner.issues:
        if issue.severity != "info":
            _err(f"{one_line(issue.path)}: {one_line(issue.message)}")
    for e in getattr(eng, "errors", []):
        _err(f"engine error: {e.strip().splitlines()[-1] if e.strip() else e}")
    if fmt == "json":
        write_json(report, out)
    elif fmt == "csv":
        write_csv(report, out)
    else:
        from ktui.report.console import out_console

        render(out_console(out), report)
    if interrupted:
        _err("interrupted: finished kernels are cached; run the same command again to go on")
        return 130
    if not planner.rows:
        _err("no runs found")
        return 1
    return 0 if all(v.good for v in report.rows) else 1


# ---- the verify report, drawn from its view ---------------------------------------------------
def _view(report: Any) -> Any:
    from ktui.repro.verify.results import Report
    from ktui.view.verify import verify_view

    return verify_view(report.record() if isinstance(report, Report) else report)


def render(console: Any, report: Any) -> None:
    """The report (a live ``Report`` or a typed ``VerifyReport``) as text: one run a line, per model
    recorded → reproduced, the claims that do not hold, the sweep's figures."""
    from ktui.report.draw import draw

    draw(console, _view(report).parts)


def models_table(report: Any) -> Any:
    """Per model: recorded → reproduced pass rate, fast_p and geomean speedup (a Rich table)."""
    from ktui.report.draw import rich_table

    return rich_table(_view(report).models_table)


def write_json(report: Any, out: IO[str]) -> None:
    """``--json``: the report's data (schema :data:`~ktui.repro.results.VERIFY_SCHEMA`, read back by
    :meth:`~ktui.repro.verify.record.VerifyReport.from_dict`), every string cleaned
    (:func:`ktui.view.text.json_text`): a reason or a path from a trace cannot reach the terminal of
    whoever reads the file (``jq -r``) as an escape."""
    from ktui.view.text import json_text

    out.write(json_text(report.to_dict()) + "\n")


def write_csv(report: Any, out: IO[str]) -> None:
    """``--csv``: the view's CSV rows (:func:`ktui.view.verify.csv_rows`)."""
    import csv

    from ktui.repro.verify.results import Report
    from ktui.view.verify import csv_rows

    csv.writer(out).writerows(csv_rows(report.record() if isinstance(report, Report) else report))
