# ---- ktui repro harness: the reference's timing, measured once per problem and device ---------------
# A sweep judges many kernels of one problem on the same secret inputs (refcache.py). Timing the
# reference is the same work for every one of them: its own timer, ktui's clock on the timed inputs,
# the interleaved pass over the correctness trials' inputs, the round-trip noise and any re-measurement
# a disagreement asks for. The first judge of a problem records every one of those measurements (a
# "tape"); the next judges replay the tape instead of timing the reference again, as long as
# everything the measurements depend on is the same: the reference source, the seeds and the digests
# of the very inputs it was timed on, the device's description (GPU UUID, driver, maximum and
# application clocks, power limits, torch and CUDA; on the CPU its model, the CPUs this process may
# use, the reference worker's thread count), the timing settings and the timing code itself.
#
# Inside the judge's trust boundary: the entries live in the reference cache's root, which every
# worker has masked; only the judge reads and writes them. The judge's decisions on the reference
# side (a re-measurement when its own timer and ktui's clock disagree, the interleaved confirmation)
# depend on reference measurements and settings only, so a replay takes the same path; a replay
# that stops matching (another method forced by the kernel, a changed path) goes on live, stops the
# candidate as a live reference timing does, and is not stored. MIT license, part of ktui.
import hashlib
import os
import platform
import time

from .errors import round_, sha1_text
from .refcache import ReferenceTimingCache

# the code a reference timing depends on: a change in any of these measures again
TIMING_CODE = ("clockcheck.py", "checkedpass.py", "timing.py", "defaults.py", "reftime.py", "refcache.py",
               "roles.py", "slots.py")
LOCK_WAIT_S = 120.0  # how long a judge waits for another judge timing the same reference now
_code_digest = None


def timing_code_digest():
    global _code_digest
    if _code_digest is None:
        h = hashlib.sha1()
        here = os.path.dirname(os.path.abspath(__file__))
        for name in TIMING_CODE:
            try:
                with open(os.path.join(here, name), "rb") as fh:
                    h.update(name.encode() + b"\0" + fh.read())
            except OSError:
                h.update(name.encode() + b"\0?")
        _code_digest = h.hexdigest()
    return _code_digest


def _read(path, limit=200):
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(limit).strip() or None
    except OSError:
        return None


def cpu_state():
    """The CPU a host-clock timing depends on: its model, how many CPUs there are and this process
    may use, the frequency governor and maximum frequency (when the system says)."""
    model = None
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for ln in fh:
                if ln.startswith(("model name", "Model", "cpu model")):
                    model = ln.split(":", 1)[1].strip()[:120]
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    base = "/sys/devices/system/cpu/cpu0/cpufreq/"
    return {"model": model or platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "affinity": affinity, "governor": _read(base + "scaling_governor"),
            "max_khz": _read(base + "scaling_max_freq") or _read(base + "cpuinfo_max_freq")}


def age_text(seconds):
    s = max(0.0, float(seconds))
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


class _Tape:
    def __init__(self):
        self.cache = None  # ReferenceTimingCache, None: no shared seed (nothing to reuse)
        self.replay = None  # the cached records being replayed
        self.pos = 0
        self.live = True  # measuring the reference now
        self.recorded = []
        self.broken = None  # why a replay went live
        self.measured_at = None
        self.why = None  # why there is no cache for this judge


class RefTimingStages:
    """The reference side of the timing stage, measured or replayed; mixed into the judge."""

    _rt = None
    _stop_for = None
    _stopped = None

    def _rt_replaying(self):
        return self._rt is not None and not self._rt.live

    def _device_description(self):
        env = getattr(self.ref, "setup_env", None) or self.result.get("environment") or {}
        keys = ("python", "torch", "cuda", "gpu", "gpu_memory_gib", "sm_count", "driver", "arch", "cpu", "threads",
                "platform")
        d = {"device": str(self.device_str), "host": platform.node(), "env": {k: env.get(k) for k in keys},
             "sandbox": (self.result.get("sandbox") or {}).get("reference")}
        if str(self.device_str).startswith("cuda"):
            from .gpu import static_state

            d["gpu"] = static_state(self.device_str)
        else:
            d["cpu"] = cpu_state()
        return d

    def _rt_parts(self):
        """The key of this judge's reference timing, or None (with the reason in ``_rt.why``)."""
        job = self.job
        if getattr(self, "refcache", None) is None or not job.ref_cache:
            self._rt.why = "no shared input seed (each kernel its own inputs)"
            return None
        n = int(job.correctness_trials)
        slots = ["t"] + [f"c{i}" for i in range(1, n + 1)]
        digests = getattr(self, "_ref_digests", None) or {}
        if any(s not in digests for s in slots):
            self._rt.why = "the inputs' digests are not known"
            return None
        return {"reference": sha1_text(job.reference_source), "seeds": [int(self.input_seed), int(job.seed)],
                "inputs": [digests[s] for s in slots], "device": self._device_description(),
                "settings": {"method": job.method, "trials": int(job.trials), "warmup": int(job.warmup),
                             "correctness_trials": n, "target_rse": float(job.target_rse),
                             "time_cap_s": float(job.time_cap_s), "adaptive": bool(job.adaptive),
                             "device_kind": self.device_kind},
                "code": timing_code_digest()}

    def _rt_prepare(self):
        """Before the timing window (host work: the device's description asks nvidia-smi): the
        entry's key, or no cache for this judge."""
        self._rt = tape = _Tape()
        parts = self._rt_parts()
        if parts is not None:
            tape.cache = ReferenceTimingCache(self.job.ref_cache, parts)

    def _rt_open(self):
        """At the start of the timing window: replay an entry (waiting for a judge measuring this
        reference now), or measure live and record."""
        if self._rt is None:
            self._rt_prepare()
        tape = self._rt
        cache = tape.cache
        if cache is None:
            return
        entry = cache.load()
        if entry is None:
            cache.lock(LOCK_WAIT_S, on_wait=lambda: self.trial(None, None, "waiting for another judge's reference timing"))
            entry = cache.load()
        if entry is not None:
            cache.unlock()
            tape.replay, tape.live, tape.measured_at = entry["records"], False, float(entry["measured_at"])

    def _rt_op(self, sig, live, encode, decode):
        tape = self._rt
        if tape is None:
            return live()
        if not tape.live:
            if tape.pos < len(tape.replay) and tape.replay[tape.pos]["sig"] == sig:
                rec = tape.replay[tape.pos]
                tape.pos += 1
                return decode(rec["value"])
            tape.live = True
            tape.broken = f"the cached measurements stopped matching at measurement {tape.pos + 1} ({sig[0]} {sig[1]})"
        if self._stop_for is not None and self._stopped is None:
            self._stop_candidate()  # a live reference measurement: the candidate stopped, as always
        value = live()
        if tape.cache is not None and tape.replay is None:
            tape.recorded.append({"sig": sig, "value": encode(value)})
        return value

    # ---- the three reference measurements -----------------------------------------------------
    def _ref_time(self, label, cap_s=None, method=None):
        sig = ["time", label, method or self.job.method, cap_s]

        def enc(v):
            data, samples = v
            return {"data": {"batches": int(data.get("batches") or 0), "stopped": str(data.get("stopped")),
                             "method_used": data.get("method_used")}, "samples": list(samples)}

        return self._rt_op(sig, lambda: self._time_side(self.ref, label, cap_s=cap_s, method=method), enc,
                           lambda v: (dict(v["data"]), [float(x) for x in v["samples"]]))

    def _ref_wall(self, slots, label):
        sig = ["wall", label, list(slots)]

        def dec(v):
            self.wall_raw_us, self.wall_unsure_us = float(v["raw"]), float(v["unsure"])
            return [float(x) for x in v["per"]], int(v["forwards"]), None

        return self._rt_op(sig, lambda: self._wall(self.ref, slots, label),
                           lambda v: {"per": list(v[0]), "forwards": int(v[1]), "raw": float(self.wall_raw_us),
                                      "unsure": float(self.wall_unsure_us)}, dec)

    def _ref_noise(self):
        return self._rt_op(["noise", "reference"], lambda: self._noise_us(self.ref), lambda v: {"us": float(v)},
                           lambda v: float(v["us"]))

    def _side_time(self, side, label, cap_s=None, method=None):
        if side == "reference":
            return self._ref_time(label, cap_s=cap_s, method=method)
        return self._time_side(self.cand, label, cap_s=cap_s, method=method)

    def _side_wall(self, side, slots, label):
        if side == "reference":
            return self._ref_wall(slots, label)
        return self._wall(self.cand, slots, label)

    # ---- after the window -------------------------------------------------------------------------
    def _rt_finish(self, timing, ok):
        """Outside the timing window: say where the reference's time came from; store a complete
        live recording for the next kernel of the problem; let go of the entry's lock."""
        tape = self._rt
        if tape is None or getattr(tape, "finished", False):
            return
        tape.finished = True
        try:
            rec = {"source": "measured"}
            if tape.cache is not None:
                rec["key"] = tape.cache.key[:16]
            if tape.replay is not None and not tape.broken:
                age = time.time() - tape.measured_at
                rec.update(source="cache", measured_at=round_(tape.measured_at, 3), age_s=round_(age, 1),
                           replayed=tape.pos, of=len(tape.replay))
                ref = (timing.get("reference") or {}).get("mean_us")
                self.result["notes"].append(
                    "the reference was not timed again: its time" + (f" ({ref:.2f} μs)" if ref else "")
                    + f" is the one measured {age_text(age)} ago on this device for another kernel of this problem "
                    "(same inputs, settings and device state; the judge's reference-timing cache)")
            elif tape.broken:
                rec["why_not_cached"] = tape.broken
            elif tape.cache is None:
                rec["why_not_cached"] = tape.why
            else:
                if tape.cache.why_not:
                    rec["why_not_cached"] = tape.cache.why_not
                if ok and tape.recorded:
                    at = tape.cache.store(tape.recorded, {"kernel_sha1": self.job.kernel_sha1,
                                                          "mean_us": (timing.get("reference") or {}).get("mean_us")})
                    rec["stored"] = at is not None
            timing["reference_timing"] = rec
        finally:
            if tape.cache is not None:
                tape.cache.unlock()
