"""The sandbox against memory in files that have no name on any disk (a fifth pass of attacks, none
in the earlier ones): memfds and shared anonymous mappings whose pages were dropped from the mapping
(MADV_DONTNEED keeps them in the file), a memfd written past the part it maps and its descriptor
closed, files of the worker's /dev/shm unlinked and sent in flight, empty files by the ten thousand
(kernel memory, no blocks), O_TMPFILE files, pipes filled and sent in flight, a temp dir on a tmpfs.

Each attack holds its memory and sleeps: it is caught by a limit (the test asserts which) or by the
kernel's own cap (the test asserts what the worker could hold). No figure here is a time."""

from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ktui.engine import proctree, sandbox
from ktui.engine.defaults import SHM_INODES_LIMIT

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "sandbox"))
from attack_run import finish, held_value, launch  # noqa: E402
from sandbox_corpus import (  # noqa: E402
    ANON_SHARED_ZAPPED,
    MEMFD_PAST_MAPPING,
    MEMFD_ZAPPED,
    PIPES_IN_FLIGHT,
    SHM_INODES,
    SHM_UNLINKED_IN_FLIGHT,
    TMPFS_TEMP_DIR,
    UNLINKED_TMPFILE,
    run_code,
)

linux_ns = pytest.mark.skipif(not sandbox.detect()["namespaces"] or sys.platform != "linux",
                              reason="needs user namespaces (unshare)")
LIMIT = 256 << 20


def _caught(w, kind):
    assert w.limit_hit is not None and w.limit_hit[0] == kind, (w.limit_hit, w.tail("stdout")[-300:],
                                                               w.tail("stderr")[-800:])


@linux_ns
@pytest.mark.parametrize("keep_fd", [False, True], ids=["descriptor-closed", "descriptor-open"])
def test_memfd_pages_dropped_from_their_mapping_are_counted(keep_fd):
    """512 MiB in eight memfds, each mapped, written, then MADV_DONTNEED: the pages leave the
    process's RssShmem but stay in the file (the watchdog saw 50-147 MiB of the 512)."""
    _got, w = run_code(MEMFD_ZAPPED % (8, keep_fd), memory_limit=LIMIT)
    _caught(w, "memory_limit")


@linux_ns
def test_shared_anonymous_pages_dropped_are_counted():
    """mmap(-1) is MAP_SHARED | MAP_ANONYMOUS: a file of the kernel's internal tmpfs that only the
    mapping holds; 512 MiB written and dropped from the page tables went unseen."""
    _got, w = run_code(ANON_SHARED_ZAPPED % 8, memory_limit=LIMIT)
    _caught(w, "memory_limit")


@linux_ns
@pytest.mark.skipif(os.geteuid() != 0, reason="a normal user's ktui may not open /proc/PID/map_files: "
                                              "this memory is bounded by the host floor only")
def test_a_memfd_written_past_the_part_it_maps_is_counted_as_root():
    """512 MiB written into memfds with write(), one page of each mapped, the descriptors closed:
    only a 4 KiB mapping keeps each file. ktui as root reads each file's size through map_files."""
    _got, w = run_code(MEMFD_PAST_MAPPING % 8, memory_limit=LIMIT)
    _caught(w, "memory_limit")


@linux_ns
def test_files_open_with_no_name_count_toward_the_disk_limit():
    """320 MiB in O_TMPFILE files of the temp dir: in no folder the disk walk reads."""
    _got, w = run_code(UNLINKED_TMPFILE % 5, memory_limit=1 << 30, disk_limit=128 << 20)
    _caught(w, "disk_limit")


@linux_ns
def test_the_workers_dev_shm_is_capped_by_its_memory_limit_and_inode_count():
    """What bounds a /dev/shm file that is unlinked, in flight and closed is the tmpfs's own size:
    no larger than the worker's memory limit (it was 1 GiB whatever the limit), and a file count
    (100,000 empty files took 99 MiB of kernel memory that no count saw)."""
    code = ("import json, os\nst = os.statvfs('/dev/shm')\n"
            "print('OUT ' + json.dumps([st.f_blocks * st.f_frsize, st.f_files]), flush=True)\n")
    got, w = run_code(code, memory_limit=LIMIT)
    assert got is not None, w.tail("stderr")[-800:]
    assert got[0] <= LIMIT and 0 < got[1] <= SHM_INODES_LIMIT, got


@linux_ns
def test_empty_files_in_dev_shm_stop_at_its_inode_cap():
    w = launch(SHM_INODES % 100000, memory_limit=LIMIT)
    try:
        got = held_value(w, 600)
        assert got is not None and got <= SHM_INODES_LIMIT, (got, w.limit_hit, w.tail("stderr")[-500:])
    finally:
        finish(w, 1)


@linux_ns
def test_dev_shm_files_unlinked_and_in_flight_are_bounded():
    """Eight 64 MiB files of /dev/shm, each unlinked, sent over a socket and closed: no name, no
    descriptor, no mapping. The tmpfs refuses past the worker's memory limit, and its count is the
    watchdog's."""
    got, w = run_code(SHM_UNLINKED_IN_FLIGHT % 8, memory_limit=LIMIT)
    assert (got is not None and got <= LIMIT) or (w.limit_hit and w.limit_hit[0] == "memory_limit"), \
        (got, w.limit_hit, w.tail("stderr")[-500:])


@linux_ns
def test_pipes_filled_and_sent_in_flight_stay_under_the_kernels_per_user_cap():
    """Pipes filled (F_SETPIPE_SZ 1 MiB) and both ends sent in flight: in no descriptor table. The
    kernel gives an unprivileged user's pipes at most fs.pipe-user-pages-soft pages (and two pages
    each past it): it holds only while the worker has no CAP_SYS_RESOURCE (dropped in the prologue)."""
    try:
        soft = int(Path("/proc/sys/fs/pipe-user-pages-soft").read_text())
    except (OSError, ValueError):
        pytest.skip("no fs.pipe-user-pages-soft here")
    if not 0 < soft <= 16384:
        pytest.skip(f"fs.pipe-user-pages-soft is {soft} here")
    w = launch(PIPES_IN_FLIGHT % (300, 300), memory_limit=4 << 30)
    try:  # ended as soon as it says what it holds: the cap it takes is its user's
        got = held_value(w, 300)
        assert got is not None, (w.limit_hit, w.tail("stderr")[-500:])
        # the soft cap, plus two pages each for the pipes past it
        assert got <= soft * 4096 + 300 * 2 * 4096, got
    finally:
        finish(w, 1)


@linux_ns
@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/unshare").exists(),
                    reason="mounts a tmpfs in a mount namespace of its own (root)")
def test_a_temp_dir_on_a_tmpfs_counts_as_memory(tmp_path):
    """A host whose /tmp is a tmpfs: 320 MiB in the temp dir is memory, not disk (the disk limit
    is 8 GiB). Run under a tmpfs mounted in a mount namespace of this test's own."""
    base = tmp_path / "tmpfs"
    base.mkdir()
    fixtures = Path(__file__).resolve().parent / "fixtures" / "sandbox"
    script = textwrap.dedent(f"""
        import json, subprocess, sys, tempfile
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g", "tmpfs", {str(base)!r}], check=True)
        sys.path.insert(0, {str(fixtures)!r})
        import sandbox_corpus as T
        tempfile.tempdir = {str(base)!r}
        got, w = T.run_code(T.TMPFS_TEMP_DIR % 20, memory_limit={LIMIT})
        print("RESULT " + json.dumps([got, w.limit_hit]), flush=True)
    """)
    r = subprocess.run(["/usr/bin/unshare", "--mount", "--propagation", "private", sys.executable, "-c", script],
                       capture_output=True, text=True, timeout=300)
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert line, r.stderr[-2000:]
    _got, hit = json.loads(line[-1][7:])
    assert hit is not None and hit[0] == "memory_limit" and "tmpfs" in hit[1], hit
    assert TMPFS_TEMP_DIR  # the attack named above (run by the child)


# ---- the count itself, on a plain child process (no sandbox) ----------------------------------------

HOLDER = '''
import mmap, os, sys, time
size = 32 << 20
shared = os.memfd_create("honest-out")
os.ftruncate(shared, size)
m = mmap.mmap(shared, size, mmap.MAP_SHARED)
m.write(b"\\1" * size)  # mapped, every page touched, descriptor open: counted once
priv = os.memfd_create("honest-in")
os.write(priv, b"\\2" * size)
p = mmap.mmap(priv, size, mmap.MAP_PRIVATE, mmap.PROT_READ)
_ = sum(p[o] for o in range(0, size, 4096))  # read (as a worker reads its inputs)
print("READY", flush=True)
sys.stdin.read()
'''


def test_a_memfd_mapped_and_open_is_counted_once():
    """What an honest worker does with its outputs and inputs (a memfd written through a shared
    mapping, another read through a private one, both open): each counted at its size once, not
    once for its pages in the page tables and again for the file."""
    child = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "READY"
        mem = proctree.tree_memory([child.pid])
        assert 64 << 20 <= mem["shared"] < 80 << 20, mem["shared"] >> 20
    finally:
        child.stdin.close()
        child.wait(timeout=60)


def test_pages_present_read_from_numa_maps_or_smaps_agree():
    size = 8 << 20
    m = mmap.mmap(-1, size)
    m.write(b"\1" * (size // 2))
    try:
        addr = next(a for a, b, _o, _k, shared, *_g in proctree._shmem_vmas(os.getpid()) if shared and b - a == size)
        figures = {src: proctree._present_pages(os.getpid(), sources=(src,)).get(addr) for src in ("numa_maps", "smaps")}
        figures = {k: v for k, v in figures.items() if v is not None}
        assert figures and all(v == size // 2 for v in figures.values()), figures
    finally:
        m.close()


def test_the_mappings_are_walked_at_most_once_a_period(monkeypatch):
    """The watchdog's walk of the tree's mappings (numa_maps: ~9 ms for a torch worker here) runs once
    per SHMEM_SCAN_PERIOD_S; its figure stands in between, the open descriptors are read every time."""
    calls = []
    monkeypatch.setattr(proctree, "_mapped_files", lambda pids, objs: calls.append(1) or {})
    scan: dict = {}
    proctree.tree_memory([os.getpid()], scan)
    scan["next"] = float("inf")  # within the period, whatever the machine's load
    fd = os.memfd_create("held")
    try:
        os.write(fd, b"\1" * (1 << 20))
        mem = proctree.tree_memory([os.getpid()], scan)
        assert len(calls) == 1 and mem["shared"] >= 1 << 20  # the descriptor counted without a walk
        scan["next"] = 0.0
        proctree.tree_memory([os.getpid()], scan)
        assert len(calls) == 2
    finally:
        os.close(fd)
