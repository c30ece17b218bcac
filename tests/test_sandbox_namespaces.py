"""The sandbox against what lives outside the filesystem and the process tree (a third pass of
attacks, none in tests/test_sandbox_attacks.py): System V shared memory and message queues and
POSIX message queues (the host's IPC namespace: the user's other programs' segments, objects that
outlive the run, memory nobody maps), nested user namespaces, files of /etc only root may read
(a worker of a ktui run as root is root, its capabilities dropped but still the files' owner),
the machine's name, and folders a worker makes unremovable.

Each test plants or tries the thing outside the sandbox first (the control: it must get
through there), then inside a sandboxed worker (ktui.engine.sandbox.Launched, no torch)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ktui.engine import sandbox
from ktui.engine.oslib import remove_tree

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "sandbox"))
from attack_run import ipc_left, plant_ipc  # noqa: E402
from sandbox_corpus import (  # noqa: E402
    DISK_FILL,
    INODE_FILL,
    LEAVE_IPC,
    NESTED,
    READ_IPC,
    SCM_HIDE,
    SOCKET_HOARD,
    SYSV_HOARD,
    _launch,
    _wait,
    run_code,
)

linux_ns = pytest.mark.skipif(not sandbox.detect()["namespaces"] or sys.platform != "linux",
                              reason="needs user namespaces (unshare)")

def _run(code: str, **kw) -> tuple[dict, sandbox.Launched]:
    """``code`` (which prints one ``OUT {json}`` line) in a sandboxed worker."""
    got, w = run_code(code, **kw)
    assert got is not None, (w.limit_hit, w.tail("stdout")[-500:], w.tail("stderr")[-2000:])
    return got, w


def _control(code: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("OUT ")]
    assert line, out.stderr[-2000:]
    return json.loads(line[-1][4:])


@pytest.fixture
def planted_ipc():
    """A SysV segment and a SysV message queue holding a secret, and a POSIX queue, as the user's
    other programs leave them (this test's own, removed at the end)."""
    with plant_ipc(0x6B740000, "ktui-test") as planted:
        if planted is None:
            pytest.skip("no System V IPC here")
        yield planted


@linux_ns
def test_the_users_ipc_objects_are_out_of_reach(planted_ipc):
    code = READ_IPC % json.dumps(planted_ipc)
    control = _control(code)
    assert any(c.startswith("shm ") for c in control) and any(c.startswith("msg ") for c in control), control
    got, w = _run(code)
    assert got == [], got


@linux_ns
def test_ipc_objects_made_by_a_worker_end_with_it():
    plan = {"key": 0x6B750000 + os.getpid() % 0xFFFF, "mq": f"/ktui-test-left-{os.getpid()}"}

    def left():
        return ipc_left(plan["key"], plan["mq"])

    made = _control(LEAVE_IPC % json.dumps(plan))
    assert "shm" in made and left() == made, "outside the sandbox the objects outlive their process"
    made, _w = _run(LEAVE_IPC % json.dumps(plan))
    assert "shm" in made, made  # the worker could make them (in its own namespace)...
    assert left() == []  # ...and none is left on the host


@linux_ns
def test_sysv_memory_nobody_maps_is_bounded():
    """A segment nobody maps is in no process's RSS (the watchdog cannot see it): the worker's IPC
    namespace caps it. Without its own namespace 1 GiB was held against a 256 MiB limit."""
    try:
        got, w = _run(SYSV_HOARD, memory_limit=256 << 20)
    except AssertionError:
        return  # the watchdog ended it before it said anything: held as well
    assert got <= 64 << 20 or w.limit_hit is not None, (got, w.limit_hit)


@linux_ns
def test_no_nested_user_namespace():
    """In a user namespace of its own the kernel is root again, with fresh IPC caps and mounts of
    its own (a tmpfs of half the host's memory, in nobody's RSS)."""
    if _control(NESTED)[0] != 0:
        pytest.skip("this machine allows no user namespace to this process outside the sandbox either")
    (r, _errno), _w = _run(NESTED)
    assert r != 0


@linux_ns
@pytest.mark.skipif(os.getuid() != 0, reason="as a normal user these files are unreadable anyway")
def test_files_of_etc_only_root_may_read_are_hidden():
    secret = []
    for dirpath, _dirnames, filenames in os.walk("/etc"):
        for n in filenames:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH and st.st_size and st.st_uid == 0 \
                    and st.st_mode & stat.S_IRUSR:
                secret.append(p)
    if not secret:
        pytest.skip("no file of /etc here that only root may read")
    code = f'''
import json
got = []
for p in {secret!r}:
    try:
        if open(p, "rb").read(64):
            got.append(p)
    except OSError:
        pass
print("OUT " + json.dumps(got), flush=True)
'''
    assert _control(code), "root reads them outside the sandbox"
    got, _w = _run(code)
    assert got == [], got


@linux_ns
def test_the_worker_does_not_see_the_machines_name():
    here = socket.gethostname()
    got, _w = _run('import json, socket\nprint("OUT " + json.dumps(socket.gethostname()), flush=True)')
    assert got != here


@linux_ns
def test_a_cpu_worker_sees_no_network_interface_of_the_machine():
    """The host's /sys, bound, listed the machine's interfaces (eth0, ...) in /sys/class/net: a CPU
    worker gets a sysfs of its own network namespace (its loopback only)."""
    try:
        here = set(os.listdir("/sys/class/net")) - {"lo"}
    except OSError:
        pytest.skip("no /sys/class/net here")
    if not here:
        pytest.skip("this machine has no interface but the loopback")
    got, _w = _run('import json, os\nprint("OUT " + json.dumps(sorted(os.listdir("/sys/class/net"))), flush=True)')
    assert not set(got) & here, got

def test_a_folder_a_worker_made_unremovable_is_removed(tmp_path):
    """A worker's files owned by the user, in folders it made mode 000: removed (shutil.rmtree
    alone left them, for a normal user); a link out is never followed."""
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "f").write_text("keep")
    os.chmod(outside / "keep", 0o500)
    work = tmp_path / "work"
    (work / "a" / "b").mkdir(parents=True)
    (work / "a" / "b" / "f").write_text("x")
    (work / "a" / "link").symlink_to(outside / "keep")
    os.chmod(work / "a" / "b", 0)
    os.chmod(work / "a", 0o100)
    remove_tree(str(work))
    assert not work.exists()
    assert (outside / "keep" / "f").read_text() == "keep"
    assert stat.S_IMODE(os.stat(outside / "keep").st_mode) == 0o500  # not touched through the link
    os.chmod(outside / "keep", 0o700)


# ---- what no process of the tree holds ------------------------------------------------------------


@linux_ns
@pytest.mark.parametrize("code,kw", [(DISK_FILL, {"disk_limit": 128 << 20}), (INODE_FILL, {"disk_entries": 1000})],
                         ids=["bytes", "inodes"])
def test_what_a_worker_leaves_in_its_folders_is_counted(code, kw):
    """Files in its temp dir are in no process's RSS (and on the host's disk, or in its memory where
    /tmp is a tmpfs): 320 MiB written against a 256 MiB memory limit, or 3,000 files, went
    unnoticed."""
    w = _launch(code, memory_limit=256 << 20, **kw)
    _wait(w, 120)
    assert w.limit_hit is not None and w.limit_hit[0] == "disk_limit", (w.limit_hit, w.tail("stderr")[-500:])


@linux_ns
def test_memory_no_process_holds_ends_the_run_not_the_host():
    """1.5 GiB of memfds sent over a socket and closed: in flight, in no process's table or RSS. The
    tree made that socket itself (it is in its own network namespace): what the host's shared memory
    grew by beyond ktui's counts ends the run at its own limit, before the host's floor (until session 35
    it ran on to the floor). Not judged here, not memory_limit: that growth may be another program's
    (session 36: an honest CUDA worker was charged so on the H100)."""
    avail, _total = sandbox.host_memory()
    if avail is None or avail < 6 << 30:
        pytest.skip("needs 6 GiB of free memory")
    w = _launch(SCM_HIDE, memory_limit=256 << 20, host_memory_floor=avail - (1 << 30))
    _wait(w, 120)
    assert w.limit_hit is not None and w.limit_hit[0] == "environment", (w.limit_hit, w.tail("stderr")[-500:])
    assert "passed its memory limit" in w.limit_hit[1] and "unix socket" in w.limit_hit[1] and \
        "of its own" in w.limit_hit[1], w.limit_hit


@linux_ns
def test_socket_buffers_are_bounded_by_the_sockets_a_tree_may_hold():
    """Unix socket pairs filled and left unread: their buffers are kernel memory (343 MiB in one
    process against a 256 MiB limit went unnoticed). The tree's sockets and pipes are counted."""
    w = _launch(SOCKET_HOARD, memory_limit=256 << 20)
    _wait(w, 120)
    assert w.limit_hit is not None and "sockets and pipes" in w.limit_hit[1], (w.limit_hit, w.tail("stdout")[-200:])


# ---- the worker's own clock, patched from the kernel's module ------------------------------------------

SLOW_CLOCK = '''
import gc, time
_real = time.perf_counter
_t0 = _real()
def _slow():  # a clock that runs 100x slow, planted in the worker's bound timing primitives
    return _t0 + (_real() - _t0) / 100.0
for o in gc.get_objects():
    if type(o).__name__ == "Primitives" and hasattr(o, "perf"):
        o.perf = _slow
'''
CTYPES_CLOCK = '''
import ctypes, time
# overwrite the C function pointer of time.perf_counter's method table entry (ml_meth): every
# reference to the builtin, the worker's bound one included, now runs the replacement
_real = time.perf_counter
_t0 = _real()
FN = ctypes.CFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)
@FN
def _slow(self, args):
    return _t0 + (_real_c() - _t0) / 100.0
class PyMethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p), ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]
class PyCFunctionObject(ctypes.Structure):
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p), ("m_ml", ctypes.POINTER(PyMethodDef))]
_real_c = time.monotonic  # a second clock for the replacement itself
cf = PyCFunctionObject.from_address(id(_real))
cf.m_ml.contents.ml_meth = ctypes.cast(_slow, ctypes.c_void_p).value
_keep = _slow
'''


@pytest.mark.parametrize("prelude", [SLOW_CLOCK, CTYPES_CLOCK], ids=["gc-bound-clock", "ctypes-builtin-clock"])
def test_a_kernel_that_slows_its_workers_clock_is_timed_by_ktuis(tmp_path, prelude):
    """The clock the worker bound before trace code loaded, replaced through gc (its Primitives
    object) or in C (time.perf_counter's method table entry, which every reference to the builtin
    runs): its samples are 100x too small; the judge's own clock over the same calls is reported."""
    pytest.importorskip("torch")
    from test_sandbox_attacks import judge_run, model

    res = judge_run(tmp_path, model(prelude, body="import time; time.sleep(0.002)\n"))
    assert res["status"] == "completed", res.get("failure")
    t = res["timing"]
    assert "timer_disagrees" in [f.get("class") for f in res.get("findings") or []], t.get("cross_check")
    assert t["kernel"]["mean_us"] * 1.5 + 50 >= t["cross_check"]["kernel_wall_us"], (t["kernel"], t["cross_check"])


SLOW_EVENTS = '''
import gc
for o in gc.get_objects():  # the CUDA event timer the worker bound: every elapsed time 100x too small
    if type(o).__name__ == "Primitives" and hasattr(o, "ev_elapsed"):
        _real_elapsed = o.ev_elapsed
        o.ev_elapsed = lambda s, e, _r=_real_elapsed: _r(s, e) / 100.0
'''


def test_a_kernel_that_shrinks_its_workers_cuda_events_is_timed_by_ktuis(tmp_path):
    """GPU only (KTUI_TEST_ATTACK_DEVICE=cuda, scripts/gpu/sandbox_namespaces.sh): the worker's bound
    CUDA event timer patched through gc to report 1/100 of every elapsed time."""
    torch = pytest.importorskip("torch")
    if os.environ.get("KTUI_TEST_ATTACK_DEVICE") != "cuda" or not torch.cuda.is_available():
        pytest.skip("a GPU attack: KTUI_TEST_ATTACK_DEVICE=cuda on a CUDA machine")
    from test_sandbox_attacks import judge_run, model

    res = judge_run(tmp_path, model(SLOW_EVENTS, body="import time; time.sleep(0.002)\n"), device="cuda")
    assert res["status"] == "completed", res.get("failure")
    t = res["timing"]
    assert "timer_disagrees" in [f.get("class") for f in res.get("findings") or []], t.get("cross_check")
    assert t["kernel"]["mean_us"] * 1.5 + 50 >= t["cross_check"]["kernel_wall_us"], (t["kernel"], t["cross_check"])
