# ---- ktui repro harness: the judge --------------------------------------------------------------
# The judge is ktui's own code only: it never imports or executes trace code. It starts a
# reference worker and a candidate worker (fresh sandboxed processes, sandbox.py), asks the
# reference for inputs (seeded) and outputs, hands the same sealed input tensors to the
# candidate, compares the candidate's outputs itself (compare.py, float64 on the CPU), times
# both sides (timing.py inside the workers, with primitives bound before trace code loaded) and
# cross-checks those times with its own clock: N forwards on distinct inputs ending in a
# device-wide synchronize, all of whose outputs it verifies. Probes (ktui/engine/probes) run last.
#
#   build(job)            -> BuildResult    compile only (a candidate worker, its build dir writable)
#   judge(job, build=None) -> result dict   everything (builds too when `build` is None)
#
# Both never raise for anything trace code does. MIT license, part of ktui.
import contextlib
import os
import secrets
import tempfile
import time

from . import buildcache, claims, sandbox
from .build import NO_MODEL
from .clockcheck import ClockStages, agreeing_cross_check  # noqa: F401 - re-exported
from .compare import cosine_rule, tolerance_rule
from .correctness import CorrectnessStages
from .defaults import (
    COMPILE_STAGES,
    FP32_DIRECTIVE,
    HARNESS_VERSION,
    HOST_BOUND_FRACTION,
    WORKER_START_TIMEOUT_S,
    machine_scale,
)
from .devicelock import ALONE, NONE, SHARED, DeviceWindows
from .errors import (
    StageFailure,
    default_cache_root,
    describe_position,
    exception_text,
    now,
    round_,
    sha1_text,
)
from .job import Job, default_build_key, default_python_path  # noqa: F401 - re-exported
from .oslib import (
    own_runqueue_wait_ns,  # noqa: F401 - re-exported
    remove_tree,
)
from .probectx import ProbeContext
from .proctree import descendants
from .refshare import ReplyStore, SharedReference
from .workers import (  # noqa: F401 - re-exported
    _IMPORTS_REFERENCE,
    _REFERENCE_ON_CUDA,
    _TRITON,
    CANDIDATE_KINDS,
    JUDGE_WORD_KINDS,
    KILLED_FROM_OUTSIDE,
    SIGNAL_WORDS,
    TRACE_CODE_OPS,
    Cancelled,
    Held,
    Timeout,
    Worker,
    needs_cuda,
)


class Judge(CorrectnessStages, ClockStages):
    """One reproduction of one kernel snapshot. `emit(dict)` receives progress events."""

    def __init__(self, job, emit=None, cancel=None):
        self.job = job if isinstance(job, Job) else Job.from_request(job)
        self.emit_fn = emit or (lambda ev: None)
        self.cancel = cancel
        self.stage_name = None
        self.cur_trial = None
        self.cur_what = None
        self._t_stage = None
        self.deadline = time.monotonic() + self.job.compile_timeout
        self.device_kind = "cpu" if (self.job.device or "") == "cpu" else "cuda"
        self.tmp_root = tempfile.mkdtemp(prefix="ktui-repro-", dir=self.job.tmp_root)
        cache_root = os.path.dirname(os.path.abspath(self.job.build_root))
        os.makedirs(self.job.build_root, exist_ok=True)
        if self.job.ref_cache:  # made now, so that it is masked from this judge's workers too (default_masks
            try:  # masks what exists: the first kernel's worker could read the entries its judge wrote)
                os.makedirs(self.job.ref_cache, exist_ok=True)
            except OSError:
                pass
        self.masks = sandbox.default_masks([cache_root, default_cache_root()] + list(self.job.masks or [])
                                           + ([self.job.ref_cache] if self.job.ref_cache else []))
        self.refcache = None  # the reference's work kept for the next kernel of the problem (refshare.py)
        self.workers = []
        self.held = []
        self.windows = None  # DeviceWindows, once the device is known (devicelock.py)
        self._outer = contextlib.ExitStack()  # on the CPU: the device held shared for the whole run
        self.compare_spans = []  # (start, end) time.time() of the judge's comparisons (tests, benchmarks)
        # every input the kernel is judged on (correctness trials, the held-out trial, timing, the
        # probes) is drawn from this seed, which only the judge and the reference worker know: the
        # candidate gets `seed` (its weights must match the reference's), and inputs derived from
        # that would be predictable (a kernel could compute their answers while it is built, untimed)
        self.input_seed = int(self.job.input_seed) if self.job.input_seed else 1 + secrets.randbelow(2**31 - 2)
        self._rq_waited = 0.0  # μs of ktui's wall-clock passes spent waiting for a CPU (not counted)
        self._wall_total = 0.0  # μs those passes took in all
        self.result = {
            "harness_version": HARNESS_VERSION, "status": "running", "failure": None,
            "kernel_sha1": self.job.kernel_sha1,
            "reference_sha1": sha1_text(self.job.reference_source) if self.job.reference_source else None,
            "stages": {}, "environment": None, "build": None, "correctness": None, "timing": None,
            "memory": None, "launches": None, "checks": [], "findings": [], "notes": [],
            "sandbox": {"planned": sandbox.planned(self.device_kind, self.job.memory_limit)},
            "seeds": {"init": int(self.job.seed), "inputs": self.input_seed},
        }

    # ---- events ------------------------------------------------------------------------------
    def emit(self, ev):
        try:
            self.emit_fn(ev)
        except Exception:  # noqa: BLE001 - a broken progress callback must not end the run
            pass

    def stage(self, name):
        self.end_stage()
        self.stage_name = name
        self.cur_trial = self.cur_what = None
        self._t_stage = now()
        limit = self.job.compile_timeout if name in COMPILE_STAGES else self.job.run_timeout
        if name == "startup":  # starting the workers (importing torch) is ktui's, not the kernel's
            limit = max(float(limit), WORKER_START_TIMEOUT_S * machine_scale())
        self.deadline = time.monotonic() + float(limit)
        self.emit({"event": "stage", "stage": name, "state": "start"})

    def end_stage(self, state="done"):
        if self.stage_name is None or self._t_stage is None:
            return
        secs = round_(now() - self._t_stage, 3)
        self.result["stages"][self.stage_name] = {"state": state, "seconds": secs}
        self.emit({"event": "stage", "stage": self.stage_name, "state": state, "seconds": secs})
        self._t_stage = None

    def trial(self, i, n=None, what=None):
        self.cur_trial = i
        self.cur_what = what
        ev = {"event": "trial", "stage": self.stage_name, "trial": i, "of": n}
        if what:
            ev["what"] = what
        self.emit(ev)

    def describe_position(self):
        return describe_position(self.stage_name, self.cur_trial, self.cur_what)

    def hold(self, value, fds):
        h = Held(value, fds)
        self.held.append(h)
        return h

    def release(self, *hs):
        """Close held values as soon as they are no longer needed (the judge does not keep every
        exchanged tensor to the end of the run)."""
        for h in hs:
            if h is None:
                continue
            h.close()
            h._decoded = None
            if h in self.held:
                self.held.remove(h)

    def drop_slots(self, slots=(), prefix=None):
        """Both workers let go of input slots the judge is done with (``slots`` by name, or every
        one starting with ``prefix``). Memory only: a worker that is gone or will not answer is
        left to the next request to find out."""
        args = {"slots": [str(x) for x in slots]}
        if prefix:
            args["prefix"] = str(prefix)
        for w in (getattr(self, "ref", None), getattr(self, "cand", None)):
            if w is None or not w.proc.alive():
                continue
            try:
                w.call("drop", args, timeout=30.0)
            except StageFailure as f:
                if f.fatal:
                    raise

    # ---- run ---------------------------------------------------------------------------------
    def run(self, build=None):
        t0 = now()
        try:
            self._run(build)
            self.result["status"] = "completed"
            self.end_stage()
        except StageFailure as f:
            self._fail(f.stage, f.kind, f.message, f.trial, f.fatal, f.detail, words=f.words)
        except Cancelled:
            self._fail(self.stage_name, "cancelled", f"cancelled {self.describe_position()}", self.cur_trial, True)
            self.result["status"] = "cancelled"
        except Timeout:
            limit = self.job.compile_timeout if self.stage_name in COMPILE_STAGES else self.job.run_timeout
            if self.stage_name == "startup":
                limit = max(float(limit), WORKER_START_TIMEOUT_S * machine_scale())
            self._fail(self.stage_name, "timeout", f"timed out after {float(limit):g} s {self.describe_position()} "
                                                   "(worker killed)", self.cur_trial, True)
        except BaseException as exc:  # noqa: B036 - a judge bug must still produce a result
            import traceback

            self._fail(self.stage_name or "harness", "harness_error", f"harness error: {exception_text(exc)}",
                       self.cur_trial, True, traceback.format_exc()[-6000:])
        finally:
            self.close()
        self.result["seconds"] = round_(now() - t0, 3)
        return self.result

    def _fail(self, stage, kind, message, trial, fatal, detail=None, words=None):
        self.end_stage("failed")
        self.result["status"] = "failed"
        self.result["failure"] = {"stage": stage or "startup", "kind": kind, "message": message, "trial": trial,
                                  "fatal": bool(fatal), "detail": detail}
        self.result["failure"].update(self.whose_words(stage, kind, message, words))
        for w in self.workers:
            if w.role == "candidate":
                self.result["stderr_tail"] = w.proc.tail()

    def whose_words(self, stage, kind, message, words=None):
        """Who wrote a failure's message ("words": "judge" / "kernel" / "reference") and, for the
        kernel's words, what the judge itself confirmed of a claim in them that this machine could
        not judge it ("checked": claims.check). A failure of a kind the kernel causes, once its
        code ran, is in its words whatever raised it (a message of the judge's may quote a value
        the kernel sent)."""
        cand = next((w for w in self.workers if w.role == "candidate"), None)
        if words is None and kind not in JUDGE_WORD_KINDS and cand is not None and cand.trace_code_loaded:
            words = "kernel"
        out = {"words": words or "judge"}
        if words == "kernel":
            ours = set()
            for w in self.workers:
                try:
                    ours.update(descendants(w.proc.proc.pid))
                except Exception:  # noqa: BLE001 - a worker already gone
                    continue
            checked = claims.check(message, stage, device_kind=self.device_kind,
                                   device_str=getattr(self, "device_str", None) or self.job.device,
                                   kernel_code=self.job.kernel_code,
                                   reference_source=getattr(self.job, "reference_source", None), ours=ours)
            if checked is not None:
                out["checked"] = checked
        return out

    def open_windows(self, device_str):
        """The device's lock (devicelock.py), from the moment the device is known. On the CPU the
        CPU is the device: the judge holds it shared for the whole run (its own host work would
        slow another judge's timing), alone while it times."""
        if self.windows is not None:
            return
        self.windows = DeviceWindows(self.job.lock_dir or os.path.join(default_cache_root(), "locks"), device_str,
                                     cancel=self.cancel, max_wait_s=self._max_device_wait(),
                                     on_wait=lambda kind: self.trial(None, None, f"waiting for the device ({kind})"))
        if not str(device_str).startswith("cuda"):
            self._outer.enter_context(self.windows.window(SHARED, "the CPU is the device"))
            self.deadline += self.windows.waited_s  # waiting for another judge is not this kernel's time

    def _max_device_wait(self):
        """How long a judge waits for the device before it gives up (a timeout): another judge holds
        it at most for its whole run (every stage to its limit). The wait is not this kernel's time:
        it never counts against a stage's limit (the stage's deadline moves by it)."""
        return float(self.job.compile_timeout) + 12 * float(self.job.run_timeout) + 60.0

    def device(self, kind, what, after=None):
        """A window on the device (devicelock.py): "alone" for timing-sensitive work, "shared" for
        other device work, "none" for host work; the time waited for it is added to the stage's
        deadline (waiting for another kernel's timing is not this kernel's time). ``after()``: host
        work run as the window is given up, before anything else is waited for."""
        if self.windows is None or kind == NONE:
            return _then(after) if after is not None else contextlib.nullcontext()
        return self._timed_window(kind, what, after)

    @contextlib.contextmanager
    def _timed_window(self, kind, what, after=None):
        before = self.windows.waited_s
        with self.windows.window(kind, what, after=after):
            self.deadline += self.windows.waited_s - before
            yield

    def close(self):
        for w in self.workers:  # the workers end before the device is given up (on the CPU: their exit is work)
            w.close(polite=self.result.get("status") == "completed")
        self._outer.close()
        if self.windows is not None:
            self.result["device_windows"] = self.windows.records[:2000]
            self.windows.close()
        if self.refcache is not None:
            self.refcache.close()
            self.result["reference_cache"] = self.refcache.summary()
        ops, secs = {}, {}
        for w in self.workers:  # requests per role and op (what was run, e.g. the reference's timing)
            for op, n in w.ops.items():
                ops.setdefault(w.role, {})[op] = ops.get(w.role, {}).get(op, 0) + n
            for op, t in w.op_seconds.items():  # and the seconds each took, reply included
                secs.setdefault(w.role, {})[op] = round_(secs.get(w.role, {}).get(op, 0.0) + t, 4)
        self.result["worker_ops"] = ops
        self.result["worker_seconds"] = secs
        if self.compare_spans:  # when the judge compared (host work): never inside an "alone" window
            self.result["compare_spans"] = [[round_(a, 4), round_(b, 4)] for a, b in self.compare_spans[:500]]
        for h in self.held:
            h.close()
        self.held = []
        remove_tree(self.tmp_root)

    def spawn(self, role, rw=(), binds=()):
        w = Worker(self, role, rw=rw, binds=binds)
        self.workers.append(w)
        return w

    def spawn_candidate(self):
        """The candidate worker, its build folder a throwaway copy (of the cached build, when
        there is one) in the judge's temp dir: shown at sandbox.BUILD_MOUNT inside its own root,
        at its own path without namespaces."""
        self.build_tmp = os.path.join(self.tmp_root, "build")
        self.build_from_cache = buildcache.fetch(self.job.build_dir, self.build_tmp)
        if sandbox.detect()["namespaces"]:
            return self.spawn("candidate", binds=[(self.build_tmp, sandbox.BUILD_MOUNT)])
        return self.spawn("candidate", rw=[self.build_tmp])

    def build_dir_inside(self, w):
        return sandbox.BUILD_MOUNT if w.report.get("own_root") else self.build_tmp

    def call_build(self, cand):
        """The build request, then (the candidate stopped: nothing it left running writes while
        the judge copies) the throwaway build folder copied into the cache by the judge."""
        job = self.job
        bargs = {"source": job.kernel_code, "key": job.build_key, "build_dir": self.build_dir_inside(cand)}
        if job.reference_source and _IMPORTS_REFERENCE.search(job.kernel_code):
            bargs["reference_source"] = job.reference_source  # `import reference` works, as in the harness
        binfo, _ = cand.call("build", bargs)
        binfo = dict(binfo)
        binfo["dir"] = job.build_dir
        binfo["from_cache"] = bool(self.build_from_cache)  # the judge's word: it copied a cached build in
        if binfo.get("has_model") and not binfo.get("failed_builds"):
            t0 = now()
            pids = sandbox.stop_tree(cand.proc.proc)
            sandbox.wait_stopped(pids)
            try:
                stored = buildcache.publish(self.build_tmp, job.build_dir)
            finally:
                sandbox.continue_tree(cand.proc.proc, pids)
            binfo["cache"] = {k: v for k, v in stored.items() if k != "skipped"}
            binfo["cache"]["seconds"] = round_(now() - t0, 3)
            if stored.get("skipped"):
                binfo["cache"]["left_out"] = [str(x)[:120] for x in stored["skipped"][:8]]
        return binfo

    def start(self, role, rw=(), w=None):
        w = w or self.spawn(role, rw)
        data, _ = w.call("hello", timeout=WORKER_START_TIMEOUT_S * machine_scale())
        w.report = data["sandbox"]
        if w.proc.namespaces and w.proc.spec.root and not w.report.get("own_root"):
            errs = "; ".join(str(e) for e in (w.report.get("errors") or [])[:3])
            raise StageFailure("startup", "environment",
                               f"the {role} worker's sandbox could not be set up here (its own root: {errs[:300]}); "
                               "nothing was run", fatal=True)
        self.result["sandbox"][role] = sandbox.describe(w.report, w.proc.namespaces)
        self.result["sandbox"][role + "_report"] = w.report
        # the round trip of an empty request, before any trace code is loaded
        rtt = []
        for _ in range(5):
            t = now()
            w.call("ping")
            rtt.append((now() - t) * 1e6)
        w.rtt_us = sorted(rtt)[len(rtt) // 2]
        return w

    def _setup(self, w):
        data, _ = w.call("setup", {"device": self.job.device})
        w.setup_env = data.get("environment")  # before any trace code loaded in it
        if self.result["environment"] is None:
            self.result["environment"] = data["environment"]
            self.result["device"] = data["device"]
            self.result["startup"] = {"import_torch_s": data["import_torch_s"], "device_init_s": data["device_init_s"]}
        self.device_str = data["device"]
        if str(self.device_str).startswith("cpu") and self.device_kind != "cpu":
            # no device asked for ("cuda if available") on a machine without a GPU: from here on
            # this is the CPU run it is (a CUDA kernel's build is then "not judged here", not the
            # kernel's failure; CPU clock tolerances). Only ever lowered to cpu, never raised
            self.device_kind = "cpu"
        return data

    def _run(self, build):
        job = self.job
        self.stage("startup")
        if not (job.kernel_code or "").strip():
            self.stage("build")
            raise StageFailure("build", "no_code", "the snapshot has no kernel code (attachment stub?)")
        if self.device_kind == "cpu":  # before the workers start: their torch import is work on the CPU
            self.open_windows("cpu")
        # both workers start together (each imports torch before it answers)
        cw = self.spawn_candidate()
        rw_ = self.spawn("reference") if job.reference_source else None
        cand = self.start("candidate", w=cw)
        self._setup(cand)
        self.open_windows(self.device_str)
        ref = None
        if rw_ is not None:
            ref = self.start("reference", w=rw_)
            self._setup(ref)

        # build ------------------------------------------------------------------------------
        self.stage("build")
        binfo = self.call_build(cand)
        if build is not None and build.get("build"):
            binfo["cached"] = bool(build["build"].get("cached")) or binfo["cached"]
            binfo["seconds"] = build["build"].get("seconds", binfo["seconds"])
        has_model = binfo.pop("has_model")
        self.result["build"] = binfo
        if not binfo["extensions"]:
            self.result["notes"].append("the kernel builds no extension (no load_inline / load call)")
        if not has_model:
            raise StageFailure("build", "no_model", NO_MODEL)

        # reference -----------------------------------------------------------------------------
        self.stage("reference")
        if ref is None:
            raise StageFailure("reference", "no_reference", "the trace has no reference source; pass --reference FILE")
        if self.device_kind == "cuda" and self.device_str.startswith("cuda"):
            with self.device(ALONE, "timer floor"):
                fl, _ = ref.call("floor")  # the timer's floor, measured before any trace code loads here
            self._floor = dict(fl)
        else:
            self._floor = None
        with self.device(SHARED, "load reference"):
            ref.call("load_reference", {"source": job.reference_source})
        self.result["reference"] = {"origin": job.reference_origin, "sha1": self.result["reference_sha1"]}
        self.cosine = cosine_rule(job.reference_source)
        self.task_tol = tolerance_rule(job.reference_source)
        if self.task_tol is not None:
            self.result["reference"]["tolerance"] = (f"atol {self.task_tol[0]:g}, rtol {self.task_tol[1]:g} at least "
                                                     "(the harness's rule for this task)")
        if self.cosine is not None:
            self.result["reference"]["metric"] = (f"cosine similarity >= {self.cosine[0]:g} and relative L1 <= "
                                                  f"{self.cosine[1]:g} (the harness's metric for this task)")
        if job.ref_cache and job.input_seed:  # a sweep's shared secret seed: the reference's work is kept
            import json
            import platform

            where = json.dumps([self.device_str, platform.node(), self.result.get("environment")], sort_keys=True,
                               default=str)
            if self.device_str.startswith("cuda"):
                from .gpu import physical_index

                where += "|gpu" + physical_index(self.device_str)
            store = ReplyStore(job.ref_cache, {"reference": sha1_text(job.reference_source), "init_seed": int(job.seed),
                                               "device": where})
            ref = self.refcache = SharedReference(ref, store)  # refshare.py: every reply after init shared
            self._ref_digests = ref.digests  # the reference timing's key (reftime.py) names its inputs by these
        if FP32_DIRECTIVE in (job.reference_source or ""):
            self.result["reference"]["ground_truth"] = "fp32: the reference runs on float32 copies of the inputs"
        self.ref, self.cand = ref, cand

        # correctness -------------------------------------------------------------------------
        self.stage("correctness")
        seed = int(job.seed)
        with self.device(SHARED, "init"):
            init_v, init_f = ref.call("init", {"seed": seed})
            self.init_inputs = self.hold(init_v["init_inputs"], init_f)
            v, f = self.init_inputs.send_args()
            cand.call("init", {"seed": seed, "init_inputs": v}, f)
        if _TRITON.search(job.kernel_code):
            self._jit_warmup(seed)
        corr = self._correctness(self.input_seed)
        self.result["correctness"] = corr
        if not corr["passed"]:
            self.result["notes"].append("correctness failed: timing, memory and launches not measured")
            if job.checks:  # the probes that can say why (a thread still filling the output...)
                self.stage("checks")
                from .probes import run_judge_probes

                run_judge_probes(ProbeContext(self), correctness_failed=True)
            return

        # timing ------------------------------------------------------------------------------
        self.stage("timing")
        self.result["timing"] = self._timing(self.input_seed)
        # the correctness trials' inputs served the interleaved timing (clockcheck._interleaved);
        # each is a whole input set on the device in both workers
        self.drop_slots([f"c{i}" for i in range(1, int(corr["trials"]) + 2)])
        # memory, launches (CUDA) ------------------------------------------------------------
        def both(op):  # one measurement of the timed inputs, in each worker
            with self.device(SHARED, op):
                self.trial(1, 1, "kernel")
                k, _ = cand.call(op, {"slot": "t"})
                self.trial(1, 1, "reference")
                r, _ = ref.call(op, {"slot": "t"})
            return k, r

        if self.device_str.startswith("cuda") and job.measure_memory:
            self.stage("memory")
            km, rm = both("memory")
            self.result["memory"] = {
                "kernel_peak_mb": km["peak_mb"], "ref_peak_mb": rm["peak_mb"],
                "kernel_delta_mb": km["delta_mb"], "ref_delta_mb": rm["delta_mb"],
                "kernel_reserved_mb": km["reserved_mb"], "ref_reserved_mb": rm["reserved_mb"],
                "ratio": round_(km["peak_mb"] / rm["peak_mb"], 4) if rm["peak_mb"] else None, "unit": "MiB",
                "note": "torch.cuda.max_memory_allocated during one forward, each side in its own process "
                        "(reported by the worker)"}
        if self.device_str.startswith("cuda") and job.measure_launches:
            self.stage("launches")
            k, r = both("launches")
            self.result["launches"] = {
                "num_kernels": k["launches"], "ref_num_kernels": r["launches"],
                "fusion_ratio": round_(r["launches"] / k["launches"], 4) if k["launches"] else None,
                "kernel": k, "reference": r,
                "note": "device activities (kernels + memcpy + memset) in one profiled forward"}
            self._host_bound()
        # probes / honesty checks -------------------------------------------------------------
        if job.checks:
            self.stage("checks")
            from .probes import run_judge_probes

            # a kernel found wrong on the timing input outside timing too (checkedpass) failed
            # correctness there: the probes of a failed kernel only, as after a failed trial
            run_judge_probes(ProbeContext(self), correctness_failed=not (self.result.get("correctness") or {}).get(
                "passed", True))

    def _host_bound(self):
        t = self.result.get("timing") or {}
        la = self.result.get("launches") or {}
        k = la.get("kernel") or {}
        st = t.get("kernel") or {}
        if not st or not k or t.get("method_used") == "host":
            return
        busy = (k.get("cuda_time_us") or 0.0) - (k.get("memcpy_time_us") or 0.0)
        med = st.get("median_us") or 0.0
        if med > 0 and busy < HOST_BOUND_FRACTION * med:
            pageable = any("pageable" in n.lower() for n in (k.get("names") or {}))
            why = (f"host-bound: GPU kernels run {busy:.1f} μs of the {med:.1f} μs per forward"
                   + (f"; a pageable host-to-device copy ({k.get('memcpy_time_us', 0):.1f} μs on the device) "
                      "dominates" if pageable else "; the rest is host work or copies"))
            t["host_bound"] = {"device_kernel_us": round_(busy, 3), "event_us": med, "pageable_copy": pageable,
                               "reason": why}
            self.result["notes"].append(why)


@contextlib.contextmanager
def _then(after):
    try:
        yield
    finally:
        after()


def judge(job, build=None, emit=None, cancel=None):
    """Judge one kernel (builds it too unless `build`, a BuildResult dict, says it is built)."""
    return Judge(job, emit=emit, cancel=cancel).run(build)


def build(job, emit=None, cancel=None):
    """Compile only: a candidate worker loads the kernel (its load_inline extensions build into
    the kernel's own build directory). Returns a BuildResult dict: {ok, build, failure, ...}."""
    j = Judge(job, emit=emit, cancel=cancel)
    t0 = now()
    res = {"ok": False, "build": None, "failure": None, "kernel_sha1": j.job.kernel_sha1,
           "build_key": j.job.build_key, "build_dir": j.job.build_dir}
    try:
        j.stage("startup")
        cand = j.start("candidate", w=j.spawn_candidate())
        j._setup(cand)
        j.stage("build")
        binfo = j.call_build(cand)
        res["build"] = dict(binfo)
        res["ok"] = bool(binfo["has_model"])
        if not res["ok"]:
            res["failure"] = {"stage": "build", "kind": "no_model", "message": NO_MODEL}
        j.end_stage()
        j.result["status"] = "completed"
    except StageFailure as f:
        res["failure"] = {"stage": f.stage, "kind": f.kind, "message": f.message, "detail": f.detail,
                          **j.whose_words(f.stage, f.kind, f.message, f.words)}
    except (Cancelled, Timeout) as exc:
        kind = "cancelled" if isinstance(exc, Cancelled) else "timeout"
        res["failure"] = {"stage": j.stage_name, "kind": kind, "message": f"{kind} {j.describe_position()}"}
    finally:
        res["environment"] = j.result.get("environment")
        res["sandbox"] = j.result.get("sandbox")
        j.close()
    res["seconds"] = round_(now() - t0, 3)
    return res


def run_request(request, emit=None, cancel=None):
    """Old entry point: one request dict -> one result dict."""
    return judge(Job.from_request(request), emit=emit, cancel=cancel)
