# ---- ktui repro harness: what a judge-side probe sees ------------------------------------------------
# MIT license, part of ktui.
from . import protocol, shm
from .errors import StageFailure, one_line


class ProbeContext:
    """What judge-side probes (ktui.engine.probes) can use: the two workers, the held values and
    the judge's comparison; they add `checks` and `findings` to the result."""

    def __init__(self, judge):
        self.judge = judge
        self.job = judge.job
        self.result = judge.result
        self.reference = judge.ref
        self.candidate = judge.cand
        self.compare = judge.judged_compare  # the judge's rule (tolerance by input precision, cosine)
        self.input_seed = judge.input_seed  # probes draw their inputs from it (never from job.seed)

    def alone(self, what):
        """A window with the device alone (devicelock.py) around calls whose time a probe measures."""
        return self.judge.device("alone", f"probe {what}")

    def trial(self, i, n, what):
        self.judge.trial(i, n, what)

    def reference_io(self, seed, slot, outputs=True):
        return self.judge.reference_io(seed, slot, outputs=outputs)

    def candidate_inputs(self, seed, slot, outputs=True):
        """Reference inputs (and outputs) for ``seed``, held by the judge and also put into the
        candidate worker's ``slot`` for a probe to run on. Returns (inputs, reference outputs);
        without ``outputs`` the reference computes nothing and the second item is None."""
        inputs, ref = self.judge.reference_io(seed, slot, outputs=outputs)
        v, f = inputs.send_args()
        self.candidate.call("put_inputs", {"slot": slot, "inputs": v}, f)
        return inputs, ref

    def candidate_forward(self, inputs, slot, return_inputs=False):
        return self.judge.candidate_forward(inputs, slot, return_inputs)

    def reference_probe(self, name, args, check, failing):
        """The reply (data, fds) of the reference worker's probe ``name``; None when the reference
        cannot run it (not fatal), after recording check ``check`` as not judged: ``failing``
        says why, followed by the reference's error."""
        try:
            return self.reference.call("probe", {"name": name, "args": args})
        except StageFailure as f:
            if f.fatal:
                raise
            self.add_check(check, None, f"{failing} ({one_line(f.message, 100)})")
            return None

    def hold(self, value, fds):
        """Hold a value tree a probe reply carried. Probe data is free-form, so its tensors and
        values are validated here (a descriptor naming a missing memfd, a bad dtype...): a
        malformed one ends the run as a protocol error, never a harness error."""
        try:
            protocol.check_value(value, len(fds), "probe data")
        except protocol.ProtocolError as exc:
            shm.close_fds(fds)
            raise StageFailure("checks", "protocol_error", f"worker protocol error in a probe's reply: {exc}",
                               trial=self.judge.cur_trial, fatal=True) from None
        return self.judge.hold(value, fds)

    def add_check(self, name, ok, detail):
        self.result["checks"].append({"name": name, "ok": ok, "detail": detail})

    def add_finding(self, cls, reason, evidence=None):
        self.result["findings"].append({"class": cls, "reason": reason, "evidence": evidence})
