"""The sandbox's held-out attacks (session 34; benchmarks/results/sandbox_heldout_s34.md): attacks of the
classes of issue 22 that were in none of the corpus's files, each after a published technique.

The sandbox-level attacks run in a real sandboxed worker (tests/fixtures/sandbox/heldout_corpus.py,
ktui.engine.sandbox.Launched: what every worker gets); the judge-level ones run as a kernel through the
judge (ktui.repro.runner.run_request: the path of ``ktui repro`` and ``ktui verify``), torch on the CPU.
The secrets are fake, planted under a fake home."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

import pytest
from conftest import judge_run, model, needs, outcome

from ktui.engine import confine, proctree, sandbox

FIX = Path(__file__).resolve().parent / "fixtures" / "sandbox"
sys.path.insert(0, str(FIX))
import heldout_corpus as H  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REPRO = REPO / "tests" / "fixtures" / "repro"

linux_ns = pytest.mark.skipif(not sandbox.detect()["namespaces"] or sys.platform != "linux",
                              reason="needs user namespaces (unshare)")
known_arch = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"),
                                reason="the seccomp filter knows x86_64 and aarch64 only")


@pytest.fixture(scope="module")
def plan():
    with H.plant() as (p, listeners):
        yield p, listeners


def _run(name, plan, **kw):
    p, listeners = plan
    before = sum(x.accepted for x in listeners)
    r = H.run_attack(name, p, **kw)
    assert sum(x.accepted for x in listeners) == before, "a planted socket took a connection"
    return r


# ---- secrets and network: held before too (regressions) ---------------------------------------------------

@linux_ns
@pytest.mark.parametrize("name", ["secrets_env", "secrets_sockets", "secrets_keys"])
def test_held_out_secrets_stay_out_of_reach(plan, name):
    assert H.control(name, plan[0]) > 0, "the attack gets nothing even outside the sandbox: it proves nothing"
    r = _run(name, plan)
    assert r["held"], r["what"]


# ---- network ------------------------------------------------------------------------------------------------

@linux_ns
@known_arch
def test_no_vsock_socket(plan):
    # AF_VSOCK is a VM guest's channel to its host and no network namespace separates it (moby's default
    # seccomp profile refuses socket(AF_VSOCK)); before: the worker made one (the control too)
    r = _run("network", plan)
    assert r["held"], r["what"]


# ---- writing outside the temp dir ---------------------------------------------------------------------------

@linux_ns
@pytest.mark.skipif(os.geteuid() != 0, reason="a normal user's worker does not own the host's device nodes")
def test_the_hosts_device_nodes_are_read_only_inside():
    # as root the worker is the owner of /dev/null, /dev/zero... (the host's inodes, bound): a chmod or
    # utime inside changed them for every program of the machine. Only /dev is walked here: the
    # bench walks the whole root (minutes)
    code = H.WRITE_OUTSIDE.replace('for top in ("/dev", "/", "/tmp"):', 'for top in ("/dev",):')
    from attack_run import run_code

    val, w = run_code(code)
    assert val is not None, w.tail("stderr")[-2000:]
    assert val["got"] == [], val["got"]
    # the nodes still work for their data
    val, w = run_code('import json, os\nos.write(os.open("/dev/null", os.O_WRONLY), b"x")\n'
                      'print("OUT " + json.dumps(len(open("/dev/zero", "rb").read(8))), flush=True)\n')
    assert val == 8, w.tail("stderr")[-2000:]


@linux_ns
def test_nothing_outside_the_temp_dir_changes(plan):
    # symlinks and hard links to files outside, written through; inherited descriptors reopened for
    # writing; a file in /dev/shm and in every folder of the worker's root: the host's files keep their
    # size, time and mode, and nothing is left (held before too: a regression test)
    r = _run("write_via_links", plan)
    assert r["held"], r["what"]


@linux_ns
@known_arch
def test_no_set_id_file_in_the_temp_dir(plan):
    # a set-uid copy of a shell in the temp dir, the dir opened to everyone: any local user ran it with
    # euid 0 while the run lasted (ktui as root; the judge's own temp root is 0700, the bare Launched's
    # folder is not). chmod / open(O_CREAT) / mknod with S_ISUID or S_ISGID now fail
    r = _run("setuid_in_temp_dir", plan)
    assert r["held"], r["what"]


@known_arch
def test_the_seccomp_program_refuses_what_it_says():
    # the filter run on the data of each call (a classic-BPF interpreter, enough for this program)
    import struct

    prog = confine.seccomp_program(platform.machine())
    arch = confine._SECCOMP[platform.machine()]["arch"]
    nr = {"x86_64": {"socket": 41, "chmod": 90, "open": 2, "openat": 257, "keyctl": 250, "io_uring_setup": 425,
                     "openat2": 437, "read": 0},
          "aarch64": {"socket": 198, "chmod": 52, "open": None, "openat": 56, "keyctl": 219, "io_uring_setup": 425,
                      "openat2": 437, "read": 63}}[platform.machine()]

    def run(call, *args, arch_=arch):
        data = struct.pack("<iIQ6Q", nr[call] if isinstance(call, str) else call, arch_, 0,
                           *(list(args) + [0] * (6 - len(args))))
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

    assert run("socket", 40, 1) == "EPERM" and run("socket", 1, 1) == "allow" and run("socket", 2, 1) == "allow"
    assert run("chmod", 0, 0o4755) == "EPERM"  # (aarch64: fchmod, the mode in the same argument)
    assert run("chmod", 0, 0o755) == "allow"
    openat = ("openat", 0, 0, 0o100 | 0o1, 0o6755)  # O_CREAT|O_WRONLY with set-id bits
    assert run(*openat) == "EPERM"
    assert run("openat", 0, 0, 0o1, 0o6755) == "allow"  # no O_CREAT: the mode is not used
    assert run("openat", 0, 0, 0o100, 0o644) == "allow"
    assert run("keyctl") == "EPERM" and run("io_uring_setup") == "EPERM" and run("openat2") == "ENOSYS"
    assert run("read", 0, 0, 100) == "allow"
    assert run("read", arch_=0x40000003) == "EPERM"  # i386's ABI


# ---- exhausting the host ------------------------------------------------------------------------------------

@linux_ns
def test_descriptors_across_the_tree_are_bounded(plan):
    # RLIMIT_NOFILE is per process: 24 processes x 4,000 descriptors (96,000) went unseen (file-nr +64,000,
    # slab +73 MiB with 16 processes); the host's fs.file-max is every program's
    r = _run("fd_flood", plan)
    assert r["held"] and "file descriptors" in r["what"], r["what"]


@linux_ns
def test_page_tables_count_as_memory(plan):
    # private mappings read in full (the zero page: no RSS) hold page tables in no process's RSS
    r = _run("page_tables", plan)
    assert r["held"] and "memory_limit" in r["what"], r["what"]


@linux_ns
@pytest.mark.parametrize("name", ["shared_anon_tail", "memfd_fallocate_closed"])
@pytest.mark.parametrize("as_root", [True, False], ids=["map_files", "no_map_files"])
def test_shared_memory_past_its_mapping_is_counted(plan, monkeypatch, name, as_root):
    # a memfd (or a shared anonymous mapping) holding 512 MiB with one page of it mapped and no descriptor
    # left: root reads its size through /proc/PID/map_files; a normal user's ktui may not (the open item of
    # the fifth pass), so there the host's shared memory grown beyond every count ktui keeps is the tree's.
    # "no_map_files" stands for the normal user (map_files refused) whoever runs the test; there the run stops
    # at the tree's limit as "not judged here" (session 36: such growth never convicts a kernel)
    if as_root and os.geteuid() != 0:
        pytest.skip("map_files needs root")
    if not as_root:
        monkeypatch.setattr(proctree, "_mapped_size", lambda pid, a, b: None)
    r = _run(name, plan)
    if as_root:
        assert r["held"] and "memory_limit" in r["what"], r["what"]
    else:  # stopped at its limit; not judged here: the host's growth could be another program's (session 36)
        assert r["held"] and "passed its memory limit" in r["what"] and "not judged here" in r["what"], r["what"]
        assert "cannot read" in r["what"], r["what"]


def test_a_memfd_the_judge_made_is_of_known_size(tmp_path):
    # the judge's input memfds, mapped by a worker that closed their descriptors, are of known size: an
    # honest worker maps no file of unknown size, and none of the host's growth is counted as its
    from ktui.engine import protocol, shm

    def key(fd):
        st = os.fstat(fd)
        return (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)

    fd = shm.write_sealed(b"\1" * 8192, 8192)
    try:
        assert proctree.KNOWN_SHMEM[key(fd)] == 8192
    finally:
        os.close(fd)
    # what passes through the judge (a reference's inputs sent on to the candidate) is known too, when
    # sealed against growing; an unsealed memfd (it could grow) is not
    a, b = protocol.socketpair()
    sealed = os.memfd_create("s", os.MFD_ALLOW_SEALING)
    os.write(sealed, b"\1" * 4096)
    import fcntl

    fcntl.fcntl(sealed, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK)
    open_ = os.memfd_create("u")
    try:
        proctree.KNOWN_SHMEM.clear()
        protocol.send(a, {"x": 1}, [sealed, open_])
        _obj, got = protocol.recv(b)
        assert key(got[0]) in proctree.KNOWN_SHMEM and key(got[1]) not in proctree.KNOWN_SHMEM
        shm.close_fds(got)
    finally:
        for f in (sealed, open_):
            os.close(f)
        a.close()
        b.close()


# ---- outliving ktui -----------------------------------------------------------------------------------------

@linux_ns
def test_nothing_outlives_the_worker(plan):
    r = _run("outlive", plan)
    assert r["held"], r["what"]


# ---- the judge: forging the verdict, crashing or hanging it ---------------------------------------------------

#: a kernel whose output is wrong (x * 3, the reference's relu(x) * 2) and which tries to make the judge
#: say anything but "correctness disagrees" / "not reproducible"
JUDGE_ATTACKS = {
    # monkeypatching the comparison in its own process (the judge compares in its own)
    "patch_comparisons": ("""
        for _n in ("allclose", "equal", "isclose"):
            setattr(torch, _n, lambda *a, **k: True)
        torch.testing.assert_close = lambda *a, **k: None
        torch.Tensor.__eq__ = lambda a, b: torch.ones((), dtype=torch.bool)
        """, "return x * 3.0\n"),
    # ktui's own words for a problem it cannot pass (a file over RLIMIT_FSIZE)
    "claims_too_large": ("", "raise OSError(27, 'File too large')\n"),
    # a CUDA out-of-memory message that blames other processes
    "claims_gpu_taken": ("", "raise RuntimeError('CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
                             "capacity of 79.19 GiB of which 3.06 MiB is free. Process 4242 has 79.00 GiB memory in use. "
                             "Of the allocated memory 1.00 MiB is allocated by PyTorch')\n"),
    # the worker's own death in the middle of a call, its socket closed first
    "closes_its_socket": ("", """
        import resource
        for fd in range(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0]):
            try:
                os.close(fd)
            except OSError:
                pass
        return x * 3.0
        """),
    # signals: to every process it can see, then to its own group
    "signals_everyone": ("", """
        import signal
        for target in (-1, 0):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        return x * 3.0
        """),
    # a reply of its own on the judge's socket, for the request being served (the socket and the id read
    # from the worker's frames): the right outputs' shape, a zero tensor, in a sealed memfd as ktui's own;
    # the worker's real reply follows it
    "forged_reply": ("""
        import json, socket, array
        from ktui.engine import shm
        def _forge(x):
            f, srv = sys._getframe(1), None
            while f is not None and srv is None:
                o = f.f_locals.get("self")
                srv = o if hasattr(o, "req_id") and hasattr(o, "sock") else None
                f = f.f_back
            rid = srv.req_id
            fds = []
            desc = shm.export_tensor(torch.zeros_like(x), fds)
            msg = {"id": rid, "ok": True, "data": {"outputs": desc, "types": ["torch.Tensor"], "overrides": [],
                                                   "inputs_after": None}}
            srv.sock.sendmsg([json.dumps(msg).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        """, "_forge(x)\nreturn x * 3.0\n"),
    # an exception whose words raise ktui's own failure, claiming the reference is broken, when the
    # worker formats them
    "evil_exception_words": ("""
        from ktui.engine.errors import StageFailure
        class _Evil(Exception):
            def __str__(self):
                raise StageFailure("correctness", "reference_error", "the reference is broken")
            __repr__ = __str__
        """, "raise _Evil()\n"),
    # the worker's C stack overflowed (recursion limit raised first, repr of a list nested a million
    # deep recurses in C): a segfault mid-call
    "stack_overflow": ("", """
        sys.setrecursionlimit(10 ** 8)
        v = []
        for _ in range(10 ** 6):
            v = [v]
        repr(v)
        return x * 3.0
        """),
    # an output tree of NaNs, nested as deep as Python allows the worker to encode it
    "nan_tree": ("", """
        v = x * float("nan")
        for _ in range(40):
            v = (v, [v], {"k": v})
        return v
        """),
    # 64 MiB on stdout in one write, then a wrong answer
    "output_flood": ("", "sys.stdout.write('A' * (64 << 20)); sys.stdout.flush()\nreturn x * 3.0\n"),
    # the expected outputs searched for in its own process (gc, every memfd it holds or maps) and
    # returned when found: a tensor of the input's shape other than the input
    "reads_expected_outputs": ("""
        import gc, mmap
        def _find(x):
            for o in gc.get_objects():
                if isinstance(o, torch.Tensor) and o.shape == x.shape and o.data_ptr() != x.data_ptr() \
                        and o.dtype == x.dtype and not torch.equal(o, x):
                    return o.clone()
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if not os.readlink("/proc/self/fd/" + fd).startswith("/memfd:"):
                        continue
                    n = os.fstat(int(fd)).st_size
                    if n == x.numel() * x.element_size():
                        t = torch.frombuffer(bytearray(os.pread(int(fd), n, 0)), dtype=x.dtype).reshape(x.shape)
                        if not torch.equal(t, x):
                            return t
                except (OSError, RuntimeError, ValueError):
                    pass
            return None
        """, "found = _find(x)\nreturn found if found is not None else x * 3.0\n"),
}


@needs("torch")
@pytest.mark.parametrize("name", list(JUDGE_ATTACKS))
def test_judge_level_held_out(tmp_path, name):
    from ktui.repro.verdict import CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE

    pre, body = JUDGE_ATTACKS[name]
    res = judge_run(tmp_path, model(pre, body))
    assert outcome(res) in (CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE), (outcome(res), res.get("status"),
                                                                      res.get("failure"))


def test_no_attack_that_changes_the_machine_runs_unsandboxed():
    """The bench ran every 'read' attack as a plain child for its control; the metadata attack, run
    so as root, moved /usr/bin/env, /etc/hostname and Python's os.py into a temp dir that was then
    removed. It has no control run, and its code puts back a file it managed to move."""
    assert "write_outside_metadata" in H.NO_CONTROL
    with pytest.raises(ValueError):
        H.control("write_outside_metadata", {})
    code = H.WRITE_OUTSIDE
    assert code.index("os.rename(os.path.join(home, \"r\"), src)") > code.index("os.rename(src, os.path.join(home")
