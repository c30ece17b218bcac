# ---- ktui repro harness: the correctness stage ------------------------------------------------------
# MIT license, part of ktui.
import os
import time

from . import protocol, sandbox
from .buildcache import JIT_CACHE, publish_jit
from .compare import compare_outputs, held_out_seed, input_precision
from .errors import StageFailure, now, round_
from .workers import Held, Timeout, nonfinite_fraction, value_nbytes


class CorrectnessStages:
    """The correctness stage (trials, held-out trial, the JIT warm-up) and the judge's comparison
    rule, mixed into :class:`ktui.engine.pipeline.Judge`."""

    def publish_jit_cache(self, cand):
        """The kernel's Triton cache (roles.op_build: TRITON_CACHE_DIR in its build folder; compiled
        kernels, their launchers, autotuning timings) copied into its cached build once its first
        call compiled them, so that its next worker life (a retry, a re-run, ``ktui repro`` after
        ``ktui verify``) loads them instead of compiling and autotuning again. Called right after
        the JIT warm-up: the kernel has seen no judged input yet (the warm-up's are drawn from the
        public init seed), so nothing it could learn from one reaches the cache; the candidate is
        stopped while the judge copies (publish_jit). Never another kernel's: the cache
        is keyed by this kernel's source (the build key)."""
        if not os.path.isdir(os.path.join(self.build_tmp, JIT_CACHE)):
            return {"stored": False, "why": "nothing compiled"}
        pids = sandbox.stop_tree(cand.proc.proc)
        sandbox.wait_stopped(pids)
        try:
            stored = publish_jit(self.build_tmp, self.job.build_dir)
        finally:
            sandbox.continue_tree(cand.proc.proc, pids)
        return {k: v for k, v in stored.items() if k != "skipped"}

    def _jit_warmup(self, seed):
        """A Triton kernel compiles at its first call: one forward on inputs of their own, before
        correctness, as part of the build stage (the build's time limit, its seconds; ``jit_s``
        in the build's result), so the JIT is neither a correctness trial's timeout nor in any timing."""
        before = dict(self.result["stages"].get("build") or {})
        self.stage("build")
        t0 = now()
        with self.device("shared", "JIT warm-up"):
            inputs, _none = self.reference_io(held_out_seed(seed ^ 0x9E3779B1, []), "jit", outputs=False)
            try:
                out, _meta = self.candidate_forward(inputs, "jit")
                out.close()
            finally:
                inputs.close()
            self.drop_slots(["jit"])
        jit = round_(now() - t0, 3)
        # the cache the first call filled (compiled kernels, launchers, autotuning) kept for the
        # kernel's next worker life: before any judged input reaches the candidate
        fetched = os.path.isdir(os.path.join(self.job.build_dir, JIT_CACHE))  # kept by an earlier life
        jit_cache = self.publish_jit_cache(self.cand)
        self.end_stage()
        self.result["stages"]["build"] = {"state": "done",
                                          "seconds": round_(float(before.get("seconds") or 0.0) + jit, 3)}
        if isinstance(self.result.get("build"), dict):
            self.result["build"]["jit_s"] = jit
            self.result["build"]["jit_cache"] = dict(jit_cache, fetched=bool(fetched))
        self.stage("correctness")

    def reference_io(self, seed, slot, outputs=True):
        """Inputs for `seed` from the reference (kept in slot `slot` there) and its outputs on them.
        In a sweep (a shared input seed) the reference is a refshare.SharedReference: its outputs
        come from the reference-reply store when they were stored for these very inputs. Without
        ``outputs`` (a probe that only runs or times the kernel on new inputs) the reference makes
        the inputs and computes nothing: (inputs, None)."""
        iv, ifd = self.ref.call("make_inputs", {"seed": int(seed), "slot": slot, "forward": bool(outputs),
                                                "trial": self.cur_trial})
        inputs = self.hold(iv["inputs"], ifd)
        if not outputs:
            return inputs, None
        return inputs, Held(iv["forward"]["outputs"], ifd, owns=False)  # same reply: closed with the inputs

    def candidate_forward(self, inputs, slot, return_inputs=False):
        v, f = inputs.send_args()
        ov, ofd = self.cand.call("forward", {"slot": slot, "trial": self.cur_trial, "return_inputs": return_inputs,
                                             "inputs": v}, f)
        out = self.hold(ov["outputs"], ofd)
        return out, ov

    def untimed_call_wrong(self, inputs, ref_out, slot, where):
        """One plain call of the kernel on ``inputs`` (a fresh ``slot``, no timing, like a correctness
        trial) compared with the reference's ``ref_out``: the comparison, or None where the call
        fails short of a fatal error (nothing is concluded from it then)."""
        try:
            with self.device("shared", f"{where}: one untimed call"):
                out, _meta = self.candidate_forward(inputs, slot)
        except StageFailure as f:
            if f.fatal:
                raise
            return None
        try:
            return self.compare_checked(ref_out, out, where)
        finally:
            self.release(out)

    def fails_outside_timing(self, what, cmp, seen):
        """A kernel wrong on an input while timed (``seen``) and as wrong on one untimed call on it
        (``cmp``): nothing depends on timing, the kernel fails on that input; the run's correctness
        fails with the input said (no hack class: issue 26)."""
        why = f"{what}, called once outside any timing, is answered wrong: {cmp['reason']}"
        corr = self.result.get("correctness")
        if isinstance(corr, dict):
            if corr.get("passed") is not False:  # the first failure is the one said
                corr["mismatch"] = why
            corr["passed"] = False
            corr.setdefault("outside_trials", []).append({"input": what, "passed": False, "reason": cmp["reason"],
                                                          "max_abs_error": cmp.get("max_abs_error")})
        self.result["notes"].append(f"{why}; while timed it is wrong on it as well ({seen}): the kernel fails on "
                                    "that input whether timed or not, a correctness failure, not a difference when "
                                    "timed")

    def _correctness(self, seed):
        import torch

        job = self.job
        n = int(job.correctness_trials)
        gen = torch.Generator().manual_seed(seed)
        seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=gen)) for _ in range(n)]
        held = int(job.held_out_seed or 0) or held_out_seed(seed, seeds)
        res = {"passed": False, "trials": n, "trials_passed": 0, "seeds": seeds, "held_out": None,
               "max_abs_error": 0.0, "mean_abs_error": 0.0, "max_rel_error": 0.0, "mean_rel_error": 0.0,
               "atol": None, "rtol": None, "dtype": None, "mismatch": None, "failed_trial": None}
        means_abs, means_rel = [], []
        self.types_seen = []

        def one(i, s, label):
            self.trial(i, n, label)
            with self.device("shared", f"correctness {label} {i}"):  # the comparison below needs no device
                inputs, ref_out = self.reference_io(s, f"c{i}")
                out, meta = self.candidate_forward(inputs, f"c{i}")
            self.types_seen.append({k: v for k, v in meta.items() if k not in ("outputs", "inputs_after")})
            self.input_dtype = input_precision(inputs.decoded())
            try:
                return self.compare_checked(ref_out, out, f"trial {i}", self.input_dtype)
            finally:
                self.release(inputs, out)

        for i, s in enumerate(seeds, 1):
            cmp = one(i, s, "trial")
            for k in ("max_abs_error", "max_rel_error"):
                res[k] = max(res[k], cmp[k])
            means_abs.append(cmp["mean_abs_error"])
            means_rel.append(cmp["mean_rel_error"])
            res["atol"], res["rtol"], res["dtype"] = cmp["atol"], cmp["rtol"], cmp["dtype"]
            res["input_dtype"] = cmp.get("input_dtype")
            if cmp["passed"]:
                res["trials_passed"] += 1
            elif res["mismatch"] is None:
                res["mismatch"] = cmp["reason"]
                res["failed_trial"] = i
        if means_abs:
            res["mean_abs_error"] = round_(sum(means_abs) / len(means_abs), 9)
            res["mean_rel_error"] = round_(sum(means_rel) / len(means_rel), 9)
        res["passed"] = res["trials_passed"] == n
        if res["passed"]:
            cmp = one(n + 1, held, "held-out")
            res["held_out"] = {"seed": held, "passed": cmp["passed"], "reason": cmp["reason"],
                               "max_abs_error": cmp["max_abs_error"]}
            if not cmp["passed"]:
                res["passed"] = False
                res["mismatch"] = f"held-out trial (seed {held}) failed: {cmp['reason']}"
                res["failed_trial"] = n + 1
        return res

    def compare_checked(self, ref_out, out, where, input_dtype=None):
        """The judge's comparison of one candidate output with the reference's, after checks of
        what the workers sent: a candidate output far larger than the reference's is a mismatch
        without being read; a reference whose outputs are all NaN/inf is reported as such (no
        kernel passes against it), a partly non-finite one is said in a note."""
        rb, cb = value_nbytes(ref_out.value), value_nbytes(out.value)
        if cb > max(2 * rb, rb + (1 << 20)):
            return {"passed": False, "reason": f"the kernel's output is {cb} bytes, the reference's {rb} (not read)",
                    "max_abs_error": 0.0, "max_rel_error": 0.0, "mean_abs_error": 0.0, "mean_rel_error": 0.0,
                    "atol": None, "rtol": None, "dtype": None}
        try:
            ref = ref_out.decoded()
        except protocol.ProtocolError as exc:
            raise StageFailure(self.stage_name, "reference_error", f"the reference's worker sent an output that is "
                               f"not a tensor ktui can read ({exc})", trial=self.cur_trial, fatal=True) from None
        frac = nonfinite_fraction(ref)
        if frac is not None and frac >= 1.0:
            raise StageFailure(self.stage_name, "reference_error",
                               f"the reference returned only NaN/inf ({where}): there is nothing to compare a kernel "
                               "against", trial=self.cur_trial, fatal=True)
        if frac and not getattr(self, "_nan_noted", False):
            self._nan_noted = True
            self.result["notes"].append(f"the reference returned NaN/inf for {100 * frac:.1f} % of its output "
                                        f"elements ({where}): a kernel matches there only with the same non-finite values")
        if time.monotonic() > self.deadline:
            raise Timeout()
        try:
            new = out.decoded()
        except protocol.ProtocolError as exc:  # a pipe, a writable memfd, a size that lies: the kernel's process
            self.cand.kill()
            raise StageFailure(self.stage_name, "protocol_error", f"worker protocol error: the kernel's worker sent an "
                               f"output that is not a sealed tensor ({exc}); the worker was ended",
                               trial=self.cur_trial, fatal=True) from None
        return self.judged_compare(ref, new, input_dtype=input_dtype)

    def judged_compare(self, ref, out, atol=None, rtol=None, input_dtype=None, cosine=None):
        """The judge's one comparison rule, for correctness, the wall-clock cross-check and every
        probe: the tolerance of the outputs' dtype, or of the inputs' precision when that is coarser
        (the trials' inputs), and the task's cosine metric where it has one. Explicit tolerances
        (an exact-sameness check: atol=rtol=0) are used as given, without the cosine metric. (The
        probes judged with the fp32 tolerance alone: fp16 tasks' honest kernels were "wrong while
        timed" at 1e-4 after passing correctness at 1e-2, on a real Harbor sweep.)"""
        explicit = atol is not None or rtol is not None
        if input_dtype is None:
            input_dtype = getattr(self, "input_dtype", None)
        if cosine is None and not explicit:
            cosine = getattr(self, "cosine", None)
        t0 = time.time()
        try:
            floor = None if explicit else getattr(self, "task_tol", None)
            return compare_outputs(ref, out, atol=atol, rtol=rtol, input_dtype=input_dtype, cosine=cosine, floor=floor)
        finally:
            spans = getattr(self, "compare_spans", None)
            if spans is not None and len(spans) < 5000:
                spans.append((t0, time.time()))
