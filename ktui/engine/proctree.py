"""The worker's process tree seen from outside (/proc): its descendants, the memory they use
(RSS, memfds and shared memory included), their threads and CPU time; stopping, continuing and
killing all of them. Stdlib only. MIT license, part of ktui."""
import os
import signal
import time


def _stat_fields(path):
    """The fields of a /proc/.../stat file after the command name (state, ppid, ...: field 3 of
    proc(5) is index 0); None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            s = fh.read()
        return s[s.rindex(b")") + 2:].decode("ascii", "replace").split()
    except (OSError, ValueError):
        return None


def _children_map():
    kids = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return kids
    for n in names:
        if not n.isdigit():
            continue
        f = _stat_fields(f"/proc/{n}/stat")
        try:
            ppid = int(f[1]) if f else None
        except (ValueError, IndexError):
            ppid = None
        if ppid is not None:
            kids.setdefault(ppid, []).append(int(n))
    return kids


def descendants(pid):
    """pid and every process below it (a snapshot; threads not listed)."""
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


def _rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _threads(pid):
    """Threads of one process (/proc/PID/status), 1 when unknown (it may just have ended)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                if ln.startswith("Threads:"):
                    return int(ln.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 1


def _status_kb(pid, keys):
    out = dict.fromkeys(keys, 0)
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                k = ln.split(":", 1)[0]
                if k in out:
                    out[k] = int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


#: tmpfs files this process (the judge) made or received, by (major, minor, inode): their sealed size.
#: A worker maps the judge's input memfds and closes their descriptors: without root, /proc/PID/map_files
#: is closed to ktui, and such a mapping's file would be of unknown size (see :func:`tree_memory`)
KNOWN_SHMEM: dict = {}
KNOWN_SHMEM_MAX = 100000


def note_shmem(fd):
    """Remember the size of the memfd ``fd`` as one the judge knows, when it is sealed against growing
    (F_SEAL_GROW: its size is final; any other file is left out)."""
    import fcntl

    try:
        if not fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_GROW:
            return
        st = os.fstat(fd)
    except (OSError, AttributeError):
        return
    if len(KNOWN_SHMEM) >= KNOWN_SHMEM_MAX:
        KNOWN_SHMEM.pop(next(iter(KNOWN_SHMEM)))
    KNOWN_SHMEM[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = _allocated(st)


#: how often the watchdog walks the tree's mappings of tmpfs files (seconds; its other counts: every period)
SHMEM_SCAN_PERIOD_S = 1.0
#: names /proc/PID/maps gives the files of the kernel's internal tmpfs (memfds, shared anonymous
#: mappings, SysV segments, a named shared anonymous mapping): memory in no folder anyone can walk
SHMEM_NAMES = ("/memfd:", "/dev/zero", "/SYSV", "[anon_shmem")


def _shmem_vmas(pid):
    """The mappings of ``pid`` backed by the kernel's internal tmpfs (:data:`SHMEM_NAMES`): a list
    of (start, end, offset, (major, minor, inode), shared and writable) from /proc/PID/maps."""
    out = []
    try:
        with open(f"/proc/{pid}/maps") as fh:
            for ln in fh:
                parts = ln.split(None, 5)
                if len(parts) != 6 or not parts[5].startswith(SHMEM_NAMES):
                    continue
                try:
                    a, b = (int(x, 16) for x in parts[0].split("-"))
                    ma, mi = (int(x, 16) for x in parts[3].split(":"))
                    # shared and writable: what can fill a file through its mapping (a read-only one,
                    # or CUDA's device mappings, are not stood for by their length)
                    out.append((a, b, int(parts[2], 16), (ma, mi, int(parts[4])), parts[1][1] + parts[1][3] == "ws",
                                parts[5].startswith(("/memfd:", "/dev/zero"))))
                except ValueError:
                    continue
    except OSError:
        pass
    return out


def _present_pages(pid, sources=("numa_maps", "smaps")):
    """{start address: bytes of it present in ``pid``'s page tables}, from /proc/PID/numa_maps (one
    line a mapping, the pages of each node: N0=...), else /proc/PID/smaps (its Rss lines)."""
    out = {}
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        if "numa_maps" not in sources:
            raise FileNotFoundError
        with open(f"/proc/{pid}/numa_maps") as fh:
            for ln in fh:
                parts = ln.split()
                try:
                    kb = next((int(p[18:]) for p in parts if p.startswith("kernelpagesize_kB=")), page >> 10)
                    n = sum(int(p.split("=", 1)[1]) for p in parts[2:] if p[:1] == "N" and "=" in p)
                    out[int(parts[0], 16)] = n * kb * 1024
                except (ValueError, IndexError):
                    continue
        return out
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/smaps") as fh:
            cur = None
            for ln in fh:
                head = ln.split(None, 1)[0]
                if "-" in head and not head.endswith(":"):
                    try:
                        cur = int(head.split("-")[0], 16)
                    except ValueError:
                        cur = None
                elif head == "Rss:" and cur is not None:
                    out[cur] = int(ln.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def _allocated(st):
    """Bytes a tmpfs file holds: its blocks; a memfd_secret(2) file at its size (its pages are
    unmapped from the kernel: st_blocks 0; windows of it mapped one at a time held 512 MiB with VmLck
    and RSS near 0; ktui, torch and CUDA never make one: an upper bound)."""
    return st.st_size if st.st_blocks == 0 and st.st_size else st.st_blocks * 512


def _open_files(pid, objs, channels, unlinked, counts=None):
    """What ``pid`` holds open: memfds and memfd_secret files (``objs``: key -> bytes allocated),
    sockets and pipes (``channels``: "socket:[ino]"; their buffers are kernel memory in nobody's
    RSS), and regular files with no name left (``unlinked``: key -> bytes; O_TMPFILE or unlinked
    after opening: in no folder the disk walk reads)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    if counts is not None:
        counts["fds"] = counts.get("fds", 0) + len(fds)
    for fd in fds:
        p = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(p)
            if target.startswith(("socket:", "pipe:")):
                channels.add(target)
                continue
            shmem = target.startswith(("/memfd:", "/secretmem"))
            if not (shmem or target.endswith(" (deleted)")):
                continue
            st = os.stat(p)
        except OSError:
            continue
        key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
        if shmem:
            objs[key] = _allocated(st)
        elif st.st_nlink == 0 and (st.st_mode & 0o170000) == 0o100000:
            unlinked[key] = st.st_blocks * 512


def _mapped_size(pid, start, end):
    """Bytes allocated to the file behind one mapping, through /proc/PID/map_files (only where
    ktui may open those: root, or CAP_CHECKPOINT_RESTORE); None elsewhere."""
    try:
        return _allocated(os.stat(f"/proc/{pid}/map_files/{start:x}-{end:x}"))
    except OSError:
        return None


def through_own_namespace(pids, ns, read):
    """``read(pid)`` through the first process of the tree whose ``ns`` namespace (``net``, ``mnt``)
    is not the judge's, that is the worker's own; 0 when none is (no namespaces) or none can be read."""
    try:
        ours = os.readlink(f"/proc/self/ns/{ns}")
    except OSError:
        return 0
    for p in pids:
        try:
            if os.readlink(f"/proc/{p}/ns/{ns}") == ours:
                continue
            return read(p)
        except OSError:
            continue
    return 0


def _shm_used(pids):
    """Bytes used in the worker's private /dev/shm (a tmpfs: files there are host memory even
    when nothing holds them open), read through a process of the tree that lives in the
    worker's own mount namespace; 0 when none does (no namespaces: the host's /dev/shm)."""

    def used(p):
        st = os.statvfs(f"/proc/{p}/root/dev/shm")
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    return through_own_namespace(pids, "mnt", used)


def _mapped_files(pids, objs):
    """{key: {"present": bytes of it in the tree's page tables, "extent": length of its shared
    writable mappings, "size": bytes it holds, read through map_files, or None, "growable": a memfd or
    shared anonymous file (its size may pass what is mapped of it)}} of every tmpfs file the tree
    maps (/proc/PID/maps, and numa_maps or smaps of the processes mapping one)."""
    mapped: dict = {}
    for p in pids:
        vmas = _shmem_vmas(p)
        present = _present_pages(p) if vmas else {}
        for a, b, off, key, shared, growable in vmas:
            m = mapped.setdefault(key, {"present": 0, "extent": 0, "size": None, "growable": growable})
            m["present"] += present.get(a, 0)
            if shared:
                m["extent"] = max(m["extent"], off + b - a)
            if m["size"] is None and key not in objs:
                m["size"] = _mapped_size(p, a, b)
    return mapped


def tree_memory(pids, scan=None):
    """Host memory a worker tree holds: anonymous and file RSS of every process, its shared
    memory (RssShmem: the pages of memfds, shared anonymous mappings and SysV segments in its page
    tables), what its private /dev/shm holds, and every file of the kernel's internal tmpfs it holds
    open or mapped at what that file holds beyond the pages mapped (each once): a memfd open but not
    mapped, or mapped with its pages dropped from the mapping (MADV_DONTNEED keeps them in the file:
    512 MiB held with 50 MiB seen), or written past the part it maps. A mapped file's size is read
    through an open descriptor or /proc/PID/map_files (root); where neither is there (a normal user,
    the descriptor closed) the length its shared mappings cover stands for it (what lies past them is
    not seen: the host floor). ``scan``: a dict the caller keeps, to walk the mappings (numa_maps: 9 ms
    for a torch worker on a loaded 2-core machine) at most every SHMEM_SCAN_PERIOD_S, the rest each
    call. {"total", "shared"} in bytes, "channels": how many sockets and pipes the tree holds open
    (each once), "unlinked": {key: bytes} of regular files open with no name, "fds": descriptors open in
    the tree, "unknown": how many memfds or shared anonymous files it maps whose size nobody could read
    (no descriptor open, map_files closed to ktui, not one the judge made or received: see
    :data:`KNOWN_SHMEM`). Page tables (VmPTE) count as memory: a private mapping read in full maps the
    zero page, in no RSS, with 8 bytes of page table per 4 KiB (48 MiB of them with 13 MiB of RSS)."""
    rss = shmem = 0
    objs, channels, unlinked, counts = {}, set(), {}, {}
    for p in pids:
        st = _status_kb(p, ("RssAnon", "RssFile", "RssShmem", "VmPTE"))
        rss += st["RssAnon"] + st["RssFile"] + st["VmPTE"]
        shmem += st["RssShmem"]
        _open_files(p, objs, channels, unlinked, counts)
    now = time.monotonic()
    if scan is None or now >= scan.get("next", 0.0):
        mapped = _mapped_files(pids, objs)
        if scan is not None:
            scan.update(next=now + SHMEM_SCAN_PERIOD_S, mapped=mapped)
    else:
        mapped = scan["mapped"]
    hidden = unknown = 0
    for key, m in mapped.items():
        size = objs.get(key, m["size"])
        if size is None:
            size = KNOWN_SHMEM.get(key)
            unknown += int(size is None and m.get("growable", False))
        hidden += max(0, (m["extent"] if size is None else size) - m["present"])
    hidden += sum(v for k, v in objs.items() if k not in mapped)
    dev_shm = _shm_used(pids)
    shared = shmem + hidden + dev_shm
    return {"total": rss + shared, "shared": shared, "channels": len(channels), "unlinked": unlinked,
            "fds": counts.get("fds", 0), "unknown": unknown, "keys": set(objs) | set(mapped)}


def held_shmem(pid):
    """{key: bytes} of the tmpfs files (memfds) ``pid`` holds open, and of those it maps whose size is
    known (:data:`KNOWN_SHMEM`): what the judge holds of what it received."""
    objs: dict = {}
    _open_files(pid, objs, set(), {})
    for _a, _b, _off, key, _shared, _growable in _shmem_vmas(pid):
        if key not in objs and key in KNOWN_SHMEM:
            objs[key] = KNOWN_SHMEM[key]
    return objs


def _signal(pid, sig):
    """Send ``sig`` to ``pid``; False when it is gone (or not ours)."""
    try:
        os.kill(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_tree(proc):
    """SIGSTOP a worker's session and every process below it (twice over: a fork in flight
    during the first sweep is caught by the second). Returns the pids stopped, for
    :func:`continue_tree`. Nothing of the worker runs until then: no thread, no child, no
    launch of GPU work (what it queued before keeps running on the device)."""
    stopped: list[int] = []
    for _sweep in range(2):
        _signal_group(proc, signal.SIGSTOP)
        for p in descendants(proc.pid) if proc.poll() is None else []:
            if _signal(p, signal.SIGSTOP) and p not in stopped:
                stopped.append(p)
    return stopped


def runnable(pid):
    """Whether any thread of ``pid`` is running or waiting for a CPU (state R in
    /proc/PID/task/TID/stat): what a spinning process is on a loaded machine, where it gets little
    CPU time; a process blocked on a pipe or a sleep is S."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any((f := _stat_fields(f"/proc/{pid}/task/{t}/stat")) and f[0] == "R" for t in tasks)


def wait_stopped(pids, timeout=0.5):
    """Until every thread of ``pids`` is in the stopped state (SIGSTOP is delivered
    asynchronously), or ``timeout``."""

    def running(p):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            return False
        return any((f := _stat_fields(f"/proc/{p}/task/{t}/stat")) and f[0] not in ("T", "t", "Z", "X")
                   for t in tasks)

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not any(running(p) for p in pids):
            return True
        time.sleep(0.002)
    return False


def continue_tree(proc, pids):
    for p in pids:
        _signal(p, signal.SIGCONT)
    _signal_group(proc, signal.SIGCONT)


def cpu_seconds(pids):
    """User + system CPU time of processes (all their threads), from /proc/PID/stat: kept by the
    kernel, so a worker cannot understate it."""
    total = 0
    for p in pids:
        f = _stat_fields(f"/proc/{p}/stat")
        try:
            total += int(f[11]) + int(f[12]) if f else 0  # utime, stime (fields 14 and 15 of proc(5))
        except (ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def kill_tree(proc):
    """SIGKILL a worker, its session and every descendant (in a PID namespace, killing its
    init ends all the others; outside one, the sweep catches what left the session)."""
    pids = descendants(proc.pid) if proc.poll() is None else []
    _signal_group(proc, signal.SIGKILL)
    for p in reversed(pids):
        _signal(p, signal.SIGKILL)


def disk_used(folders, max_entries):
    """(bytes allocated, entries) below ``folders`` (links not followed, each inode once); the walk
    stops past ``max_entries`` (then more than that many is all that is known)."""
    import stat as st_

    seen = set()
    used = entries = 0
    todo = [f for f in folders if os.path.isdir(f)]
    while todo and entries <= max_entries:
        d = todo.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                entries += 1
                if entries > max_entries:
                    break
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                used += st.st_blocks * 512
                if st_.S_ISDIR(st.st_mode):
                    todo.append(e.path)
    return used, entries
