"""The worker's prologue (:func:`enter`, inside the worker, before torch or any trace code):
makes every mount read-only but the worker's private temp dir (and, for a build step, that
kernel's own build directory), gives it a root of its own holding only the toolchain (or, the
profiler's fallback, hides ktui's cache and the credential folders under empty tmpfs mounts),
a minimal /dev and a private /dev/shm, a fresh session keyring, then drops every capability
(bounding set, securebits, no_new_privs) so the kernel cannot undo any of it: mounts made here
are locked for any user namespace the kernel creates. Stdlib only. MIT license, part of ktui."""
import ctypes
import json
import os
import signal

from .defaults import NPROC_LIMIT, SHM_INODES_LIMIT, SHM_LIMIT_BYTES
from .oslib import (
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_SECUREBITS,
    _enc,
    _locked_flags,
    _mount,
    _mount_points,
    _under,
    libc,
    prctl,
    set_pdeathsig,
)
from .seccomp import _SECCOMP, AF_VSOCK, SET_ID_BITS, deny_key_syscalls, seccomp_program  # noqa: F401
from .sysview import PROC_MASKED, PROC_READ_ONLY, harden_proc, mount_sysfs  # noqa: F401

SPEC_ENV = "KTUI_SANDBOX_SPEC"

def drop_capabilities():
    """Empty bounding set, securebits that keep root from regaining capabilities, no_new_privs,
    then capset(0): nothing in this process tree can mount, unmount or remount again."""
    for cap in range(64):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break
    try:
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    prctl(PR_SET_SECUREBITS, 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    hdr = Header(0x20080522, 0)
    data = (Data * 2)()
    if libc().capset(ctypes.byref(hdr), data) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "capset: " + os.strerror(e))
    prctl(PR_SET_NO_NEW_PRIVS, 1)


HOST_DEV_ENV = "KTUI_SANDBOX_HOST_DEV"  # "1": keep the host's /dev in workers (a fallback, weaker)
DEV_NODES = ("null", "zero", "full", "random", "urandom")  # what any worker gets
# and, for a GPU worker, NVIDIA's nodes (nvidia0..N, nvidiactl, nvidia-uvm(-tools), nvidia-modeset)
# and folders (nvidia-caps: MIG capabilities)
GPU_DEV_PREFIXES = ("nvidia",)


def shm_options(spec):
    """The mount options of a worker's private /dev/shm: at most SHM_LIMIT_BYTES, and no more than
    the worker's memory limit, in at most SHM_INODES_LIMIT files and folders. A file there is host
    memory whether it is open, mapped, unlinked or in flight over a socket, and the tmpfs's own count
    is what bounds it (the watchdog reads the same count); an empty file has no blocks but an inode
    and a dentry of kernel memory (100,000 empty files: 99 MiB of slab, in no count), hence the cap."""
    size = SHM_LIMIT_BYTES
    try:
        size = min(size, int((spec or {}).get("memory_limit") or size))
    except (TypeError, ValueError):
        pass
    return f"size={max(size, 1 << 20)},nr_inodes={SHM_INODES_LIMIT},mode=1777"


def minimal_dev(gpu, private_shm, report, spec=None):
    """Replace /dev with a tmpfs holding only what a worker needs, each node bound from the
    host's: the basic character devices, the GPU's nodes for a GPU worker, a /dev/shm (private,
    or the host's when ``private_shm`` is False) and the usual symlinks. Everything else (disks,
    consoles, terminals, /dev/kmsg, /dev/kvm...) is not there: as root, a worker could otherwise
    open raw block devices (the user namespace maps it to the real root, and the host's /dev
    mount allows device access). Returns True when it is in force."""
    names = list(DEV_NODES)
    try:
        listing = os.listdir("/dev")
    except OSError as exc:
        report["errors"].append(f"/dev: {exc}")
        return False
    if gpu:
        names += sorted(n for n in listing if n.startswith(GPU_DEV_PREFIXES))
    held = {}
    try:
        for n in names:
            p = os.path.join("/dev", n)
            if os.path.exists(p) and not os.path.islink(p):
                held[n] = os.open(p, os.O_PATH | (os.O_DIRECTORY if os.path.isdir(p) else 0))
        shm = None if private_shm or not os.path.isdir("/dev/shm") else os.open("/dev/shm", os.O_PATH | os.O_DIRECTORY)
        try:
            _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
        except OSError as exc:
            report["errors"].append(f"minimal /dev: {exc}")
            if shm is not None:
                os.close(shm)
            return False
        for n, fd in held.items():
            target = os.path.join("/dev", n)
            try:
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.mkdir(target)
                    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
                else:
                    open(target, "wb").close()
                    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND)
            except OSError as exc:
                report["errors"].append(f"/dev/{n}: {exc}")
                continue
            # each node is the HOST's inode: a bind of it stays writable (a mount of its own, not
            # covered by the read-only /dev below) and, as root, the worker owns it: chmod 000 of
            # /dev/null inside reached every program of the machine. Read-only, nosuid, noexec: its
            # data (a character device's reads and writes) is untouched, its metadata is not writable
            try:
                _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC
                       | _locked_flags(target))
            except OSError as exc:
                report["errors"].append(f"/dev/{n} read-only: {exc}")
        os.mkdir("/dev/shm", 0o1777)
        if shm is not None:
            _mount(f"/proc/self/fd/{shm}", "/dev/shm", None, MS_BIND | MS_REC)
            os.close(shm)
        else:
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, shm_options(spec))
        for link, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
            os.symlink(to, os.path.join("/dev", link))
        # nothing more is created there (the nodes bound on it and /dev/shm are mounts of their own)
        _mount(None, "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        report["dev_nodes"] = sorted(held)
        return True
    finally:
        for fd in held.values():
            try:
                os.close(fd)
            except OSError:
                pass


_SYSCALLS = {"x86_64": {"pivot_root": 155, "keyctl": 250}, "aarch64": {"pivot_root": 41, "keyctl": 219},
             "ppc64le": {"pivot_root": 203, "keyctl": 271}}
KEYCTL_JOIN_SESSION_KEYRING = 1
MNT_DETACH = 2


def _syscall_nr(name):
    import platform

    return _SYSCALLS.get(platform.machine(), {}).get(name)


def new_session_keyring():
    """Join a fresh, empty, anonymous session keyring (keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)):
    the keys of the session ktui was started from (and so of the user's login) are out of reach
    through @s; @u and @us are the user namespace's own (empty) ones. True when in force."""
    nr = _syscall_nr("keyctl")
    if nr is None:
        return False
    lc = libc()
    lc.syscall.restype = ctypes.c_long
    r = lc.syscall(ctypes.c_long(nr), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None),
                   ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    return r >= 0


def _pivot_root(new, old):
    nr = _syscall_nr("pivot_root")
    if nr is None:
        raise OSError(0, "pivot_root: unknown syscall number on this machine")
    lc = libc()
    lc.syscall.restype = ctypes.c_long
    if lc.syscall(ctypes.c_long(nr), ctypes.c_char_p(_enc(new)), ctypes.c_char_p(_enc(old))) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "pivot_root: " + os.strerror(e))


def _base_for_root(avoid):
    """An existing folder to mount the new root's tmpfs on (hidden once the old root is gone)."""
    for p in ("/mnt", "/media", "/srv", "/boot", "/run", "/var", "/opt", "/home"):
        if os.path.isdir(p) and not os.path.islink(p) and not any(_under(a, [p]) or _under(p, [a]) for a in avoid):
            return p
    raise OSError(0, "no folder to build the worker's root on")


#: folders of the worker's root in which whatever others may not read (no o+r bit) is hidden: as
#: root, a worker (its capabilities dropped, but still the files' owner) would read /etc/shadow,
#: gshadow, security/opasswd, ssl/private's keys, ssh's host keys
HIDE_UNREADABLE_UNDER = ("/etc",)


def _hide_unreadable(src, target, report, limit=20000):
    """Cover, below ``target`` (the bind of ``src``), each regular file others may not read with
    /dev/null and each such folder with an empty read-only tmpfs."""
    import stat

    n = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        for name in list(dirnames) + filenames:
            n += 1
            if n > limit:
                report["errors"].append(f"{src}: more than {limit} entries, the rest not checked")
                return
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if st.st_mode & stat.S_IROTH or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                continue
            dst = target + p[len(src):]
            try:
                if stat.S_ISDIR(st.st_mode):
                    dirnames.remove(name)
                    _mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
                else:
                    _mount("/dev/null", dst, None, MS_BIND)
                report["hidden"].append(p)
            except (OSError, ValueError) as exc:
                report["errors"].append(f"{p}: {exc}")


def own_root(spec, report):
    """Give this process (in its own user + mount namespace) a root of its own: an empty tmpfs
    holding, at their own paths, only the toolchain (read-only), its temp dir and the folders of
    ``spec["binds"]`` (writable), /proc (its PID namespace's), /dev (the minimal one) and an empty
    /tmp; then pivot_root into it and detach the old root. Nothing else of the host exists for
    it: not the user's home, not /tmp's or /run's sockets, not the folders next to a trace; and
    /proc/self/mountinfo names only what it holds."""
    writable = [(p, p) for p in spec["rw"] if os.path.isdir(p)]
    writable += [(a, b) for a, b in spec.get("binds") or [] if os.path.isdir(a)]
    ro = [(p, p) for p in spec.get("toolchain") or [] if os.path.exists(p)
          and not any(_under(p, [w]) for w, _ in writable)]
    ro.append(("/dev", "/dev"))
    # every source opened first: the tmpfs below may be mounted over one of their parents
    held = []
    for src, dst in sorted(ro + writable, key=lambda x: x[1].count("/")):
        isdir = os.path.isdir(src)
        held.append((os.open(src, os.O_PATH | (os.O_DIRECTORY if isdir else 0)), src, dst, isdir))
    proc_fd = os.open("/proc", os.O_PATH | os.O_DIRECTORY)
    try:
        base = _base_for_root([w for w, _ in writable] + [d for _f, _s, d, _i in held])
        _mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        for fd, src, dst, isdir in held:
            target = base + dst
            try:
                if isdir:
                    os.makedirs(target, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    if not os.path.exists(target):
                        open(target, "wb").close()
                if dst == "/sys" and mount_sysfs(target, spec, report):
                    continue
                _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
                if (src, dst) in writable:
                    report["writable"].append(dst)
            except OSError as exc:
                report["errors"].append(f"{dst}: {exc}")
        for _fd, src, dst, isdir in held:
            if dst in HIDE_UNREADABLE_UNDER and isdir:
                _hide_unreadable(src, base + dst, report)
        # what must stay hidden inside a folder this root shows (ktui's caches under the Python prefix
        # or a PYTHONPATH folder): an empty tmpfs over it; one that cannot be hidden ends the root
        for p in spec.get("mask") or []:
            if any(_under(p, [w]) for w, _ in writable) or not os.path.lexists(base + p):
                continue
            if os.path.isdir(base + p):
                _mount("tmpfs", base + p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0555")
            else:
                _mount("/dev/null", base + p, None, MS_BIND)
            report["masked"].append(p)
        # the top-level links of a merged /usr (/bin -> usr/bin, /lib64 -> usr/lib64, ...)
        for name in os.listdir("/"):
            p = "/" + name
            if os.path.islink(p) and not os.path.lexists(base + p):
                try:
                    os.symlink(os.readlink(p), base + p)
                except OSError:
                    pass
        os.makedirs(base + "/tmp", exist_ok=True)
        os.chmod(base + "/tmp", 0o755)
        os.makedirs(base + "/proc", exist_ok=True)
        _mount("/proc/self/fd/%d" % proc_fd, base + "/proc", None, MS_BIND | MS_REC)
        os.chdir(base)
        _pivot_root(".", ".")
        libc().umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        if libc().umount2(b".", MNT_DETACH) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "umount old root: " + os.strerror(e))
        os.chdir("/")
        report["own_root"] = True
        report["visible"] = sorted({d for _f, _s, d, _i in held} | {"/proc", "/tmp"})
    finally:
        for fd, *_ in held:
            try:
                os.close(fd)
            except OSError:
                pass
        os.close(proc_fd)


def enter(private_shm=True):
    """The worker's prologue: call before importing torch or loading any trace code.
    `private_shm=False` keeps /dev/shm as the process that started this one sees it (a profiled
    target shares it with ncu, which runs in the same sandbox). Returns what is in force (data
    for the judge's words)."""
    report = {"pdeathsig": set_pdeathsig(signal.SIGKILL), "pid_namespace": False, "mounts": False,
              "read_only": 0, "read_only_failed": [], "masked": [], "writable": [], "caps_dropped": False,
              "net_namespace": False, "dev_writable": False, "errors": [], "own_root": False,
              "session_keyring": False, "nproc_in_namespace": False, "ipc_namespace": False, "ns_limits": [],
              "hidden": [], "proc_read_only": [], "proc_masked": []}
    raw = os.environ.pop(SPEC_ENV, None)
    spec = json.loads(raw) if raw else None
    # a fresh session keyring, with or without namespaces (the keys of ktui's session stay out)
    report["session_keyring"] = new_session_keyring()
    try:
        report["pid_namespace"] = in_own_pid_namespace(spec)
    except OSError:
        pass
    try:
        import socket

        report["net_namespace"] = [n for _i, n in socket.if_nameindex()] == ["lo"]
    except OSError:
        pass
    if not spec or not report["pid_namespace"]:
        return report
    # processes and threads: counted per user namespace (Linux >= 5.14 keeps RLIMIT_NPROC per
    # namespace), so set here, inside it, this worker's tree has its own count: a fork or thread
    # bomb in one worker does not stop the other (the launcher sets no RLIMIT_NPROC, which would
    # be checked against the user's count over the whole machine)
    try:
        import resource

        n = int(spec.get("nproc") or NPROC_LIMIT)
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        v = n if hard == resource.RLIM_INFINITY else min(n, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (v, v))
        report["nproc_in_namespace"] = True
    except (ValueError, OSError):
        pass
    limit_namespaces(spec, report)
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
    except OSError as exc:
        report["errors"].append(str(exc))
        return report
    gpu = spec.get("device", "cpu") != "cpu"
    if os.environ.get(HOST_DEV_ENV) == "1":  # the escape hatch (said in the result)
        dev_ok = False
        report["errors"].append(f"{HOST_DEV_ENV}=1: the host's /dev is kept")
    else:
        dev_ok = minimal_dev(gpu, private_shm, report, spec)
    report["minimal_dev"] = dev_ok
    ours = set()
    if dev_ok:
        ours.add("/dev")
    elif private_shm and os.path.isdir("/dev/shm"):
        try:
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, shm_options(spec))
            ours.add("/dev/shm")
        except OSError as exc:
            report["errors"].append(str(exc))
    keep_dev = gpu and not dev_ok  # the host's /dev stays as it is for the GPU's device nodes
    report["dev_writable"] = keep_dev
    rw_inside = list(spec["rw"])
    if spec.get("root"):
        try:
            own_root(spec, report)
            rw_inside += [b for _a, b in spec.get("binds") or []]
        except OSError as exc:
            report["errors"].append(f"own root: {exc}")
            report["own_root"] = False
            return report  # never half a sandbox: the judge refuses a worker without its own root
    else:
        _mask_and_bind(spec, report)
    harden_proc(report)
    rw = [p for p in rw_inside if os.path.isdir(p)]
    for mp in sorted(set(_mount_points())):
        # /dev is skipped either way: the minimal one is read-only already, the host's is kept
        if mp in ours or _under(mp, rw) or _under(mp, ["/proc"]) or ((dev_ok or keep_dev) and _under(mp, ["/dev"])):
            continue
        try:
            _mount(None, mp, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(mp))
            report["read_only"] += 1
        except OSError as exc:
            report["read_only_failed"].append(f"{mp}: {exc.strerror}")
    report["mounts"] = True
    try:
        os.chdir(spec["work_dir"])  # the cwd still pointed into the mount below the writable bind
    except OSError as exc:
        report["errors"].append(f"chdir: {exc}")
    try:
        drop_capabilities()
        report["caps_dropped"] = True
    except OSError as exc:
        report["errors"].append(str(exc))
    report["keys_denied"] = deny_key_syscalls(report)
    return report


def _mask_and_bind(spec, report):
    """The fallback without a root of its own (the profiler's target): the host's tree with the
    credential folders and ktui's cache under empty tmpfs mounts, the writable folders bound back."""
    rw = [p for p in spec["rw"] if os.path.isdir(p)]
    held = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in rw}
    for p in spec["mask"]:
        if any(_under(p, [r]) for r in rw):
            continue
        try:
            if os.path.isdir(p):
                _mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k,mode=0555")
            else:
                _mount("/dev/null", p, None, MS_BIND)
            report["masked"].append(p)
        except OSError as exc:
            report["errors"].append(str(exc))
    for p, fd in held.items():
        try:
            os.makedirs(p, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
            report["writable"].append(p)
        except OSError as exc:
            report["errors"].append(str(exc))
        finally:
            os.close(fd)


def _namespace(kind):
    try:
        return os.readlink(f"/proc/self/ns/{kind}")
    except OSError:
        return None


def _pid_namespace():
    return _namespace("pid")


#: what the worker's own IPC namespace may hold (the launcher gives it one: unshare --ipc). A SysV
#: segment or message queue nobody maps or reads is in no process's RSS, so the watchdog cannot
#: count it: these caps bound it instead (64 MiB of SysV shared memory in at most 64 segments,
#: 16 message queues of 16 KiB, 16 POSIX queues; ktui, torch and CUDA use none of them). And no
#: nested user namespace (``user/max_user_namespaces`` 0): in one the kernel would be root again,
#: with an IPC namespace of its own whose caps are the kernel's defaults.
#: inotify instances and watches of the worker's user namespace. The kernel counts them per user
#: up the namespace tree: without a cap of its own, a worker took all 128 of the host user's
#: instances (fs.inotify.max_user_instances) and the user's other programs (an editor, a file
#: manager, systemd's user units) got EMFILE until it ended; with it, at most these many
INOTIFY_INSTANCES = 16
INOTIFY_WATCHES = 8192


def _ipc_limits():
    page = os.sysconf("SC_PAGE_SIZE")
    return (("kernel/shmmax", 64 << 20), ("kernel/shmall", (64 << 20) // page), ("kernel/shmmni", 64),
            ("kernel/msgmni", 16), ("kernel/msgmnb", 16384), ("fs/mqueue/queues_max", 16),
            ("user/max_user_namespaces", 0), ("user/max_inotify_instances", INOTIFY_INSTANCES),
            ("user/max_inotify_watches", INOTIFY_WATCHES))


def limit_namespaces(spec, report):
    """Inside the worker's own user namespace, before its capabilities are dropped: check that its
    IPC namespace is not ktui's (the host's SysV segments and queues, and the user's other programs'
    ones, are out of reach, and what the kernel creates there ends with it) and lower that
    namespace's IPC caps and the nested-user-namespace count (:func:`_ipc_limits`). Fills
    ``report["ipc_namespace"]`` and ``report["ns_limits"]`` (the sysctls that took)."""
    def own(kind):
        host, here = (spec or {}).get(f"host_{kind}ns"), _namespace(kind)
        return bool(host and here and host != here)

    report["ipc_namespace"] = own("ipc")
    own_user = own("user")
    done = []
    for name, value in _ipc_limits():
        if not (report["ipc_namespace"] if name.startswith(("kernel/", "fs/")) else own_user):
            continue  # never the host's own caps
        path = "/proc/sys/" + name
        try:
            with open(path) as fh:
                now = int(fh.read().split()[0])
            if now > value:
                with open(path, "w") as fh:
                    fh.write(str(value))
            done.append(name)
        except (OSError, ValueError) as exc:
            report["errors"].append(f"{path}: {exc}")
    report["ns_limits"] = done
    if own("uts"):  # the machine's name is the user's (alice-laptop): a name of its own
        try:
            import socket

            socket.sethostname("ktui-worker")
            report["hostname"] = True
        except OSError as exc:
            report["errors"].append(f"hostname: {exc}")


def in_own_pid_namespace(spec):
    """Whether this process runs in a PID namespace other than the one ktui launched it from: the
    namespace's identity against the one ktui recorded in the spec. (Not "am I PID 1 or 2": under
    ncu, which starts helper processes first, the profiled worker is PID 7 or so in its namespace,
    and that test made it skip every mount of the sandbox.) Without a recorded identity: PID 1 or 2,
    or a namespace nested below the one /proc shows."""
    host = (spec or {}).get("host_pidns")
    own = _pid_namespace()
    if host and own:
        return own != host
    return os.getpid() <= 2 or _nspid_depth() > 1


def _nspid_depth():
    with open("/proc/self/status") as fh:
        for ln in fh:
            if ln.startswith("NSpid:"):
                return len(ln.split()) - 1
    return 1
