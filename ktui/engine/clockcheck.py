# ---- ktui repro harness: the timing stage and ktui's own clock --------------------------------------
# Both sides' own timers (bound in the workers before trace code loaded), then ktui's clock: N
# forwards ending in a device-wide synchronize, checked outputs, identical vs interleaved calls.
# MIT license, part of ktui.
import contextlib
import math

from . import oslib, protocol, sandbox, shm
from .checkedpass import CheckedPass, valid_fingerprints  # noqa: F401  (valid_fingerprints: re-exported)
from .defaults import (
    INTERLEAVED_RATIO,
    MAX_SAMPLES,
    WALL_BUSY_FRACTION,
    WALL_CONFIRM,
    WALL_MAX_FORWARDS,
    WALL_REPEATS,
    WALL_REPORT_TOLERANCE_CPU,
    WALL_SLACK_US,
    WALL_TOLERANCE,
    WALL_TOLERANCE_CPU,
    WALL_WINDOW_S,
)
from .errors import StageFailure, now, round_, stats_us
from .reftime import RefTimingStages


def agreeing_cross_check(own_us: float, wall_us: float, forwards: int, tol: float) -> dict:
    """The timer cross-check when the kernel's own timing is not below ktui's clock. It says
    "agrees" only when the two are within ``tol`` of each other; ktui's clock reading nothing
    (every microsecond of its window was a wait for a CPU, taken out) is "not checked", never an
    agreement with 0.00 μs; an own timing well above the clock hid nothing from it."""
    clock = f"ktui's clock ({wall_us:.2f} μs per forward over {forwards} forwards)"
    if not wall_us > 0:
        return {"name": "timer_cross_check", "ok": None,
                "detail": f"own timing {own_us:.2f} μs (mean) not cross-checked: ktui's clock had no time left "
                          f"once the waits for a CPU were taken out ({forwards} forwards; a busy host)"}
    if own_us > wall_us * (1 + tol) + WALL_SLACK_US:
        return {"name": "timer_cross_check", "ok": True,
                "detail": f"own timing {own_us:.2f} μs (mean) is above {clock}: slower than the clock, "
                          "it hides nothing from it"}
    if abs(own_us - wall_us) <= max(AGREE_RATIO * wall_us, AGREE_US):
        return {"name": "timer_cross_check", "ok": True,
                "detail": f"own timing {own_us:.2f} μs (mean) agrees with {clock}"}
    # within the tolerance, but the two differ: say by how much, never "agrees" (33.83 μs "agreed"
    # with 6.53 μs: a mean pulled up by a few slow calls on a shared CPU)
    ratio = own_us / wall_us if own_us >= wall_us else wall_us / max(own_us, 1e-9)
    side = "above" if own_us >= wall_us else "below"
    tail = "it hides nothing from it" if own_us >= wall_us else f"within the {1 + tol:g}x a shared host allows"
    return {"name": "timer_cross_check", "ok": True,
            "detail": f"own timing {own_us:.2f} μs (mean) is {ratio:.1f}x {side} {clock}: {tail}"}


AGREE_RATIO = 0.25  # the two timings "agree" when they differ by at most a quarter...
AGREE_US = 1.0  # ...or by a microsecond (tiny kernels)

def valid_samples(desc, fds, cap_n):
    """A worker's timing samples, checked before they are read: one float64 vector of at most
    ``cap_n`` values, every one finite and positive. Returns the list, or a string saying what
    is wrong (the samples are a claim of the process that ran the code)."""
    if not isinstance(desc, dict) or desc.get("dtype") != "float64":
        return f"dtype {str((desc or {}).get('dtype'))[:20]} (float64 expected)"
    shape = desc.get("shape") or []
    if len(shape) != 1:
        return f"shape {shape} (one vector expected)"
    if not 1 <= shape[0] <= cap_n:
        return f"{shape[0]} samples (1..{cap_n} expected)"
    try:
        vals = shm.import_tensor(desc, fds).tolist()
    except protocol.ProtocolError as exc:
        return f"not a sealed tensor ({exc})"
    bad = [x for x in vals if not (isinstance(x, float) and math.isfinite(x) and x > 0)]
    if bad:
        return f"{len(bad)} of {len(vals)} samples not finite and positive (e.g. {str(bad[0])[:30]})"
    return [float(x) for x in vals]



class ClockStages(CheckedPass, RefTimingStages):
    """The timing stage (the kernel's and the reference's own timers, then ktui's clock), mixed
    into :class:`ktui.engine.pipeline.Judge`."""

    @contextlib.contextmanager
    def _candidate_stopped(self, timing):
        """While the reference is timed the candidate's processes are stopped (SIGSTOP): nothing
        the kernel left running (a thread, a native thread, a child) can load the host or launch
        GPU work that slows the reference and so inflates the speedup. What it queued on the GPU
        before is finished: its own timing ended with a synchronize. The candidate's CPU time
        over the window (from /proc, which it cannot understate) is recorded: about 0. A reference
        timing replayed from the cache (reftime.py) runs nothing: the candidate is stopped only
        when a measurement is live."""
        self._stop_for, self._stopped = timing, None
        try:
            if not self._rt_replaying():
                self._stop_candidate()
            yield
        finally:
            self._stop_for = None
            if self._stopped is not None:
                self._continue_candidate()

    def _stop_candidate(self):
        proc = self.cand.proc.proc
        pids = sandbox.stop_tree(proc)
        sandbox.wait_stopped(pids)
        self._stopped = (pids, sandbox.cpu_seconds(pids), now(), self._stop_for)

    def _continue_candidate(self):
        pids, cpu0, t0, timing = self._stopped
        self._stopped = None
        cpu1 = sandbox.cpu_seconds(pids)
        sandbox.continue_tree(self.cand.proc.proc, pids)
        rec = timing.setdefault("candidate_stopped", {"processes": 0, "windows": 0, "seconds": 0.0,
                                                      "cpu_seconds": 0.0})
        rec["processes"] = max(rec["processes"], len(pids))
        rec["windows"] += 1
        rec["seconds"] = round_(rec["seconds"] + now() - t0, 3)
        rec["cpu_seconds"] = round_(rec["cpu_seconds"] + max(0.0, cpu1 - cpu0), 3)

    def _time_side(self, w, label, cap_s=None, method=None):
        job = self.job
        # a sample cap the kernel cannot stretch (its own clock may be patched to stand still)
        cap_n = int(min(MAX_SAMPLES, max(20 * int(job.trials), 200)))
        args = {"slots": ["t"], "method": method or job.method, "trials": int(job.trials), "warmup": int(job.warmup),
                "target_rse": float(job.target_rse), "cap_s": float(job.time_cap_s if cap_s is None else cap_s),
                "adaptive": bool(job.adaptive), "max_samples": cap_n}
        self.trial(1, None, label)
        data, fds = w.call("time", args)
        h = self.hold(data["samples"], fds)
        try:
            samples = valid_samples(h.value, h.fds, cap_n)
        finally:
            self.release(h)
        if isinstance(samples, str):
            if w.role == "reference":
                raise StageFailure(self.stage_name, "reference_error",
                                   f"the reference's worker sent invalid timing samples: {samples}", fatal=True)
            data = dict(data, invalid_samples=samples)
            return data, None
        return data, samples

    def _wall(self, w, slots, label, check=False):
        """The judge's own clock: wall time of F calls (cycling over distinct inputs) ending in a
        device-wide synchronize, F sized from a first pass (never from the worker's own timing,
        which the kernel may have changed) to last about WALL_WINDOW_S; the fastest of
        WALL_REPEATS, per forward. Returns (per-forward times, F, the outputs)."""

        def once(forwards, rtt):
            """(per-forward time with the waits for a CPU taken out, the raw per-forward time)"""
            q0, j0, a0 = w.runqueue_wait_ns(), oslib.own_runqueue_wait_ns(), w.thread_waits_ns()
            t = now()
            # one wake-up a second at most while the worker runs (the judge then only becomes
            # runnable when the reply is there, so its own wait below is the reply's latency)
            data, _ = w.call("wall", {"slots": slots, "forwards": forwards}, poll=1.0)
            dt = (now() - t) * 1e6
            q1, j1, a1 = w.runqueue_wait_ns(), oslib.own_runqueue_wait_ns(), w.thread_waits_ns()
            # time the worker was runnable but another process had the CPU is not the kernel's
            # (a shared host), nor is the time the judge waited for a CPU to read the reply;
            # sleeps, waits for the GPU and work stay in
            waited = (q1 - q0) / 1e3 if q0 is not None and q1 is not None else 0.0
            waited += (j1 - j0) / 1e3 if j0 is not None and j1 is not None else 0.0
            waited = min(waited, dt)
            self._rq_waited += waited
            self._wall_total += dt
            if data["forwards"] != forwards:  # the judge's count, never the worker's
                w.kill()
                raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the {w.role} says it "
                                   f"ran {data['forwards']} forwards, {forwards} asked (the worker was ended)",
                                   fatal=True)
            n = max(1, forwards)
            main = (q1 - q0) if q0 is not None and q1 is not None else 0
            if a0 is not None and a1 is not None:
                others.append(max(0.0, (a1 - a0 - main) / 1e3) / n)
            return max(0.0, dt - waited - rtt) / n, dt / n

        others = []  # per pass: μs per forward other threads of the worker waited for a CPU
        self.trial(0, WALL_REPEATS, f"{label} wall clock")
        forwards = len(slots)
        # F is sized from the raw time (round trip and waits included): an upper bound per
        # forward, so F never overshoots the window, however much waiting is taken out later
        _, raw = once(forwards, 0.0)
        # grow F until one pass lasts about WALL_WINDOW_S (wake-up latencies then do not matter)
        for _ in range(4):
            if raw * forwards >= WALL_WINDOW_S * 1e6 * 0.5 or forwards >= WALL_MAX_FORWARDS:
                break
            forwards = int(max(forwards * 2, min(WALL_MAX_FORWARDS, WALL_WINDOW_S * 1e6 / max(raw, 1e-3))))
            _, raw = once(forwards, 0.0)
        per, raws = [], []
        del others[:]
        for rep in range(WALL_REPEATS):
            self.trial(rep + 1, WALL_REPEATS, f"{label} wall clock")
            clean, raw_ = once(forwards, w.rtt_us)
            per.append(clean)
            raws.append(raw_)
        # the fastest pass with nothing taken out (never 0: a pass's waits for a CPU, taken out,
        # can leave nothing of a fast kernel on a loaded host)
        self.wall_raw_us = min(raws)
        # the uncertainty of the fastest pass: what the worker's other threads waited in it
        self.wall_unsure_us = others[per.index(min(per))] if len(others) == len(per) else 0.0
        if not check:
            return per, forwards, None
        return per, forwards, self._checked_pass(w, slots, label, forwards, raw, per)

    def _timing(self, seed):
        job = self.job
        method = job.method
        method_used = method if self.device_str.startswith("cuda") else "host"
        if method_used != method:
            self.result["notes"].append(f"{method} needs a CUDA device: timed with the host clock on {self.device_str}")
        timing = {"method": method, "method_used": method_used, "trials": int(job.trials), "warmup": int(job.warmup),
                  "l2_flush_mib": 256 if method_used != "host" else 0, "target_rse": job.target_rse,
                  "time_cap_s": job.time_cap_s}
        with self.device("shared", "timing inputs"):
            inputs, ref_out = self.reference_io(seed, "t")
            v, f = inputs.send_args()
            self.cand.call("put_inputs", {"slot": "t", "inputs": v}, f)
        self._pending_wall_check = None
        self._wall_ref = ref_out  # the size of the outputs the checked pass keeps
        self._wall_inputs = inputs  # a wrong checked pass is compared with one untimed call on them
        done = []
        self._rt_prepare()
        try:
            # the reference's timing: measured, or replayed from the cache (reftime.py); the cache is
            # written as the window is given up (host work), before the judge waits for anything else
            with self.device("alone", "timing", after=lambda: self._rt_finish(timing, bool(done))):
                self._rt_open()
                self._timing_alone(timing, ref_out)
                if not timing.get("error"):
                    done.append(True)
        finally:
            self._rt_finish(timing, False)  # a no-op once done (the lock let go on every path)
            if getattr(self, "_pending_wall_check", None) is not None and not timing.get("error"):
                self._judge_wall_outputs()
            elif getattr(self, "_pending_wall_check", None) is not None:
                checked = self._pending_wall_check[0]
                self.release(checked[1] if checked[0] == "copies" else None)
        return timing

    def _timing_alone(self, timing, ref_out):
        """Everything of the timing stage that must have the device alone."""
        cuda = self.device_str.startswith("cuda")
        gpu_before = gpu_after = None
        if self.windows is not None:
            # the wait for this window (the last one the judge waited for; the deadline moved by it)
            timing["gpu_lock" if cuda else "device_lock"] = {"path": self.windows.path,
                                                             "waited_s": round_(self.windows.last_wait_s, 3)}
        if cuda:
            from .gpu import state

            gpu_before = state(self.device_str)
        try:
            kdata, ks = self._time_side(self.cand, "kernel")
            with self._candidate_stopped(timing):
                rdata, rs = self._ref_time("reference")
        except StageFailure as f:
            if f.kind != "method_unsupported":
                raise
            if f.fatal or not self.cand.proc.alive():
                timing["error"] = f.message
                self.result["notes"].append(f.message)
                return
            # the kernel's word that it cannot be captured in a CUDA graph is checked, not
            # taken: both sides are timed anyway, with CUDA events (no kernel escapes timing)
            self.result["notes"].append(f"{f.message}: both sides timed with CUDA events instead")
            timing["method_used"] = "cuda_event"
            timing["graph_unsupported"] = f.message
            kdata, ks = self._time_side(self.cand, "kernel", method="cuda_event")
            with self._candidate_stopped(timing):
                rdata, rs = self._ref_time("reference", method="cuda_event")
        if ks is None:  # the kernel's process sent samples that cannot be true: ktui's clock decides
            timing["kernel_invalid_samples"] = kdata["invalid_samples"]
            ks = [float("inf")]
        timing["kernel"], timing["reference"] = stats_us(ks), stats_us(rs)
        timing["kernel_samples_us"] = [round_(x, 3) for x in ks[:2000] if math.isfinite(x)]
        timing["reference_samples_us"] = [round_(x, 3) for x in rs[:2000]]
        timing["batches"] = {"kernel": kdata["batches"], "reference": rdata["batches"]}
        timing["stopped"] = {"kernel": kdata["stopped"], "reference": rdata["stopped"]}
        self._cross_check(timing, ref_out)
        km, rm = timing["kernel"]["mean_us"], timing["reference"]["mean_us"]  # after the cross-checks
        timing["speedup"] = round_(rm / km, 4) if km else None
        if self._floor:
            timing["floor"] = self._floor
        if cuda:
            gpu_after = state(self.device_str)
            ours = set()
            for w in self.workers:
                ours.update(w.proc.tree())
            timing["gpu_state"] = {"before": gpu_before, "after": gpu_after}
            busy = _not_idle(gpu_before, ours)
            if busy:
                timing["gpu_not_idle"] = busy
                self.result["notes"].append(f"the GPU was not idle while timing: {busy}")

    def _cross_check(self, timing, ref_out):
        """The kernel's own timing vs the judge's clock: the same inputs as the timed loop (so
        caches behave the same; reuse of results is the probes' business), the output checked."""
        n = 1
        slots = ["t"]
        kper, kf, checked = self._wall(self.cand, slots, "kernel", check=True)
        self._kernel_raw_us = self.wall_raw_us
        self._unsure = {"kernel": self.wall_unsure_us}
        knoise = self._noise_us(self.cand)
        with self._candidate_stopped(timing):
            rper, rf, _ = self._ref_wall(slots, "reference")
            self._unsure["reference"] = self.wall_unsure_us
            rnoise = self._ref_noise()
        noise = {"kernel": knoise, "reference": rnoise}
        self._noise = noise
        cc = {"inputs": n, "kernel_forwards": kf, "checked_by": checked[0],
              "checked_calls": [k + 1 for k in checked[2]] if checked[0] == "copies" else "all",
              "reference_forwards": rf,
              "repeats": WALL_REPEATS,
              "kernel_wall_us": [round_(x, 3) for x in kper],
              "reference_wall_us": [round_(x, 3) for x in rper], "rtt_us": round_(self.cand.rtt_us, 3),
              "runqueue_wait_us": round_(self._rq_waited, 1),
              "noise_us": {k: round_(v, 1) for k, v in noise.items()}}
        timing["cross_check"] = cc
        total = self._wall_total
        if total > 0 and cc["runqueue_wait_us"] > WALL_BUSY_FRACTION * total:
            # said, not hidden: a kernel's own threads can make its worker wait for a CPU too
            self.result["notes"].append(
                f"the host was busy while ktui's clock ran: {100 * cc['runqueue_wait_us'] / total:.0f} % of that "
                "time was spent waiting for a CPU and was not counted; the timer cross-check is weaker for it")
        checks = self.result["checks"]
        # the outputs of the checked pass are compared once the device is given up (a comparison
        # needs no device); what it finds goes where it would have gone, before the timer's checks
        self._pending_wall_check = (checked, ref_out, kf, len(checks), len(self.result["findings"]))
        invalid = timing.get("kernel_invalid_samples")
        for side, per, fw in (("kernel", kper, kf), ("reference", rper, rf)):
            st = timing[side]
            own = st["mean_us"]
            if side == "kernel" and invalid:
                detail = (f"the kernel's worker sent timing samples that cannot be true ({invalid}): its timer was "
                          f"tampered with; ktui's clock {min(per):.2f} μs per forward ({fw} forwards) is reported")
                checks.append({"name": "timer_cross_check", "ok": False, "detail": detail})
                self.result["findings"].append({"class": "timer_disagrees", "reason": detail,
                                                "evidence": {"invalid_samples": invalid, "wall_us": per}})
                timing["kernel"] = stats_us(per)
                timing["kernel"]["source"] = "judge wall clock"
                cc["kernel_wall_us"] = round_(min(per), 3)
                continue
            # a disagreement is confirmed before it is reported: the worker's timer and ktui's
            # clock are measured again, back to back, so both see the same host (a busy spell
            # between the first two measurements slows only one of them); a changed timer stays
            # off in every re-measurement. When they then agree, the time reported is the
            # re-measured one (never the first, which ktui's clock did not confirm).
            tol = WALL_TOLERANCE_CPU if self.device_kind == "cpu" else WALL_TOLERANCE
            # what a busy host adds to a pass of few forwards (one slow wake-up), per forward
            slack = WALL_SLACK_US + noise[side] / max(1, fw)
            remeasured = 0
            for _retry in range(WALL_CONFIRM):
                if own * (1 + tol) + slack >= min(per):
                    break
                remeasured += 1
                with self._candidate_stopped(timing) if side == "reference" else contextlib.nullcontext():
                    _d, again = self._side_time(side, side, cap_s=max(0.1, float(self.job.time_cap_s) / 4))
                    more, _f, _o = self._side_wall(side, slots, side)
                per = list(more)
                if again is None:  # invalid samples this time: the disagreement stands
                    st = {"invalid_samples": _d.get("invalid_samples")}
                    own = float("inf")
                    break
                st = stats_us(again)
                own = st["mean_us"]
            if remeasured and math.isfinite(own) and own * (1 + tol) + slack >= min(per):
                first = timing[side]["mean_us"]
                timing[side + "_first"] = timing[side]
                timing[side] = st
                timing[side + "_samples_us"] = [round_(x, 3) for x in again[:2000]]
                self.result["notes"].append(
                    f"the {side}'s first timing ({first:.2f} μs mean) disagreed with ktui's clock; timed again "
                    f"together with it ({remeasured}x), they agree: {own:.2f} μs is reported (a busy host?)")
            wall = min(per)
            cc[f"{side}_wall_us"] = round_(wall, 3)
            cc[f"{side}_wall_median_us"] = round_(sorted(per)[len(per) // 2], 3)
            if not math.isfinite(own) or own * (1 + tol) + slack < wall:
                detail = (f"the {side}'s own timing says {own:.2f} μs per forward (mean), ktui's clock "
                          f"{wall:.2f} μs ({fw} forwards + device synchronize, best of "
                          f"{WALL_REPEATS}): its timer or its work was tampered with, or work runs outside the "
                          "timed stream")
                checks.append({"name": "timer_cross_check" if side == "kernel" else "reference_timer_cross_check",
                               "ok": False, "detail": detail})
                self.result["findings"].append({"class": "timer_disagrees", "reason": detail,
                                                "evidence": {"own_median_us": own if math.isfinite(own) else None,
                                                             "wall_us": per}})
                # the reported time never comes from a source the kernel changed
                timing[side + "_own"] = st
                timing[side] = stats_us(per)
                timing[side]["source"] = "judge wall clock"
            elif self.device_kind == "cpu" and own * (1 + WALL_REPORT_TOLERANCE_CPU) + slack < wall:
                # on the CPU the judge's clock measures the same thing as the worker's timer: an
                # own timing well below it (but within the tolerance that makes a finding) is not
                # reported; the judge's clock is
                timing[side + "_own"] = st
                timing[side] = stats_us(per)
                timing[side]["source"] = "judge wall clock"
                self.result["notes"].append(
                    f"the {side}'s own timing ({own:.2f} μs mean) is {wall / max(own, 1e-9):.1f}x below ktui's clock "
                    f"({wall:.2f} μs per forward): ktui's clock is reported")
            else:
                st["source"] = "worker timer (bound before trace code loaded), cross-checked"
        if not any(c["name"] == "timer_cross_check" for c in checks):
            checks.append(agreeing_cross_check(timing["kernel"]["mean_us"], cc["kernel_wall_us"], kf,
                                               WALL_TOLERANCE_CPU if self.device_kind == "cpu" else WALL_TOLERANCE))
        self._interleaved(timing, cc)
        # the checked pass (every output kept) against the timed passes, said in every result
        cc["kernel_checked_pass_us"] = round_(self._checked_per, 3)
        cc["kernel_timed_raw_us"] = round_(self._kernel_raw_us, 3)
        self._checked_pass_agrees(timing, cc, slots)

    def _noise_us(self, w):
        """The slowest of 3 empty round trips to ``w`` now (μs): what waking up and answering
        costs on this host at this moment, which a pass of few forwards cannot average away."""
        worst = 0.0
        for _ in range(3):
            t = now()
            w.call("ping")
            worst = max(worst, (now() - t) * 1e6)
        return worst

    def _interleaved(self, timing, cc):
        """Identical calls vs interleaved calls, by ktui's clock, for both sides: the timed loops
        call a side again and again on one input; here the calls cycle over the correctness
        trials' inputs too (already in both workers). A kernel much faster on identical calls
        reuses results while timed; a reference much slower on them is slowed while timed (it
        would inflate the speedup). Either is a finding, and that side's time becomes the
        interleaved one (ktui's clock); but only when WALL_CONFIRM more pairs of passes, one of
        each kind in turn, all say so, each with what the worker's other threads waited for a
        CPU as its uncertainty (a loaded host slows a pass of an honest multi-threaded op)."""
        n = int(self.job.correctness_trials)
        mixed = ["t"] + [f"c{i}" for i in range(1, n + 1)]
        if len(mixed) < 2:
            return
        unsure = dict(getattr(self, "_unsure", None) or {})
        kmix, _kf, _ = self._wall(self.cand, mixed, "kernel interleaved")
        unsure_mix = {"kernel": self.wall_unsure_us}
        with self._candidate_stopped(timing):
            rmix, _rf, _ = self._ref_wall(mixed, "reference interleaved")
            unsure_mix["reference"] = self.wall_unsure_us
        ident = {"kernel": cc["kernel_wall_us"], "reference": cc["reference_wall_us"]}
        inter = {"kernel": min(kmix), "reference": min(rmix)}
        cc["interleaved_inputs"] = len(mixed)
        cc["kernel_interleaved_us"] = round_(inter["kernel"], 3)
        cc["reference_interleaved_us"] = round_(inter["reference"], 3)
        fw = {"kernel": min(cc["kernel_forwards"], _kf), "reference": min(cc["reference_forwards"], _rf)}
        noise = getattr(self, "_noise", {}) or {}
        for side, faster_when_repeated in (("kernel", True), ("reference", False)):
            base = WALL_SLACK_US + noise.get(side, 0.0) / max(1, fw[side])

            def holds(a, b, ua, ub, fwr=faster_when_repeated, base=base):
                slow, fast = (b, a) if fwr else (a, b)
                return slow > INTERLEAVED_RATIO * fast + base + ua + ub

            a, b = ident[side], inter[side]
            if not holds(a, b, unsure.get(side, 0.0), unsure_mix[side]):
                continue
            # measured again, both ways, in turn, before it is a finding: a pause of the host
            # during one pass (a loaded machine) must not make an honest side look slowed or replayed
            confirmed = True
            for _ in range(WALL_CONFIRM):
                with self._candidate_stopped(timing) if side == "reference" else contextlib.nullcontext():
                    again_ident, _f1, _ = self._side_wall(side, ["t"], side)
                    ua = self.wall_unsure_us
                    again_mix, _f2, _ = self._side_wall(side, mixed, f"{side} interleaved")
                    ub = self.wall_unsure_us
                if not holds(min(again_ident), min(again_mix), ua, ub):
                    confirmed = False
                    break
                a, b = min(a, min(again_ident)), min(b, min(again_mix))
            if not confirmed:
                continue
            slow, fast = (b, a) if faster_when_repeated else (a, b)
            if faster_when_repeated:
                why = (f"the kernel is {slow / max(fast, 1e-9):.1f}x faster called again and again on one input "
                       f"({fast:.2f} μs per forward) than on {len(mixed)} interleaved inputs ({slow:.2f} μs): it reuses "
                       "results while timed; the interleaved time is reported")
                cls = "faster_on_repeated_calls"
            else:
                why = (f"the reference is {slow / max(fast, 1e-9):.1f}x slower called again and again on one input "
                       f"({slow:.2f} μs per forward) than on {len(mixed)} interleaved inputs ({fast:.2f} μs): it is "
                       "slower when timed than when not; the interleaved time is reported")
                cls = "reference_slower_when_timed"
            self.result["findings"].append({"class": cls, "reason": why,
                                            "evidence": {"identical_us": round_(a, 3), "interleaved_us": round_(b, 3)}})
            self.result["checks"].append({"name": "interleaved_calls" if side == "kernel" else
                                          "reference_interleaved_calls", "ok": False, "detail": why})
            timing[side + "_identical"] = timing[side]
            timing[side] = stats_us(kmix if side == "kernel" else rmix)
            timing[side]["source"] = "judge wall clock, interleaved inputs"

def _not_idle(before, ours):
    from .gpu import not_idle

    return not_idle(before, ours)
