# ---- ktui repro harness: the checked wall-clock pass ----------------------------------------------------
# The worker keeps every call's output of the checked pass (copies, or fingerprints above a cap); the
# judge names the calls it compares only after the loop (split from clockcheck.py). MIT license, part of ktui.
import secrets
import time

from . import oslib, protocol, shm
from .compare import fingerprint_rule, fingerprints_wrong
from .defaults import (
    CHECKED_PASS_SLACK_S,
    CHECKED_PASS_SLOWDOWN,
    INTERLEAVED_RATIO,
    WALL_CHECKED,
    WALL_CONFIRM,
    WALL_REPEATS,
    WALL_RETAIN_BYTES,
    WALL_RETAIN_SLACK,
    WALL_SLACK_US,
    machine_scale,
)
from .errors import StageFailure, now, round_, stats_us
from .workers import Held, Timeout, value_nbytes


def valid_fingerprints(data, fds, forwards):
    """The checked pass's fingerprints, checked before they are read: one float64 [forwards, 3]
    tensor in a sealed memfd and nothing else. Returns a copy in the judge's memory, or a string
    saying what is wrong. The descriptors are closed either way."""
    try:
        desc = data.get("fingerprints")
        if data.get("outputs"):
            return "sent with outputs"
        if not isinstance(desc, dict) or desc.get("dtype") != "float64":
            return f"dtype {str((desc or {}).get('dtype') if isinstance(desc, dict) else desc)[:20]} (float64 expected)"
        if list(desc.get("shape") or []) != [forwards, 3]:
            return f"shape {str(desc.get('shape'))[:40]} ([{forwards}, 3] expected)"
        try:
            return shm.import_tensor(desc, fds).clone()
        except (protocol.ProtocolError, RuntimeError, ValueError) as exc:
            return f"not a sealed tensor ({str(exc)[:200]})"
    finally:
        shm.close_fds(fds)



class CheckedPass:
    """The checked wall-clock pass (every call's output kept, the calls checked named only after the
    loop) and its judgement, mixed into :class:`ktui.engine.clockcheck.ClockStages`."""

    def _checked_pass(self, w, slots, label, forwards, raw, per):
        """One more pass like the timed ones whose outputs are checked: the worker keeps EVERY
        call's output (a copy made when it is returned, while the reference's output size times
        the forwards fits WALL_RETAIN_BYTES; above, a fingerprint of each: float64 sum, absolute
        sum, element count) and only once the loop has ended does the judge pick, at random, the
        calls whose copies it compares (a second message, ``wall_outputs``); fingerprints it
        checks for every call. A kernel runs in its worker's process and can read everything
        there (the request, the worker's frames and objects): the request said which calls were
        checked and a kernel that computed only those got through with every other output wrong.
        It can now learn that this pass is the checked one, not which of its calls count: to
        pass, it must do the work on every call of this pass, which is timed (below) against the
        timed passes.

        Out of reach, because the worker's code runs in the kernel's process: a kernel that
        patches the worker itself (its loop, its copies, its fingerprints or its reply) can send
        outputs it did not compute in the loop: one right output per distinct input, computed
        once (this pass repeats one input) or when the picked calls are named, and copied for
        every call. What that costs it (one real call per input, plus the calls named) is in
        this pass's time, which the judge's own clock measures, request and reply included; it
        stays hidden only where that cost is small against the pass's forwards. Fingerprints
        see no error that keeps an output's sum and absolute sum (a kernel must compute the
        output to know them), nor non-tensor leaves; with a reference whose sums are not
        finite, only that the kernel's are not finite either.

        Returns ("copies", the outputs held, the calls picked) or ("fingerprints", rows [F, 3])."""
        rng = secrets.SystemRandom()
        cap = int(self.job.wall_retain_bytes if getattr(self.job, "wall_retain_bytes", None) is not None
                  else WALL_RETAIN_BYTES)
        ref = getattr(self, "_wall_ref", None)
        ref_bytes = max(1, value_nbytes(ref.value)) if ref is not None else 1
        mode = "copies" if ref_bytes * forwards <= cap else "fingerprints"
        self.trial(WALL_REPEATS, WALL_REPEATS, f"{label} outputs of every call kept ({mode})")
        # its time is measured too (the request and the reply of its outputs, which a kernel could
        # compute only when asked for them): a worker patched to do the work only when the judge
        # keeps outputs is slower here than in the timed passes, and ended when far slower
        expected_s = forwards * max(raw, min(per)) / 1e6
        budget_s = CHECKED_PASS_SLOWDOWN * expected_s + CHECKED_PASS_SLACK_S * machine_scale()
        q0, j0, a0 = w.runqueue_wait_ns(), oslib.own_runqueue_wait_ns(), w.thread_waits_ns()
        t0 = now()
        keep = []
        try:
            retain = {"mode": mode, "budget": int(WALL_RETAIN_SLACK * cap)}
            data, _ = w.call("wall", {"slots": slots, "forwards": forwards, "retain": retain}, poll=1.0,
                             timeout=budget_s)
            if data["forwards"] != forwards:
                raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the {w.role} ran "
                                   f"{data['forwards']} forwards, {forwards} asked (the worker was ended)", fatal=True)
            # the calls checked are picked now, the loop being over (never sent with it)
            if mode == "copies":
                keep = sorted(rng.sample(range(forwards), min(WALL_CHECKED, forwards)))
            outs, fds = w.call("wall_outputs", {"calls": keep} if mode == "copies" else {},
                               timeout=max(1.0, budget_s - (now() - t0)))
        except Timeout:
            if time.monotonic() >= self.deadline:
                raise
            raise StageFailure(self.stage_name, "runtime_error" if w.role == "candidate" else "reference_error",
                               f"the {label}'s {forwards} calls took {expected_s * 1e3:.3g} ms in the timed passes "
                               f"(ktui's clock) but more than {budget_s:.1f} s when ktui kept their outputs: "
                               "the timed passes did not do the work (its worker's loop was changed); the "
                               f"{w.role} worker was ended", fatal=True) from None
        dt = (now() - t0) * 1e6
        q1, j1, a1 = w.runqueue_wait_ns(), oslib.own_runqueue_wait_ns(), w.thread_waits_ns()
        # like a timed pass: the worker's and the judge's waits for a CPU taken out, what the
        # worker's other threads waited for one is the uncertainty
        main = (q1 - q0) if q0 is not None and q1 is not None else 0
        waited = min(dt, (main + ((j1 - j0) if j0 is not None and j1 is not None else 0)) / 1e3)
        self._checked_per = max(0.0, dt - waited) / max(1, forwards)
        self._checked_unsure = (max(0.0, (a1 - a0 - main) / 1e3) / max(1, forwards)
                                if a0 is not None and a1 is not None else 0.0)
        if mode == "fingerprints":
            rows = valid_fingerprints(outs, fds, forwards)
            if isinstance(rows, str):
                w.kill()
                raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the fingerprints of "
                                   f"the checked pass are {rows} (the {w.role} worker was ended)", fatal=True)
            return ("fingerprints", rows)
        if len(outs["outputs"]) != len(keep):
            shm.close_fds(fds)
            w.kill()
            raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: {len(outs['outputs'])} "
                               f"outputs of the checked pass, {len(keep)} asked (the {w.role} worker was ended)",
                               fatal=True)
        return ("copies", self.hold(outs["outputs"], fds), keep)

    def _checked_pass_agrees(self, timing, cc, slots):
        """The kernel's checked pass (outputs of random calls kept, the only pass whose outputs
        the judge sees) against its timed passes, by ktui's clock. Much slower there, and again
        when measured again: a finding, and the checked pass's time is the one reported."""
        # the checked pass with its waits for a CPU taken out against the timed passes with
        # nothing taken out: a loaded host can only make this look less like a finding (taken
        # out of the timed passes too, a fast honest kernel's time could become 0 and the checked
        # pass "22 billion times slower")
        checked = self._checked_per
        timed = self._kernel_raw_us
        slack = WALL_SLACK_US + (getattr(self, "_noise", {}) or {}).get("kernel", 0.0) / max(1, cc["kernel_forwards"])
        if not (checked > INTERLEAVED_RATIO * timed + slack + self._checked_unsure):
            return
        # measured again WALL_CONFIRM times, the fastest of each kind kept: keeping every output
        # adds work to each call (a copy, or two sums), and a multi-threaded op on a loaded host
        # is now and then far slower for a whole pass; a kernel that does the work only here is
        # slower every time
        for _ in range(WALL_CONFIRM):
            _again, _f, kept = self._wall(self.cand, slots, "kernel", check=True)
            self.release(kept[1] if kept[0] == "copies" else None)
            timed, checked = min(timed, self.wall_raw_us), min(checked, self._checked_per)
            cc["kernel_checked_pass_us"] = round_(checked, 3)
            if not (checked > INTERLEAVED_RATIO * timed + slack + self._checked_unsure):
                return
        why = (f"the kernel is {checked / max(timed, 1e-9):.1f}x slower on the pass whose outputs ktui checks "
               f"({checked:.2f} μs per forward) than on its timed passes ({timed:.2f} μs): it does the work only "
               "when its outputs are kept; the checked pass's time is reported")
        self.result["findings"].append({"class": "slower_when_checked", "reason": why,
                                        "evidence": {"timed_us": round_(timed, 3), "checked_us": round_(checked, 3)}})
        self.result["checks"].append({"name": "checked_pass", "ok": False, "detail": why})
        timing["kernel_unchecked"] = timing["kernel"]
        timing["kernel"] = stats_us([checked])
        timing["kernel"]["source"] = "judge wall clock, the checked pass"

    def _judge_wall_outputs(self):
        """The outputs of ktui's checked wall-clock pass against the reference's (after the timing
        window): a wrong one is ``timed_outputs_correct`` failed, ``wrong_while_timed``, when the
        kernel answers that input right outside timing. When one untimed call on the same input is
        wrong too (a TF32 product past the tolerance, a race), nothing depends on timing: the kernel
        fails on that input, a correctness failure (``correctness.passed`` false, the input said),
        not a hack class."""
        pending, self._pending_wall_check = getattr(self, "_pending_wall_check", None), None
        if pending is None:
            return
        checked, ref_out, kf, at_check, at_finding = pending
        wrong = []
        if checked[0] == "fingerprints":
            # every call of the checked pass, by its fingerprint
            rows = checked[1]
            try:
                ref = ref_out.decoded()
            except protocol.ProtocolError as exc:
                raise StageFailure(self.stage_name, "reference_error", f"the reference's worker sent an output "
                                   f"that is not a tensor ktui can read ({exc})", fatal=True) from None
            rule = fingerprint_rule(ref, getattr(self, "input_dtype", None), getattr(self, "cosine", None),
                                    getattr(self, "task_tol", None))
            bad = fingerprints_wrong(rows, rule)
            for i in bad[:3]:
                s, a, n = (float(x) for x in rows[i].tolist())
                wrong.append(f"forward {i + 1} of {kf}: its output's sum {s:.6g}, absolute sum {a:.6g}, "
                             f"{n:.0f} elements; the reference's {rule[0]:.6g}, {rule[1]:.6g}, {rule[2]} "
                             f"(within {rule[3]:.3g})")
            if len(bad) > 3:
                wrong.append(f"{len(bad)} of {kf} calls wrong by their fingerprints")
        else:
            _mode, kouts, keep = checked
            try:
                for i, o in zip(keep, kouts.value, strict=True):
                    one = Held(o["outputs"], kouts.fds, owns=False)
                    cmp = self.compare_checked(ref_out, one, f"the wall-clock run's call {i + 1}")
                    if not cmp["passed"]:
                        wrong.append(f"forward {i + 1} of {kf}: {cmp['reason']}")
            finally:
                self.release(kouts)
        if not wrong:
            return
        inputs = getattr(self, "_wall_inputs", None)
        untimed = None if inputs is None else self.untimed_call_wrong(inputs, ref_out, "t-untimed",
                                                                      "the timing input (a fresh draw of get_inputs)")
        if untimed is not None and not untimed["passed"]:
            self.fails_outside_timing("the timing input (a fresh draw of get_inputs)", untimed, wrong[0])
            return
        self.result["checks"].insert(at_check, {"name": "timed_outputs_correct", "ok": False,
                                                "detail": f"the output of the wall-clock run is wrong: {wrong[0]}"})
        self.result["findings"].insert(at_finding, {
            "class": "wrong_while_timed", "reason": "outputs produced while timed are wrong (the kernel behaves "
            "differently when timed)" + (": one untimed call on the same input is right" if untimed else ""),
            "evidence": wrong[:4]})
