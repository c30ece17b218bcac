"""Threads left running: work that goes on after the kernel's forward returned is work no timer
and no comparison saw (an empty output filled later by a thread, a background worker fed from
a queue).

In the candidate worker, before the kernel's code loads, ``threading.Thread.start`` is wrapped to
remember where each thread was started from (the innermost frame outside the standard library:
kernel code, or a library such as torch starting its own pool). During the probe's forward a
thread started from kernel code begins its work ``START_DELAY_S`` late, so one that forward does
not wait for is still alive when forward returns however short its work (a race the kernel
would otherwise win on an idle machine and lose on a busy one). The probe then runs one forward
and reports Python threads the kernel started that are still alive when it returns, Python
threads started by kernel code since it loaded that are still alive, and native threads
(``/proc/self/task``) that appeared during the forward. The judge counts the worker's native
threads itself too (``/proc/PID/task`` from outside, which the kernel cannot fake), before and
after its own request, and the processes of the worker's tree: a worker's "no thread" is never
the only evidence.
"""

from __future__ import annotations

import os
import sys
import time

from ..words import count, plural
from . import judge_probe, worker_probe

THREADS_SEED = 7919 + 60
SETTLE_S = 0.05  # after the forward returns: threads that are about to end have ended

_STARTED: list = []  # (sequence number, thread, origin, from kernel code) per Thread.start since the hook
_HOOKED = {"on": False, "before": None, "seq": 0, "delay": 0.0}
# during the probe's forward, a thread the kernel starts begins its work this late: one that forward
# does not wait for is then still running when forward returns, however fast its work is (a
# thread that is joined only makes forward this much slower; the probe's forward is not timed)
START_DELAY_S = 0.05


def _library_roots():
    import sysconfig

    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(os.path.realpath(p))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            roots.add(os.path.realpath(p))
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.basename(pkg) == "ktui":  # not in an exported script (its modules have its file name)
        roots.add(os.path.realpath(pkg))
    return tuple(sorted(roots))


def _stdlib_roots():
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(p) for p in (paths.get("stdlib"), paths.get("platstdlib")) if p})


def origin_of(frame, stdlib=None, libraries=None):
    """(file:line, from kernel code) of the innermost frame outside the standard library:
    kernel code unless that frame is in an installed library (torch, triton...) or ktui."""
    stdlib = _stdlib_roots() if stdlib is None else stdlib
    libraries = _library_roots() if libraries is None else libraries
    f = frame
    while f is not None:
        fn = f.f_code.co_filename
        real = fn if fn.startswith("<") else os.path.realpath(fn)
        in_std = (any(real.startswith(r + os.sep) for r in stdlib) and "site-packages" not in real
                  and "dist-packages" not in real)
        if not in_std:
            lib = any(real.startswith(r + os.sep) for r in libraries)
            return f"{os.path.basename(fn)}:{f.f_lineno}", not lib
        f = f.f_back
    return "?", False


def install_start_hook():
    """Wrap threading.Thread.start (once, in the candidate worker, before trace code loads) and
    note the threads alive then."""
    import threading

    if _HOOKED["on"]:
        return
    _HOOKED["on"] = True
    _HOOKED["before"] = thread_state()
    orig = threading.Thread.start
    stdlib, libraries = _stdlib_roots(), _library_roots()
    sleep = time.sleep  # bound before trace code loads

    def start(self, *args, **kwargs):
        try:
            where = origin_of(sys._getframe(1), stdlib, libraries)
        except (ValueError, AttributeError):
            where = ("?", True)
        _HOOKED["seq"] += 1
        _STARTED.append((_HOOKED["seq"], self, where[0], where[1]))
        del _STARTED[:-1000]
        delay = _HOOKED["delay"]
        if delay > 0 and where[1]:
            run = self.run

            def late_run(*a, **k):
                sleep(delay)
                return run(*a, **k)

            self.run = late_run
        return orig(self, *args, **kwargs)

    start.__wrapped__ = orig
    threading.Thread.start = start


def thread_state():
    """Live Python threads (ident -> name) and native thread ids of this process."""
    import threading

    py = {t.ident: t.name for t in threading.enumerate()
          if t.ident is not None and not isinstance(t, threading._DummyThread)}
    return py, native_tasks("self")


def native_tasks(pid):
    try:
        return set(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return set()


def _origin(thread):
    """(where, from kernel code) of a thread; one the hook never saw counts as the kernel's."""
    for _seq, t, where, kernel in reversed(_STARTED):
        if t is thread:
            return where, kernel
    return "not started through Thread.start", True


def _live(exclude):
    import threading

    return [t for t in threading.enumerate() if t.ident is not None and t.ident not in exclude and t.is_alive()
            and not isinstance(t, threading._DummyThread)]


def _label(t):
    return f"{t.name} ({_origin(t)[0]})"


@worker_probe("threads")
def threads_worker(wctx, args, fds, out_fds):
    import torch

    from ..errors import guarded

    inputs = wctx.slots[str(args["slot"])]
    model = wctx.model
    cuda = wctx.device is not None and wctx.device.type == "cuda"

    def forward():
        with torch.no_grad():
            return guarded("checks", model, *inputs, what="kernel")

    forward()  # warm: pools a library starts on first use exist before the count
    if cuda:
        torch.cuda.synchronize(wctx.device)
    time.sleep(SETTLE_S)
    before = thread_state()
    mark = _HOOKED["seq"]
    _HOOKED["delay"] = START_DELAY_S
    try:
        out = forward()
    finally:
        _HOOKED["delay"] = 0.0
    # the moment forward returned: anything it started that still runs works outside the call
    alive_at_return = [_label(t) for t in _live(before[0]) if _origin(t)[1]]
    if cuda:
        torch.cuda.synchronize(wctx.device)
    del out
    time.sleep(SETTLE_S)
    after = thread_state()
    started = [f"{t.name} ({where})" for seq, t, where, kernel in list(_STARTED) if seq > mark and kernel]
    left_py = [_label(t) for t in _live(before[0]) if _origin(t)[1]]
    new_py = [i for i in after[0] if i not in before[0]]
    left_native = len(after[1] - before[1]) - len(new_py)
    load0 = _HOOKED["before"] or ({}, set())
    since_load = [_label(t) for t in _live(load0[0]) if _origin(t)[1]]
    return {"findings": [], "data": {
        "hooked": bool(_HOOKED["on"]), "started_by_kernel": started[:16], "alive_at_return": alive_at_return[:16],
        "left_python": left_py[:16], "left_native": max(0, left_native), "since_load": since_load[:16],
        "python_before": len(before[0]), "native_before": len(before[1])}}


IDLE_WINDOW_S = 0.2  # the judge watches the kernel's other processes this long while nothing calls it
IDLE_CPU_S = 0.05  # more CPU than this in the window: working in the background
IDLE_SAMPLES = 20  # the threads' states read this many times in the window
IDLE_RUNNABLE = 0.6  # runnable (R) in this share of them: working, however little CPU the machine gives it


def _busy_background(ctx, skip):
    """Processes of the candidate's tree other than the worker itself (and its namespace's
    unshare) that work while nothing calls the kernel: a daemon the kernel's code started (at
    load, double-forked or setsid: still in the tree). Idle helper processes (a compile pool
    blocked on its pipe) use no CPU and are never runnable. Working is more CPU than IDLE_CPU_S in
    the window, or a thread runnable in most of the window's samples: on a loaded machine a spinning
    daemon gets a small share of a core (under 0.03 s of the 0.2 s at load 15 on 2 cores) but stays
    runnable. Counted from /proc by the judge. Returns (pids, CPU seconds)."""
    ours = {ctx.candidate.proc.proc.pid, ctx.candidate.main_pid()}
    others = [p for p in ctx.candidate.proc.tree() if p not in ours and p not in skip]
    return working(others) if others else ([], 0.0)


def working(pids, window_s=IDLE_WINDOW_S, samples=IDLE_SAMPLES):
    """Of ``pids``, those working over ``window_s``: more CPU than IDLE_CPU_S together, or
    runnable in IDLE_RUNNABLE of ``samples`` reads of their threads' states. Returns (pids, CPU s)."""
    from .. import sandbox

    c0 = {p: sandbox.cpu_seconds([p]) for p in pids}
    seen = dict.fromkeys(pids, 0)
    for _ in range(samples):
        time.sleep(window_s / samples)
        for p in pids:
            seen[p] += sandbox.runnable(p)
    used = {p: sandbox.cpu_seconds([p]) - c for p, c in c0.items()}
    total = sum(used.values())
    if total > IDLE_CPU_S:
        return [p for p, u in used.items() if u > 0], total
    return [p for p, n in seen.items() if n >= IDLE_RUNNABLE * samples], total


def _names(d, key):
    v = d.get(key)
    return [str(x)[:80] for x in v if isinstance(x, str)][:16] if isinstance(v, list) else []


@judge_probe("threads_left_running", on_failure=True)
def threads_left_running(ctx):
    ctx.trial(1, 1, "threads_left_running")
    inputs, _none = ctx.candidate_inputs(int(ctx.input_seed) + THREADS_SEED, "p-threads", outputs=False)
    # the judge's own count, from outside the worker, around a plain forward of its own: a worker
    # (or a kernel that replaced the worker probe) that lies about its threads cannot hide them
    pid = ctx.candidate.main_pid()
    ctx.candidate.call("forward", {"slot": "p-threads"})  # warm
    time.sleep(SETTLE_S)
    outside0 = native_tasks(pid)
    procs0 = set(ctx.candidate.proc.tree())
    ctx.candidate.call("forward", {"slot": "p-threads"})
    time.sleep(SETTLE_S)
    outside1 = native_tasks(pid)
    data, _fds = ctx.candidate.call("probe", {"name": "threads", "args": {"slot": "p-threads"}})
    time.sleep(SETTLE_S)
    new_procs = sorted(set(ctx.candidate.proc.tree()) - procs0)  # still alive now
    d = data.get("data") or {}
    problems = []
    alive = _names(d, "alive_at_return")
    if alive:
        problems.append(f"still running when forward returned: {', '.join(alive[:3])}")
    left = [n for n in _names(d, "left_python") if n not in alive]
    if left:
        problems.append(f"started during forward and left running: {', '.join(left[:3])}")
    since = [n for n in _names(d, "since_load") if n not in alive and n not in left]
    if since:
        problems.append(f"started by the kernel's code and running in the background: {', '.join(since[:3])}")
    native = d.get("left_native") if isinstance(d.get("left_native"), int) else 0
    if native > 0:
        problems.append(f"{count(native, 'native thread')} appeared during forward and {plural(native, 'is', 'are')} still running")
    appeared = len(outside1 - outside0) if outside0 and outside1 else 0
    if appeared > 0 and not problems:
        problems.append(f"{count(appeared, 'thread')} of the worker appeared during a forward and {plural(appeared, 'is', 'are')} still running "
                        "(counted by ktui from outside the worker)")
    started = ", ".join(_names(d, "started_by_kernel")[:4]) or "none"
    if new_procs:
        problems.append(f"{count(len(new_procs), 'process')} started during forward and still running (seen by ktui "
                        "in the worker's process tree)")
    busy, used = _busy_background(ctx, set(new_procs))
    if busy:
        problems.append(f"{count(len(busy), 'process')} the kernel's code started {plural(len(busy), 'keeps', 'keep')} working in the background "
                        f"({used:.2f} s of CPU in {IDLE_WINDOW_S:.1f} s while the kernel was idle, seen by ktui)")
    evidence = (f"Python threads the kernel started during forward: {started}; native threads seen by ktui "
                f"before/after: {len(outside0)}/{len(outside1)}")
    if problems:
        ctx.add_check("threads_left_running", False,
                      "threads or processes left running by the kernel: " + "; ".join(problems)
                      + ": work goes on outside the timed, checked call")
        ctx.result["checks"][-1]["evidence"] = evidence
    else:
        ok = True if outside0 or d.get("hooked") else None
        ctx.add_check("threads_left_running", ok,
                      "no thread or process left running after forward" if ok else "threads could not be counted")
