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


def _mapped_shared(pid, mapped):
    """(major, minor, inode) of the memfds and SysV segments ``pid`` maps (their touched pages
    are in its RssShmem already)."""
    try:
        with open(f"/proc/{pid}/maps") as fh:
            for ln in fh:
                parts = ln.split(None, 5)
                if len(parts) == 6 and parts[5].startswith(("/memfd:", "/SYSV")):
                    try:
                        ma, mi = (int(x, 16) for x in parts[3].split(":"))
                        mapped.add((ma, mi, int(parts[4])))
                    except ValueError:
                        continue
    except OSError:
        pass


def _unmapped_memfds(pid, mapped, seen, channels=None):
    """Bytes allocated to memfds this process holds open but nobody in the tree maps, each
    counted once: a memfd filled with write() is in nobody's RSS and under no RLIMIT_AS, but it
    is host memory all the same. ``channels`` (a set) gets the sockets and pipes it holds open
    ("socket:[ino]"): their buffers are kernel memory in nobody's RSS either."""
    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in fds:
        p = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(p)
            if target.startswith(("socket:", "pipe:")):
                if channels is not None:
                    channels.add(target)
                continue
            secret = target.startswith("/secretmem")
            if not (secret or target.startswith("/memfd:")):
                continue
            st = os.stat(p)
        except OSError:
            continue
        key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
        if key in seen or (key in mapped and not secret):
            continue
        seen.add(key)
        # a memfd_secret(2) file: its pages are unmapped from the kernel and show in no count
        # (st_blocks 0, in RssFile only while mapped): windows of it mapped one at a time within
        # RLIMIT_MEMLOCK, touched and unmapped, held 512 MiB with VmLck and RSS near 0. Counted at
        # its size, an upper bound (ktui, torch and CUDA never make one)
        total += st.st_size if secret else st.st_blocks * 512
    return total


def _shm_used(pids):
    """Bytes used in the worker's private /dev/shm (a tmpfs: files there are host memory even
    when nothing holds them open), read through a process of the tree that lives in the
    worker's own mount namespace; 0 when none does (no namespaces: the host's /dev/shm)."""
    try:
        ours = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return 0
    for p in pids:
        try:
            if os.readlink(f"/proc/{p}/ns/mnt") == ours:
                continue
            st = os.statvfs(f"/proc/{p}/root/dev/shm")
            return (st.f_blocks - st.f_bfree) * st.f_frsize
        except OSError:
            continue
    return 0


def tree_memory(pids):
    """Host memory a worker tree holds: anonymous and file RSS of every process, its shared
    memory (RssShmem: mapped memfds, MAP_SHARED, SysV), memfds and /dev/shm files open but not
    mapped (by inode, once), and what its private /dev/shm holds. {"total", "shared"} in bytes, and
    "channels": how many sockets and pipes the tree holds open (each once)."""
    rss = shmem = 0
    mapped, seen, channels = set(), set(), set()
    for p in pids:
        _mapped_shared(p, mapped)
    unmapped = 0
    for p in pids:
        st = _status_kb(p, ("RssAnon", "RssFile", "RssShmem"))
        rss += st["RssAnon"] + st["RssFile"]
        shmem += st["RssShmem"]
        unmapped += _unmapped_memfds(p, mapped, seen, channels)
    dev_shm = _shm_used(pids)
    shared = shmem + unmapped + dev_shm
    return {"total": rss + shared, "shared": shared, "channels": len(channels)}


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
