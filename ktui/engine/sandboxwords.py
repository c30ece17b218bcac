"""What the sandbox does, in words: the confirmation dialog's list before a run (:func:`planned`) and
the result's account of what was in force (:func:`describe`). Split out of sandbox.py (which
wraps :func:`planned` with what it reads of the machine: ``found`` is its ``detect()``, ``limit`` the
worker's memory limit; :func:`describe` is re-exported there). Imports nothing of sandbox.py. No torch."""

from __future__ import annotations

import os

from .defaults import (
    CHANNELS_LIMIT,
    CPU_LIMIT_S,
    DISK_ENTRIES_LIMIT,
    DISK_LIMIT_BYTES,
    FDS_LIMIT,
    FILE_SIZE_LIMIT_BYTES,
    HOST_MEMORY_FLOOR_FRACTION,
    HOST_MEMORY_FLOOR_MAX,
    NPROC_LIMIT,
    OUTPUT_CAP_BYTES,
    SHM_INODES_LIMIT,
    SHM_LIMIT_BYTES,
    SIGPENDING_LIMIT,
)
from .words import count


def planned(device="cpu", memory_limit=None, *, found=None, limit=None):
    """What a worker started now would get, before it starts (for the confirmation dialog);
    ``memory_limit``: the job's (KTUI_WORKER_MEMORY_GB), capped as the worker's will be."""
    from .gpusysfs import planned_words as gpu_sysfs_words

    d = found if found is not None else {}
    words = ["a fresh process per kernel for the reference and for the candidate",
             "an environment allow-listed by exact name (no credentials; HOME and TMPDIR in its temp dir)",
             "stdin from /dev/null, stdout/stderr captured (at most "
             f"{OUTPUT_CAP_BYTES >> 20} MiB)",
             f"limits: host memory {limit / 2**30:.0f} GiB for the worker tree (memfds, "
             "shared mappings and files open with no name counted at what they hold, not only what is mapped; "
             "page tables and folders on a tmpfs counted as memory), "
             f"files {FILE_SIZE_LIMIT_BYTES >> 30} GiB each, CPU time {CPU_LIMIT_S} s, "
             f"{DISK_LIMIT_BYTES >> 30} GiB and {DISK_ENTRIES_LIMIT:,} files in its temp and build dirs, "
             f"{CHANNELS_LIMIT} sockets and pipes, {SIGPENDING_LIMIT:,} queued signals, "
             f"{NPROC_LIMIT} processes and threads (each worker its own count" + (
                 "; watchdog only: root is exempt from RLIMIT_NPROC" if os.getuid() == 0 else "") + ")",
             "killed with ktui (PR_SET_PDEATHSIG, SIGTERM/SIGHUP handlers)",
             f"ended, and the run not judged, when this machine's free memory falls below "
             f"{HOST_MEMORY_FLOOR_FRACTION:.0%} of it (at most {HOST_MEMORY_FLOOR_MAX >> 30} GiB; memory no process "
             "holds, such as descriptors in flight between sockets, is not counted per worker without a cgroup)"
             + ("" if os.geteuid() == 0 else "; a memfd or shared mapping whose size ktui (not run as root) cannot "
                "read is charged with what this machine's shared memory grew by beyond ktui's own counts"),
             f"at most {FDS_LIMIT:,} file descriptors open in the worker tree (this machine's file table is shared)"]
    if d.get("namespaces"):
        words += ["a root of its own: only the toolchain (system folders, Python, ktui), its temp dir and "
                  "its build dir are there, read-only but the last two; no home (HOME is its temp dir), no "
                  "/tmp, /run or home sockets (no ssh-agent), nothing next to the trace",
                  "its own session keyring (the keys of your session are out of reach) and no kernel key calls (your key "
                  "quota stays yours); no vsock socket (a VM's channel to its host), no set-uid or set-gid file, no io_uring, eBPF or userfaultfd",
                  "own PID namespace (every descendant, setsid daemons included, dies with it; "
                  "ktui's /proc out of reach)",
                  "no network (own network namespace)",
                  "its own IPC namespace (no SysV segment or message queue of yours; at most 64 MiB of "
                  "shared memory and 16 queues), its own host name, no nested user namespace, at most "
                  "16 inotify instances (of your 128)",
                  f"its own /dev/shm: at most {min(SHM_LIMIT_BYTES, limit) / 2**30:.1f} GiB "
                  f"in {SHM_INODES_LIMIT:,} files",
                  "/proc/sys read-only (no kernel setting of this machine or of its own namespaces changed); "
                  "/proc/keys and kernel tables hidden",
                  "a minimal /dev (null, zero, full, random, urandom" + (", the GPU's nvidia* nodes"
                                                                          if device != "cpu" else "")
                  + "; no disks, consoles or terminals)",
                  "builds in a throwaway folder: ktui copies the result into its cache (regular files only)",
                  "capabilities dropped", "a /sys holding only the CPUs and NUMA nodes (no firmware tables, disks "
                  "or network interfaces of this machine)" if device == "cpu" else gpu_sysfs_words()]
    else:
        words += [f"NO namespaces ({d.get('why')}): trace code can read and write whatever this user can, "
                  "and see ktui's /proc entries; descendants are swept by process tree"]
    return words


def describe(report, launched_with_namespaces):
    """Words for what was in force in one worker (from its prologue's report)."""
    out = []
    if report.get("pid_namespace"):
        out.append("PID namespace")
    elif launched_with_namespaces:
        out.append("PID namespace FAILED")
    if report.get("net_namespace"):
        out.append("no network")
    if report.get("mounts"):
        ro = "read-only filesystem except its temp dir"
        if report.get("dev_writable"):
            ro += " and /dev"
        failed = [str(f).rsplit(": ", 1)[0][:80] for f in report.get("read_only_failed") or []]
        if failed:  # named: which one matters (a scratch tmpfs, or the user's home)
            ro += (f" ({count(len(failed), 'mount')} left writable: " + ", ".join(failed[:3])
                   + (", ..." if len(failed) > 3 else "") + ")")
        out.append(ro)
    if report.get("minimal_dev"):
        out.append(f"a minimal /dev ({len(report.get('dev_nodes') or [])} device nodes)")
    if report.get("own_root"):
        out.append("its own root (toolchain, temp and build dirs only: no home, no sockets of the user)")
    if report.get("masked"):
        out.append(f"{count(len(report['masked']), 'folder')} hidden (cache, credentials)")
    if report.get("ipc_namespace"):
        out.append("its own IPC namespace")
    if "user/max_user_namespaces" in (report.get("ns_limits") or []):
        out.append("no nested user namespace")
    sysfs = {"minimal": "a /sys of the CPUs" + (", NUMA nodes and its GPUs" if report.get("sysfs_gpu") else
                                                " and NUMA nodes") + " only",
             "own": "a /sys of its own network namespace", "host": "the host's /sys, read-only"}.get(report.get("sysfs"))
    if sysfs:
        out.append(sysfs + (f" ({report['sysfs_note']})" if report.get("sysfs_note") else ""))
    if "/proc/sys" in (report.get("proc_read_only") or []):
        out.append("/proc/sys read-only")
    if report.get("keys_denied"):
        out.append("no kernel key calls, vsock sockets, set-id files, io_uring, eBPF or userfaultfd")
    if report.get("session_keyring"):
        out.append("its own session keyring")
    if report.get("caps_dropped"):
        out.append("capabilities dropped")
    if report.get("pdeathsig"):
        out.append("dies with its parent")
    out.append("allow-listed env")
    out.append("rlimits + memory/output watchdog")
    return out
