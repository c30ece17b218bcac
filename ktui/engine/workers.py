# ---- ktui repro harness: the judge's handle on a sandboxed worker process ---------------------------
# A request/reply channel to one worker (protocol.py), the failure kind the judge gives what the
# worker reports (its word is a claim once trace code ran in it), and the values the judge holds
# (sealed memfds). MIT license, part of ktui.
import fcntl
import os
import re
import select
import tempfile
import time

from . import protocol, sandbox, shm
from .build import needs_cuda  # noqa: F401  (the one rule; pipeline.py takes it from here)
from .errors import StageFailure
from .oslib import remove_tree

SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault", "SIGBUS": "bus error", "SIGFPE": "arithmetic error",
    "SIGILL": "illegal instruction", "SIGABRT": "aborted", "SIGKILL": "killed",
    "SIGTERM": "terminated", "SIGTRAP": "trap",
}
KILLED_FROM_OUTSIDE = "killed"  # failure kind: SIGKILL by someone else / host OOM (never cached)
#: the requests that load trace code into a worker (the kernel, the reference)
TRACE_CODE_OPS = {"build", "load_reference"}
#: failure kinds the judge takes from the candidate's process (all of them the kernel's own)
CANDIDATE_KINDS = {"runtime_error", "import_error", "compile_error", "cuda_error", "oom", "exit", "no_model"}
#: failure kinds whose message is the judge's own words (or, for reference_error, the reference's): every
#: other failure once the kernel's code ran is in the kernel's words (pipeline.Judge.whose_words)
JUDGE_WORD_KINDS = {"timeout", "cancelled", "environment", "unsupported", "harness_error", "worker_error",
                    "no_reference", "no_code", "reference_error", "method_unsupported"}



_IMPORTS_REFERENCE = re.compile(r"^\s*(?:from\s+reference\s+import\b|import\s+reference\b)", re.M)
_REFERENCE_ON_CUDA = re.compile(r"""\.cuda\(|device\s*=\s*['"]cuda|torch\.device\(\s*['"]cuda""")
_TRITON = re.compile(r"@\s*triton\.(?:jit|autotune)|^\s*(?:import|from)\s+triton\b", re.M)

def value_nbytes(v):
    """Bytes of the tensors a received value tree names (its descriptors, not decoded)."""
    if isinstance(v, list):
        return sum(value_nbytes(x) for x in v)
    if isinstance(v, dict):
        if "__tensor__" in v:
            return int(v.get("nbytes") or 0)
        return sum(value_nbytes(x) for x in v.values())
    return 0


def nonfinite_fraction(value):
    """Share of the floating-point elements of a decoded output that are NaN or infinite (None
    when it has none)."""
    import torch

    from .compare import flatten

    total = bad = 0
    for t in flatten(value):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) and t.numel():
            total += t.numel()
            bad += int((~torch.isfinite(t)).sum())
    return None if total == 0 else bad / total


class Cancelled(Exception):
    pass


class Timeout(Exception):
    pass


class Worker:
    """The judge's handle on one sandboxed worker process."""

    def __init__(self, judge, role, rw=(), binds=()):
        self.judge = judge
        self.role = role
        self.dir = tempfile.mkdtemp(prefix=f"ktui-{role}-", dir=judge.tmp_root)
        self.sock, child = protocol.socketpair()
        job = judge.job
        prefix = job.prefix if (role == "candidate" and job.prefix) else ()
        argv = list(job.worker_argv) + ["--role", role, "--fd", str(child.fileno())]
        spec = sandbox.Spec(self.dir, rw=rw, binds=binds, mask=judge.masks, device=judge.device_kind,
                            python_path=job.python_path, memory_limit=job.memory_limit, argv=list(prefix) + argv,
                            **({"output_cap": int(job.output_cap)} if job.output_cap else {}))
        try:
            self.proc = sandbox.Launched(spec, argv, pass_fds=[child.fileno()], prefix=prefix, channel=self.sock)
        finally:
            child.close()
        self.seq = 0
        self.ops = {}  # requests sent, per op
        self.op_seconds = {}  # wall seconds from each request sent to its reply, per op (where time went)
        self.setup_env = None
        self.report = {}
        self.closed = False
        self.trace_code_loaded = False  # from here on, what this process says is a claim

    @property
    def pid(self):
        return self.proc.proc.pid

    def main_pid(self):
        """The host pid of the worker's Python process (below unshare when namespaced)."""
        if getattr(self, "_main_pid", None) is None:
            pids = self.proc.tree()
            self._main_pid = pids[1] if self.proc.namespaces and len(pids) > 1 else pids[0]
        return self._main_pid

    def runqueue_wait_ns(self):
        """Nanoseconds the worker's main thread spent runnable but waiting for a CPU
        (/proc/PID/schedstat, kept by the kernel: trace code cannot change it); None if unknown."""
        try:
            with open(f"/proc/{self.main_pid()}/schedstat") as fh:
                return int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def thread_waits_ns(self):
        """Nanoseconds all threads of the worker's main process spent runnable but waiting for a
        CPU (summed; a thread that ended is not counted); None if unknown. Waits of threads other
        than the main one are not subtracted from a pass (two threads may wait at once): they are
        the pass's uncertainty (torch's intra-op threads waiting for a CPU while the main thread
        spins at their barrier made an honest op look 100x slower on a loaded host)."""
        base = f"/proc/{self.main_pid()}/task"
        try:
            tids = os.listdir(base)[:4096]
        except OSError:
            return None
        total = 0
        for tid in tids:
            try:
                with open(f"{base}/{tid}/schedstat") as fh:
                    total += int(fh.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended in between
        return total

    def call(self, op, args=None, fds=(), timeout=None, poll=0.1):
        """Send one request; wait for its reply (progress on the way). Returns (data, fds).
        ``poll``: how often the wait wakes up to check the cancel flag, the deadline and the
        worker's health (the wall-clock runs wake up less: see :meth:`Pipeline._wall`)."""
        t0 = time.monotonic()
        try:
            return self._call(op, args, fds, timeout, poll)
        finally:
            self.op_seconds[op] = self.op_seconds.get(op, 0.0) + (time.monotonic() - t0)

    def _call(self, op, args, fds, timeout, poll):
        j = self.judge
        self.seq += 1
        self.ops[op] = self.ops.get(op, 0) + 1
        if op in TRACE_CODE_OPS:
            self.trace_code_loaded = True
        try:
            protocol.send(self.sock, {"id": self.seq, "op": op, "args": args or {}}, fds)
        except (BrokenPipeError, ConnectionResetError, OSError):
            raise self._death() from None
        deadline = j.deadline if timeout is None else min(j.deadline, time.monotonic() + timeout)
        while True:
            if j.cancel is not None and j.cancel.is_set():
                self.kill()
                raise Cancelled()
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise Timeout()
            if self.proc.limit_hit is not None or not self.proc.alive():
                # drain what it sent before it went (a last reply may be waiting)
                r, _, _ = select.select([self.sock], [], [], 0)
                if not r:
                    raise self._death()
            else:
                r, _, _ = select.select([self.sock], [], [], min(poll, left))
                if not r:
                    continue
            try:
                msg, rfds = protocol.recv(self.sock)
            except protocol.ChannelClosed:
                raise self._death() from None
            except protocol.ProtocolError as exc:
                raise self._protocol_error(exc) from None
            except OSError:
                raise self._death() from None
            try:
                kind, payload = protocol.check_reply(op, msg, len(rfds))
                if msg["id"] != self.seq:
                    raise protocol.ProtocolError(f"reply to request {msg['id']}, expected {self.seq}")
                unsealed(rfds)
            except protocol.ProtocolError as exc:
                shm.close_fds(rfds)
                raise self._protocol_error(exc) from None
            if kind == "progress":
                shm.close_fds(rfds)
                j.trial(payload.get("trial"), payload.get("of"), payload.get("what"))
                continue
            if kind == "error":
                shm.close_fds(rfds)
                trial = payload.get("trial") or j.cur_trial
                kind_, message = self.judged_kind(op, payload["kind"], payload["message"])
                raise StageFailure(j.stage_name or "startup", kind_, message, trial=trial,
                                   fatal=payload["fatal"], detail=payload.get("detail"),
                                   words=self.words())
            return payload, rfds

    def words(self):
        """Who wrote what this worker says: ktui (None) until trace code ran in it, then its role's
        code ("kernel" / "reference")."""
        if not self.trace_code_loaded:
            return None
        return "reference" if self.role == "reference" else "kernel"

    def judged_kind(self, op, kind, message):
        """The failure kind the judge gives an error a worker reported: the worker's word is a
        claim once trace code has run in it. The reference's failures are the reference's
        (reference_error, whatever it said); the candidate's are the kernel's: a kind that would
        say "not the kernel's fault" (reference_error, harness_error, worker_error, environment,
        no_reference, protocol...) is not taken from the process that ran the kernel, and
        "unsupported" only where the judge sees CUDA code itself on a CPU-only run."""
        j = self.judge
        if not self.trace_code_loaded:
            return kind, message
        if self.role == "reference":
            if kind == "unsupported" and j.device_kind == "cpu" and _REFERENCE_ON_CUDA.search(
                    getattr(j.job, "reference_source", None) or ""):
                # the reference makes its tensors on a GPU (the judge reads that in its source):
                # not judged on this CPU-only machine, never the reference's or the kernel's failure
                return kind, message
            if kind != "reference_error":
                message = f"the reference failed ({kind}): {message}"
            return "reference_error", message
        if kind in CANDIDATE_KINDS:
            return kind, message
        if kind == "unsupported" and op == "build" and j.device_kind == "cpu" and needs_cuda(j.job.kernel_code):
            return kind, message
        if kind == "method_unsupported" and op == "time" and j.device_kind != "cpu" and \
                getattr(j.job, "method", None) == "cuda_graph":
            # the one timing method a kernel can be unfit for (graph capture): a claim the judge
            # checks by timing it anyway without the graph (Pipeline._timing); the host clock and
            # CUDA events have no such failure, so there the kind is the kernel's own failure
            return kind, message
        return "runtime_error", (f"the kernel's process reported a failure of kind {kind!r}, which only the judge "
                                 f"assigns: counted as the kernel's own failure: {message}")

    def _protocol_error(self, exc):
        """A reply the judge refuses: the sender's failure (the reference's is a reference error: a
        reference that sent unsealed tensors made the candidate that received them fail, and the
        candidate was blamed)."""
        self.kill()
        j = self.judge
        kind = "reference_error" if self.role == "reference" and self.trace_code_loaded else "protocol_error"
        return StageFailure(j.stage_name or "startup", kind,
                            f"worker protocol error: {exc} (the {self.role} worker was ended)",
                            trial=j.cur_trial, fatal=True, words=self.words())

    def _death(self):
        j = self.judge
        lim = self.proc.limit_hit
        try:
            rc = self.proc.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - still running: end it
            self.kill()
            rc = self.proc.proc.poll()
        self.kill()
        self.proc.drain(2.0)  # what it printed last is read before its words are (a loaded host)
        where = j.describe_position()
        if lim is not None:
            # a breach is about the process that breached: the reference's is a reference error
            # (but the host's shortage no process holds is no one's: not judged here)
            kind = lim[0] if self.role == "candidate" or lim[0] == "environment" else "reference_error"
            return StageFailure(j.stage_name or "startup", kind, f"the {self.role} {lim[1]} {where} (worker ended)",
                                trial=j.cur_trial, fatal=True)
        who = "reference" if self.role == "reference" else (
            "kernel" if j.stage_name not in (None, "startup") else "worker")
        tail = self.proc.tail()
        if self.proc.namespaces and rc == 1 and "sigprocmask unblock failed" in tail[-400:]:
            rc = -9  # unshare(1) cannot re-raise a SIGKILL that ended its child: it says so, exits 1
        if not self.trace_code_loaded and ("No module named 'ktui" in tail or "No module named ktui" in tail):
            # ktui's own start failed (PYTHONPATH); once trace code ran, its stderr is the kernel's to
            # print: a kernel that printed these words and exited was a "harness error"
            return StageFailure(j.stage_name or "startup", "worker_error",
                                "the worker could not import ktui (PYTHONPATH?)", fatal=True)
        if rc is not None and rc < 0:
            import signal

            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            if name == "SIGKILL":
                return StageFailure(j.stage_name or "startup", KILLED_FROM_OUTSIDE,
                                    f"worker killed by SIGKILL {where} (by another process, or the host ran "
                                    "out of memory): not the kernel's result, not cached", trial=j.cur_trial,
                                    fatal=True)
            kind = "crash" if self.role == "candidate" else "reference_error"
            return StageFailure(j.stage_name or "startup", kind,
                                f"{who} crashed: {name} ({SIGNAL_WORDS.get(name, name)}) {where}",
                                trial=j.cur_trial, fatal=True)
        if rc is None:
            msg = f"the {self.role} worker closed the protocol channel {where}"
        else:
            msg = (f"worker exited with status {rc} {where} without a result (os._exit() or a fatal error "
                   f"in the {who} code)")
        return StageFailure(j.stage_name or "startup", "exit" if self.role == "candidate" else "reference_error",
                            msg, trial=j.cur_trial, fatal=True)

    def kill(self):
        self.proc.kill()

    def close(self, polite=True):
        if self.closed:
            return
        self.closed = True
        if polite and self.proc.alive():
            try:
                protocol.send(self.sock, {"id": self.seq + 1, "op": "bye", "args": {}})
                self.proc.proc.wait(timeout=2)
            except Exception:  # noqa: BLE001 - it is killed below either way
                pass
        self.proc.close()
        try:
            self.sock.close()
        except OSError:
            pass
        remove_tree(self.dir)


def unsealed(fds):
    """Every descriptor a worker sends is a tensor's memfd, sealed against writes and size changes:
    checked by the judge when it receives them (it passes some on unopened: a reference's inputs to
    the candidate), so that a sender that kept a way to write them is the one that fails."""
    for fd in fds:
        try:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        except OSError:
            raise protocol.ProtocolError("a descriptor it sent is not a sealed memfd") from None
        if seals & shm.SEALS != shm.SEALS:
            raise protocol.ProtocolError("a tensor's memfd it sent is not sealed against writes")


def _renumber(value, fds, out):
    """A received value tree re-indexed onto `out` (to send the same sealed memfds on)."""
    if isinstance(value, list):
        return [_renumber(x, fds, out) for x in value]
    if isinstance(value, dict):
        if "__tensor__" in value:
            d = dict(value)
            out.append(fds[value["__tensor__"]])
            d["__tensor__"] = len(out) - 1
            return d
        return {k: _renumber(x, fds, out) for k, x in value.items()}
    return value


class Held:
    """A value tree the judge holds, with its memfds (closed by `close`)."""

    def __init__(self, value, fds, owns=True):
        self.value, self.fds = value, list(fds)
        self.owns = owns  # False: the descriptors belong to another Held (one reply, two values)
        self._decoded = None

    def decoded(self):
        if self._decoded is None:
            self._decoded = shm.decode_value(self.value, self.fds)
        return self._decoded

    def send_args(self):
        out = []
        return _renumber(self.value, self.fds, out), out

    def close(self):
        if self.owns:
            shm.close_fds(self.fds)
        self.fds = []
