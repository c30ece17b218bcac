"""The Ray engine (``pip install 'ktui[ray]'``): the local engine's plan on a Ray cluster.

- builds are Ray tasks with ``num_cpus=1`` (each runs :func:`~ktui.repro.verify.steps.build`: a
  fresh sandboxed worker process, one compiler), at most ``jobs`` in flight (default: the
  cluster's CPUs less one per timing slot, so that timing slots never wait for a core);
- timings run on one actor per GPU (``num_gpus=1``: Ray pins the GPU through
  ``CUDA_VISIBLE_DEVICES``) or, on the CPU, ``cpu_slots`` actors with ``num_cpus=1``. An actor is
  ktui's own code only: each kernel still runs in a fresh judge and fresh worker processes,
  as in the local engine, so a crash, a hang or a CUDA error never outlives its kernel;
  an actor that dies anyway is replaced and its kernel reported;
- results stream back with ``ray.wait`` as each task finishes and the driver writes them to the
  same result cache as ``ktui repro`` (workers never write it);
- the build cache: ``--build-cache DIR`` on storage every node sees; without it each build task
  returns its build directory as a tar in the object store and the timing actor unpacks it on its
  node when that node does not have the build (``tarfile`` data filter: no path escapes).

``--address`` connects to a running cluster (``ray.init(address=...)``); without it a local Ray
instance is started (the environment, ``NCCL_*`` settings included, is passed on unchanged).
"""

from __future__ import annotations

import io
import os
import queue
import tarfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from ktui.repro import cache
from ktui.repro.api import ReproOptions
from ktui.repro.runner import _failure_result
from ktui.repro.verify import steps
from ktui.repro.verify.engine import (
    BUILD_FAILED,
    BUILD_START,
    BUILT,
    TIME_START,
    EngineBase,
    Event,
    Recorder,
)
from ktui.repro.verify.plan import Job

PACK_LIMIT = 512 << 20  # bytes: a build directory bigger than this is not shipped (it is rebuilt)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("--engine ray needs Ray: pip install 'ktui[ray]'") from exc
    return ray


def pack_dir(path: str) -> bytes | None:
    """A build directory as tar.gz bytes (None when missing or too big)."""
    if not path or not os.path.isdir(path):
        return None
    size = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                size += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    if size > PACK_LIMIT:
        return None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tf:
        tf.add(path, arcname=os.path.basename(path.rstrip(os.sep)))
    return buf.getvalue()


def unpack_into(data: bytes, root: str) -> None:
    """Unpack a :func:`pack_dir` tar under ``root``, refusing anything that would land outside it."""
    os.makedirs(root, exist_ok=True)
    real_root = os.path.realpath(root)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
        members = []
        for m in tf.getmembers():
            dest = os.path.realpath(os.path.join(real_root, m.name))
            if not (dest == real_root or dest.startswith(real_root + os.sep)) or m.issym() or m.islnk() \
                    or m.isdev():
                raise ValueError(f"build pack member {m.name!r} is not a plain file under the build root")
            members.append(m)
        tf.extractall(real_root, members=members, filter="data")


def _has_binary(path: str) -> bool:
    for _root, _dirs, files in os.walk(path):
        if any(f.endswith((".so", ".pyd")) for f in files):
            return True
    return False


# ---- what runs on the cluster ----------------------------------------------------------------------
def remote_build(job_wire: dict[str, Any], options_wire: dict[str, Any], build_root: str,
                 pack: bool) -> tuple[dict[str, Any], bytes | None]:
    job = Job.from_wire(job_wire)
    br = steps.build(job, ReproOptions(**options_wire), build_root=build_root, env_extra=steps.build_env())
    data = pack_dir((br.build or {}).get("dir", "")) if (pack and br.ok) else None
    wire = br.to_wire()
    wire["node"] = _node()
    return wire, data


def _node() -> str:
    try:
        import ray

        return ray.get_runtime_context().get_node_id()[:12]
    except Exception:
        return os.uname().nodename


class TimingSlot:
    """One timing slot (one GPU, or one CPU timing worker) on some node of the cluster."""

    def __init__(self, options_wire: dict[str, Any], build_root: str):
        self.options = ReproOptions(**options_wire)
        self.build_root = build_root
        self.cancel = threading.Event()
        self.env: dict[str, str] = {}
        gpus = os.environ.get("CUDA_VISIBLE_DEVICES")
        if gpus is not None:
            self.env["CUDA_VISIBLE_DEVICES"] = gpus

    def where(self) -> str:
        gpus = self.env.get("CUDA_VISIBLE_DEVICES")
        return f"{_node()}:" + (f"gpu{gpus}" if gpus else f"cpu{os.getpid()}")

    def judge(self, job_wire: dict[str, Any], build_dir: str | None, pack: bytes | None) -> dict[str, Any]:
        job = Job.from_wire(job_wire)
        note = None
        if pack is not None and build_dir and not _has_binary(build_dir):
            try:
                unpack_into(pack, os.path.dirname(build_dir))
            except (OSError, ValueError, tarfile.TarError) as exc:
                note = f"the build from the object store was not used ({exc}); built again here"
        self.cancel.clear()
        t0 = time.time()
        res = steps.judge(job, self.options, build_root=self.build_root, env_extra=self.env,
                          cancel=self.cancel)
        res.setdefault("verify", {}).update(slot=self.where(), started=t0, ended=time.time())
        if note:
            res.setdefault("notes", []).append(note)
        return res

    def stop(self) -> None:
        self.cancel.set()

    def close(self) -> None:
        """Nothing outlives a judge call (each kernel's processes end with it); kept for the driver."""


class RayEngine(EngineBase):
    name = "ray"

    def __init__(self, options: ReproOptions, *, jobs: int | None = None, build_root: str | None = None,
                 on_event: Callable[[Event], None] | None = None, address: str | None = None,
                 gpus: list[str] | None = None, cpu_slots: int = 1, shared_build_root: bool = False,
                 init_kwargs: dict[str, Any] | None = None):
        self.ray = ray = _import_ray()
        self.options = options
        self.rec = Recorder(options, on_event)
        self.build_root = build_root or str(cache.build_root())
        self.pack = not shared_build_root
        self.cancel = threading.Event()
        self.errors: list[str] = []
        self._started_ray = False
        if not ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
                                  "configure_logging": True}
            kw.update(init_kwargs or {})
            if address:
                ray.init(address=address, **kw)
            else:
                saved = os.environ.get("CUDA_VISIBLE_DEVICES")
                if gpus is not None:  # the local instance sees exactly these GPUs
                    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
                try:
                    if options.device == "cpu":
                        kw.setdefault("num_gpus", 0)
                    ray.init(**kw)
                finally:
                    if gpus is not None:
                        if saved is None:
                            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                        else:
                            os.environ["CUDA_VISIBLE_DEVICES"] = saved
            self._started_ray = True
        res = ray.cluster_resources()
        n_gpu = int(res.get("GPU", 0)) if options.device != "cpu" else 0
        if options.device is not None and options.device.startswith("cuda") and n_gpu == 0:
            raise RuntimeError("--device cuda: the Ray cluster has no GPU")
        self.gpu_slots = n_gpu
        self.slot_count = n_gpu or max(1, cpu_slots)
        cpus = int(res.get("CPU", 1))
        self.max_builds = max(1, jobs) if jobs else max(1, cpus - self.slot_count)
        self._slot_cls = ray.remote(TimingSlot)
        self._build = ray.remote(remote_build)
        self._feed_q: queue.Queue[Any] = queue.Queue()
        self._feed_done = threading.Event()

    def _new_slot(self) -> Any:
        opts = asdict(self.options)
        if self.gpu_slots:
            return self._slot_cls.options(num_gpus=1, num_cpus=0, max_concurrency=2).remote(opts, self.build_root)
        return self._slot_cls.options(num_cpus=1, max_concurrency=2).remote(opts, self.build_root)

    def _feed(self, jobs: Iterable[Job]) -> None:
        try:
            self._queue_jobs(jobs, self._feed_q.put)
        finally:
            self._feed_done.set()

    def run(self, jobs: Iterable[Job]) -> dict[str, dict[str, Any]]:
        ray = self.ray
        opts = asdict(self.options)
        feeder = threading.Thread(target=self._feed, args=(jobs,), name="verify-plan", daemon=True)
        feeder.start()
        slots = [self._new_slot() for _ in range(self.slot_count)]
        idle = list(slots)
        builds: dict[Any, tuple[Job, Any]] = {}  # wire ref -> (job, pack ref)
        judging: dict[Any, tuple[Job, Any]] = {}  # result ref -> (job, slot)
        ready: list[tuple[Job, str | None, Any]] = []  # built: (job, build dir, pack ref)
        try:
            while True:
                if self.cancel.is_set():
                    break
                while len(builds) < self.max_builds:
                    try:
                        job = self._feed_q.get_nowait()
                    except queue.Empty:
                        break
                    if not steps.needs_build(job.kernel_code):
                        self.rec.builds[job.key] = {"seconds": 0.0, "skipped": True, "ok": True}
                        ready.append((job, None, None))  # nothing to compile: straight to a timing slot
                        continue
                    self.rec.emit(BUILD_START, job)
                    wire_ref, pack_ref = self._build.options(num_cpus=1, num_returns=2).remote(
                        job.to_wire(), opts, self.build_root, self.pack)
                    builds[wire_ref] = (job, pack_ref)
                while ready and idle:
                    job, bdir, pack_ref = ready.pop(0)
                    slot = idle.pop(0)
                    self.rec.emit(TIME_START, job, slot="ray")
                    judging[slot.judge.remote(job.to_wire(), bdir, pack_ref)] = (job, slot)
                if not builds and not judging and not ready and self._feed_done.is_set() and self._feed_q.empty():
                    break
                refs = list(builds) + list(judging)
                if not refs:
                    time.sleep(0.05)
                    continue
                done, _ = ray.wait(refs, num_returns=1, timeout=0.2)
                for ref in done:
                    if ref in builds:
                        job, pack_ref = builds.pop(ref)
                        try:
                            wire = ray.get(ref)
                        except Exception as exc:  # the task itself failed (node lost...): that kernel's result
                            wire = {"ok": False, "result": _failure_result(
                                "worker_error", f"ray build task failed: {type(exc).__name__}: {exc}", "build", None),
                                "seconds": 0.0, "started": time.time(), "ended": time.time(), "build": None}
                        self.rec.builds[job.key] = {"seconds": wire["seconds"], "started": wire["started"],
                                                    "ended": wire["ended"], "ok": wire["ok"],
                                                    "cached": bool((wire.get("build") or {}).get("cached"))}
                        if wire["ok"]:
                            self.rec.emit(BUILT, job, seconds=wire["seconds"], t=wire["ended"])
                            ready.append((job, (wire.get("build") or {}).get("dir"), pack_ref))
                        else:
                            self.rec.emit(BUILD_FAILED, job, seconds=wire["seconds"], result=wire["result"],
                                          t=wire["ended"])
                            self.rec.finish(job, wire["result"], slot=None, stopping=self.cancel.is_set())
                    else:
                        job, slot = judging.pop(ref)
                        try:
                            res = ray.get(ref)
                            idle.append(slot)
                        except Exception as exc:  # the actor died: replace it, report the kernel
                            res = _failure_result("worker_error", f"ray timing actor died: {type(exc).__name__}: "
                                                  f"{str(exc).splitlines()[0] if str(exc) else ''}", "startup", None)
                            try:
                                ray.kill(slot)
                            except Exception as kill_exc:
                                self.errors.append(f"could not kill a dead timing actor: {kill_exc}")
                            slots.remove(slot)
                            new = self._new_slot()
                            slots.append(new)
                            idle.append(new)
                        self.rec.cost_events(job, (res.get("verify") or {}).get("slot"), res)
                        self.rec.finish(job, res, slot=(res.get("verify") or {}).get("slot"),
                                        stopping=self.cancel.is_set())
        except KeyboardInterrupt:
            self.cancel.set()
            raise
        finally:
            if self.cancel.is_set():
                for ref in builds:
                    ray.cancel(ref)
                for _job, slot in judging.values():
                    slot.stop.remote()
                if judging:
                    ray.wait(list(judging), num_returns=len(judging), timeout=30)
            for slot in slots:
                try:
                    ray.get(slot.close.remote(), timeout=30)
                except Exception as exc:
                    self.errors.append(f"timing actor did not close: {type(exc).__name__}")
                ray.kill(slot)
            feeder.join(5)
        return self.results

    def close(self) -> None:
        if self._started_ray:
            self.ray.shutdown()
            self._started_ray = False
