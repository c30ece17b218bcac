# ---- ktui repro harness: who may use the device, and when ----------------------------------------
# One lock file per device (a GPU by its nvidia-smi index; the CPU, where the CPU is the device), held
# by the judge in two modes:
#
#   "alone"   the device's timing-sensitive windows: the timing stage (both sides' timers, ktui's
#             clock), the timer floor, the probes that measure time. Nothing else of any ktui judge
#             runs on the device meanwhile (flock LOCK_EX).
#   "shared"  device work whose result does not depend on being alone (correctness forwards, the
#             probes that compare outputs, memory and launch counts): any number at once, never
#             during an "alone" window (flock LOCK_SH).
#
# Work that needs no device (the judge's comparisons, static findings, cache writes) holds neither,
# so kernel k+1's workers start, load their extension and receive their inputs while kernel k is
# timed. Every window is recorded (kind, what, start, end, wait) in the result: the pipeline's tests
# and the benchmark read them. Stdlib only. MIT license, part of ktui.
import contextlib
import fcntl
import os
import time

from .errors import now, round_

ALONE, SHARED, NONE = "alone", "shared", "none"


def lock_name(device_str):
    """The lock file's name for a torch device string ("cuda:0" -> gpu-<physical index>, "cpu" -> cpu)."""
    if str(device_str or "").startswith("cuda"):
        from .gpu import physical_index

        return f"gpu-{physical_index(device_str)}"
    return "cpu"


class DeviceWindows:
    """The judge's windows on one device. ``window(kind, what)`` is a context manager; windows do not
    nest (an inner one of the same or a weaker kind is a no-op; an "alone" one inside a "shared" one
    gives the shared one up first: flock cannot upgrade atomically, and a judge waiting to upgrade
    while another waits too would deadlock)."""

    def __init__(self, lock_dir, device_str, cancel=None, on_wait=None, max_wait_s=None):
        self.path = os.path.join(lock_dir, lock_name(device_str) + ".lock")
        self.cancel = cancel
        self.on_wait = on_wait
        self.max_wait_s = max_wait_s  # a wait longer than this is a Timeout (None: no limit)
        self.fd = self.intent_fd = None
        self.mode = None  # the mode held now
        self.records = []  # {"kind", "what", "start", "end", "waited_s"} (time.time())
        self.waited_s = 0.0
        self.last_wait_s = 0.0

    def _wait(self, fd, op, kind, t0):
        """flock ``op`` on ``fd``, polling (cancel, deadline); True, or None (cancelled) / False (late)."""
        told = False
        while True:
            try:
                fcntl.flock(fd, op | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if not told and self.on_wait is not None:
                    told = True
                    try:
                        self.on_wait(kind)
                    except Exception:  # noqa: BLE001 - a progress callback never stops the judge
                        pass
                if self.cancel is not None and self.cancel.is_set():
                    return None
                if self.max_wait_s is not None and time.monotonic() - t0 > self.max_wait_s:
                    return False
                time.sleep(0.02)

    def _acquire(self, kind):
        """Writer first: a judge waiting to be alone holds the intent lock, so no new shared window
        starts meanwhile (else judges that hold the device shared in turn would starve it)."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            self.intent_fd = os.open(self.path + ".intent", os.O_RDWR | os.O_CREAT, 0o666)
        t0 = time.monotonic()
        got = self._wait(self.intent_fd, fcntl.LOCK_EX if kind == ALONE else fcntl.LOCK_SH, kind, t0)
        if got is not True:
            return None if got is None else False
        try:
            got = self._wait(self.fd, fcntl.LOCK_EX if kind == ALONE else fcntl.LOCK_SH, kind, t0)
        finally:
            fcntl.flock(self.intent_fd, fcntl.LOCK_UN)
        if got is not True:
            return None if got is None else False
        waited = time.monotonic() - t0
        self.waited_s += waited
        self.last_wait_s = waited
        self.mode = kind
        if kind == ALONE:
            try:
                os.ftruncate(self.fd, 0)
                os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
            except OSError:
                pass
        return waited

    def _release(self):
        if self.fd is not None and self.mode is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            except OSError:
                pass
        self.mode = None

    @contextlib.contextmanager
    def window(self, kind, what, after=None):
        """Hold the device in ``kind`` ("alone", "shared"; "none" holds nothing) for ``what``.
        Raises :class:`Cancelled` / :class:`Timeout` (from workers.py) when the wait is cut short.
        ``after()`` runs once the window is given up and before anything else is waited for (the
        outer shared hold taken again): host work that must not wait for another judge's window
        (the reference-timing cache's write, whose lock another judge may be waiting on in its own)."""
        if kind == NONE or self.mode == ALONE or (self.mode == SHARED and kind == SHARED):
            try:
                yield self
            finally:
                if after is not None:
                    after()
            return
        outer = self.mode
        if outer == SHARED:  # upgrading: give the shared hold up, then wait to be alone
            self._release()
        waited = self._acquire(kind)
        if waited is None or waited is False:
            from .workers import Cancelled, Timeout

            if outer == SHARED:
                self._acquire(SHARED)
            raise Cancelled() if waited is None else Timeout()
        rec = {"kind": kind, "what": what, "start": round_(time.time(), 4), "waited_s": round_(waited, 4)}
        t0 = now()
        try:
            yield self
        finally:
            self._release()
            rec["end"] = round_(rec["start"] + (now() - t0), 4)
            self.records.append(rec)
            try:
                if after is not None:
                    after()
            finally:
                if outer == SHARED:
                    self._acquire(SHARED)

    def close(self):
        self._release()
        if self.fd is not None:
            os.close(self.fd)
            os.close(self.intent_fd)
            self.fd = None


def busy_seconds(records, kind=ALONE):
    """Seconds covered by the windows of ``kind`` (their union)."""
    spans = sorted((r["start"], r["end"]) for r in records if r.get("kind") == kind and r.get("end") is not None)
    total, cur = 0.0, None
    for a, b in spans:
        if cur is None or a > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur is not None:
        total += cur[1] - cur[0]
    return total
