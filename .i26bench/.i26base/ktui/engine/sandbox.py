# ---- ktui repro harness: the sandbox around trace code --------------------------------------
# Two halves:
#
# - the launcher (judge side, ktui code): `detect()` finds what this machine allows; `Spec` says
#   what one worker may touch; `launch(spec, argv)` starts the worker under
#   `unshare --user --map-root-user --pid --fork --mount-proc --net --kill-child` (when user
#   namespaces work) with an allow-listed environment, rlimits, PR_SET_PDEATHSIG, its own session,
#   stdin from /dev/null and stdout/stderr into pipes the judge reads with a byte cap; a watchdog
#   ends the worker tree on too much memory, too many processes or too much output; `kill` ends
#   every descendant (PID namespace, plus a /proc sweep of the tree).
# - the prologue (`enter`, inside the worker, before torch or any trace code): makes every mount
#   read-only but the worker's private temp dir (and, for a build step, that kernel's own build
#   directory), hides ktui's cache and the usual credential folders under empty tmpfs mounts,
#   gives it a private /dev/shm, then drops every capability (bounding set, securebits,
#   no_new_privs) so the kernel cannot undo any of it: mounts made here are locked for any user
#   namespace the kernel creates.
#
# `describe()` turns what was really in force into words; nothing more is ever claimed.
# Stdlib only. MIT license, part of ktui.
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from .defaults import (
    CPU_LIMIT_S,
    FILE_SIZE_LIMIT_BYTES,
    MEMORY_LIMIT_BYTES,
    NPROC_LIMIT,
    OPEN_FILES_LIMIT,
    OUTPUT_CAP_BYTES,
    OUTPUT_TAIL_BYTES,
    WATCHDOG_PERIOD_S,
)

SPEC_ENV = "KTUI_SANDBOX_SPEC"
UNSHARE_ARGS = ["--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net", "--kill-child=SIGKILL"]

#: environment variables a worker may see, by exact name (everything else is dropped; never by
#: prefix: a name like LC_MYCOMPANY_PROD_PW or TRITON_REMOTE_CACHE_URL must not pass)
ENV_ALLOW = {"PATH", "LANG", "LANGUAGE", "TZ", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE",
             "LC_MONETARY", "LC_MESSAGES", "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
             "LC_IDENTIFICATION", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME",
             "LD_LIBRARY_PATH", "TORCH_CUDA_ARCH_LIST", "CC", "CXX", "MAX_JOBS", "OMP_NUM_THREADS",
             "MKL_NUM_THREADS", "VIRTUAL_ENV", "CONDA_PREFIX", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
             "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "CUBLAS_WORKSPACE_CONFIG",
             "TRITON_PTXAS_PATH", "NCCL_NVLS_ENABLE", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_DEBUG",
             "TORCH_USE_CUDA_DSA", "TORCH_SHOW_CPP_STACKTRACES", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "KTUI_TEST_SANDBOX_LEVEL", "KTUI_WORKER_NICE"}
#: folders of credentials hidden (an empty tmpfs over them) when they exist (the fallback when the
#: worker cannot be given a root of its own: see :func:`enter`)
SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure", ".config/gcloud", ".config/gh",
               ".password-store", ".git-credentials", ".netrc", ".pgpass", ".npmrc", ".pypirc")
#: where a worker's build directory appears inside its own root (one path for every run, so that
#: ninja finds a cached build up to date instead of rebuilding it because its paths changed)
BUILD_MOUNT = "/ktui-build"

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096
_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return _libc


def prctl(op, a=0, b=0, c=0, d=0):
    r = libc().prctl(op, a, b, c, d)
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def set_pdeathsig(sig=signal.SIGKILL):
    try:
        prctl(PR_SET_PDEATHSIG, int(sig))
        return True
    except OSError:
        return False


# ---- what this machine allows ------------------------------------------------------------------

_detected = None


def detect():
    """{"unshare": path or None, "namespaces": bool, "why": str} (cached per process)."""
    global _detected
    if _detected is not None:
        return _detected
    level = os.environ.get("KTUI_TEST_SANDBOX_LEVEL", "")
    path = shutil.which("unshare")
    info = {"unshare": path, "namespaces": False, "why": ""}
    if level == "none":
        info["why"] = "namespaces turned off (KTUI_TEST_SANDBOX_LEVEL=none)"
    elif path is None:
        info["why"] = "no unshare(1) on this machine"
    elif sys.platform != "linux":
        info["why"] = "not Linux"
    else:
        try:
            out = subprocess.run([path, *UNSHARE_ARGS, "true"], capture_output=True, timeout=20)
            info["namespaces"] = out.returncode == 0
            if out.returncode != 0:
                info["why"] = "user namespaces are not allowed here: " + out.stderr.decode(errors="replace")[:200].strip()
        except (OSError, subprocess.SubprocessError) as exc:
            info["why"] = f"unshare failed: {exc}"
    _detected = info
    return info


class Spec:
    """What one worker may touch. ``binds``: (host path, path inside the worker) pairs of
    writable folders shown at another path (the build directory at BUILD_MOUNT); ``root``: give
    the worker a root of its own holding only the toolchain, its temp dir and those folders
    (False: the host's tree, read-only, with ``mask`` hidden: the profiler's fallback)."""

    def __init__(self, work_dir, *, rw=(), mask=(), device="cpu", memory_limit=None, output_cap=OUTPUT_CAP_BYTES,
                 nproc=NPROC_LIMIT, file_size=FILE_SIZE_LIMIT_BYTES, cpu_s=CPU_LIMIT_S, env=None, python_path=(),
                 binds=(), root=True, argv=()):
        self.work_dir = os.path.realpath(work_dir)
        self.rw = [os.path.realpath(p) for p in rw]
        self.mask = [os.path.realpath(p) for p in mask]
        self.binds = [(os.path.realpath(a), b) for a, b in binds]
        self.device = device or "cpu"
        self.memory_limit = int(memory_limit or default_memory_limit())
        self.output_cap = int(output_cap)
        self.nproc = int(nproc)
        self.file_size = int(file_size)
        self.cpu_s = int(cpu_s)
        self.env = dict(env or {})
        self.python_path = list(python_path)
        self.root = bool(root)
        self.argv = list(argv)

    def inner(self):
        """What the prologue inside the worker needs (JSON in the environment)."""
        # (with a root of its own nothing is masked: the list, which names folders of the home,
        # is not even passed, since /proc/self/environ keeps what the worker was started with)
        return {"work_dir": self.work_dir, "rw": [self.work_dir] + self.rw, "mask": [] if self.root else self.mask,
                "binds": [list(b) for b in self.binds], "device": self.device, "host_pidns": _pid_namespace(),
                "nproc": self.nproc, "root": self.root,
                "toolchain": toolchain_paths(self.python_path, self.argv) if self.root else []}


def _python_prefixes():
    out = []
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))):
        if p and p not in ("/",):
            rp = os.path.realpath(p)
            if rp not in out:
                out.append(rp)
    return out


#: system folders a worker's own root holds (read-only), when they exist: programs, libraries,
#: compilers and headers, the CUDA toolkit under /usr/local, /etc (loader cache, passwd), /sys
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


def _ktui_package_dir():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def toolchain_paths(python_path=(), argv=()):
    """What a worker's own root holds besides its temp and build dirs: the system folders, the
    Python prefixes, the judge's import path (site-packages, the folders .pth files add), ktui's
    own package (never the folder around it: a repository checkout's other files stay out), the
    CUDA toolkit, PATH's folders and the files the worker's command names. Entries under the
    user's home are left out unless Python itself lives there. Sorted, real paths."""
    home = _home()
    prefixes = _python_prefixes()
    pkg = _ktui_package_dir()
    pkg_parent = os.path.dirname(pkg)
    out = set()

    def add(p, force=False):
        if not p:
            return
        rp = os.path.realpath(p)
        if rp == "/" or not os.path.exists(rp):
            return
        if rp == pkg_parent:  # the checkout holding ktui: only ktui itself
            rp = pkg
        if not force and _under(rp, home) and not _under(rp, prefixes):
            return
        if _under(rp, [tempfile_root()]) and not _under(rp, prefixes):
            return  # the temp folder: only the worker's own dir (bound on its own)
        out.add(rp)

    for p in SYSTEM_PATHS:
        if os.path.lexists(p) and not os.path.islink(p):
            out.add(p)
    for p in prefixes:
        add(p, force=True)
    add(pkg, force=True)
    cwd = os.path.realpath(os.getcwd())
    for p in list(sys.path) + list(python_path):
        if p and os.path.realpath(p) != cwd or p in python_path:
            add(p)
    for k in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME", "CONDA_PREFIX", "VIRTUAL_ENV"):
        add(os.environ.get(k))
    for p in os.environ.get("PATH", "").split(os.pathsep) + os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if p and os.path.isdir(p):
            add(p)
    for a in argv:
        if isinstance(a, str) and a.startswith("/") and os.path.isfile(a):
            add(a, force=True)
    # nested entries are covered by their parent's (recursive) bind
    ordered = sorted(out)
    keep = []
    for p in ordered:
        if not any(_under(p, [k]) for k in keep):
            keep.append(p)
    return keep


def tempfile_root():
    import tempfile

    return os.path.realpath(tempfile.gettempdir())


def default_memory_limit():
    try:
        with open("/proc/meminfo") as fh:
            for ln in fh:
                if ln.startswith("MemTotal:"):
                    total = int(ln.split()[1]) * 1024
                    return min(MEMORY_LIMIT_BYTES, total // 2)
    except (OSError, ValueError):
        pass
    return MEMORY_LIMIT_BYTES


def default_masks(extra=()):
    """ktui's cache and the credential folders of the home directory (those that exist)."""
    home = os.path.expanduser("~")
    out = []
    for d in SECRET_DIRS:
        p = os.path.join(home, d)
        if os.path.exists(p):
            out.append(p)
    for p in extra:
        if p and os.path.exists(p):
            out.append(p)
    return out


def allowed_env(name, value=""):
    """Whether a variable reaches a worker: its exact name is in ENV_ALLOW, and its value holds no
    credential (a URL with a user:password@ part)."""
    return name in ENV_ALLOW and not _URL_CREDENTIALS.search(value or "")


_URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s]*:[^/@\s]*@")
_SECRETISH = re.compile(r"KEY|TOKEN|SECRET|PASS|CRED|AUTH", re.I)


def is_secret_name(name):
    """Whether an environment variable's name looks like it holds a credential (KEY, TOKEN,
    SECRET, PASS, CRED, AUTH, any case): such a variable never reaches a worker."""
    return bool(_SECRETISH.search(name))


def _home():
    import pwd

    out = {os.path.realpath(os.path.expanduser("~"))}
    try:
        out.add(os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir))
    except (KeyError, OSError):
        pass
    return sorted(p for p in out if p and p != "/")


def _clean_path_list(value, hidden):
    """A PATH-like list without the entries under ``hidden`` (the user's home: a worker is not
    told where it is, and cannot see it)."""
    prefixes = _python_prefixes()
    keep = [p for p in value.split(os.pathsep)
            if p and (not _under(os.path.realpath(p), hidden) or _under(os.path.realpath(p), prefixes))]
    return os.pathsep.join(keep)


def worker_env(spec):
    env = {k: v for k, v in os.environ.items() if allowed_env(k, v)}
    hidden = _home()
    for k in ("PATH", "LD_LIBRARY_PATH"):
        if k in env:
            env[k] = _clean_path_list(env[k], hidden)
    env["HOME"] = spec.work_dir
    env["TMPDIR"] = os.path.join(spec.work_dir, "tmp")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env["XDG_CACHE_HOME"] = os.path.join(spec.work_dir, "cache")
    if spec.python_path:
        env["PYTHONPATH"] = os.pathsep.join(spec.python_path)
    env.update(spec.env)
    env[SPEC_ENV] = json.dumps(spec.inner())
    return env


def command(spec, argv, prefix=()):
    """The command line that runs `argv` (a worker) inside the sandbox; `prefix` (e.g. an
    `ncu ...` command) runs inside it too, in front of the worker."""
    d = detect()
    inner = list(prefix) + list(argv)
    if d["namespaces"]:
        return [d["unshare"], *UNSHARE_ARGS, "--", *inner]
    return inner


def preexec(spec):
    """The ``preexec_fn`` of a sandboxed worker (run in the child before its exec): a session of
    its own, SIGKILL when ktui dies, and the rlimits of ``spec`` (file size, CPU time, open files,
    no core dumps; processes unless root; address space on the CPU). :func:`popen` uses it."""
    import resource

    libc()  # loaded before the fork: nothing in the child may take a lock

    def fn():
        os.setsid()
        set_pdeathsig(signal.SIGKILL)
        lim = [(resource.RLIMIT_FSIZE, spec.file_size), (resource.RLIMIT_CPU, spec.cpu_s),
               (resource.RLIMIT_NOFILE, OPEN_FILES_LIMIT), (resource.RLIMIT_CORE, 0)]
        if spec.device == "cpu":
            # address space: CUDA reserves terabytes of it, so only on the CPU
            lim.append((resource.RLIMIT_AS, spec.memory_limit + (4 << 30)))
        for what, value in lim:
            try:
                soft, hard = resource.getrlimit(what)
                v = value if hard == resource.RLIM_INFINITY else min(value, hard)
                resource.setrlimit(what, (v, v))
            except (ValueError, OSError):
                pass
    return fn


def popen(spec, cmd, stdout, stderr, pass_fds=()):
    """Start ``cmd`` (a :func:`command` line) as a sandboxed worker: in ``spec.work_dir`` (its
    ``tmp/`` made first), with :func:`worker_env` and :func:`preexec`, stdin closed and no file
    descriptors but ``pass_fds``. Returns the ``subprocess.Popen``."""
    os.makedirs(os.path.join(spec.work_dir, "tmp"), exist_ok=True)
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=spec.work_dir,
                            env=worker_env(spec), pass_fds=tuple(pass_fds), preexec_fn=preexec(spec),
                            close_fds=True)


class Launched:
    """A running sandboxed worker: its process, output tails and the watchdog's verdict."""

    def __init__(self, spec, argv, pass_fds=(), prefix=()):
        self.spec = spec
        self.cmd = command(spec, argv, prefix)
        self.namespaces = detect()["namespaces"]
        self.proc = popen(spec, self.cmd, subprocess.PIPE, subprocess.PIPE, pass_fds)
        self.output_bytes = 0
        self.limit_hit = None  # "memory" | "output" | "processes" with words
        self._tails = {"stdout": bytearray(), "stderr": bytearray()}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.peak_rss = 0
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, "stdout"), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, "stderr"), daemon=True)]
        for t in self._readers:
            t.start()
        self._watch = threading.Thread(target=self._watchdog, daemon=True)
        self._watch.start()

    def _read(self, stream, name):
        try:
            while True:
                chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not chunk:
                    break
                with self._lock:
                    self.output_bytes += len(chunk)
                    tail = self._tails[name]
                    tail += chunk
                    if len(tail) > OUTPUT_TAIL_BYTES:
                        del tail[: len(tail) - OUTPUT_TAIL_BYTES]
                    over = self.output_bytes > self.spec.output_cap and self.limit_hit is None
                    if over:
                        self.limit_hit = ("output_limit", f"printed more than {self.spec.output_cap >> 20} MiB "
                                                          "on stdout/stderr")
                if over:
                    self.kill()
        except (OSError, ValueError):
            return

    def tail(self, name="stderr"):
        with self._lock:
            return bytes(self._tails[name]).decode("utf-8", "replace")

    def tree(self):
        return descendants(self.proc.pid)

    def _watchdog(self):
        while not self._stop.wait(WATCHDOG_PERIOD_S):
            if self.proc.poll() is not None:
                return
            pids = self.tree()
            mem = tree_memory(pids)
            rss = mem["total"]
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_memory = max(getattr(self, "peak_memory", 0), rss)
            tasks = sum(_threads(p) for p in pids)
            why = None
            if rss > self.spec.memory_limit:
                why = ("memory_limit", f"used {rss / 2**30:.1f} GiB of host memory (limit "
                                       f"{self.spec.memory_limit / 2**30:.1f} GiB; memfds and shared memory "
                                       f"{mem['shared'] / 2**30:.1f} GiB of it)")
            elif tasks > self.spec.nproc:
                why = ("process_limit", f"started more than {self.spec.nproc} processes/threads ({len(pids)} "
                                        f"processes, {tasks} threads)")
            if why:
                with self._lock:
                    if self.limit_hit is None:
                        self.limit_hit = why
                self.kill()
                return

    def alive(self):
        return self.proc.poll() is None

    def drain(self, timeout):
        """Wait (at most ``timeout`` seconds) until stdout and stderr are read to their end."""
        end = time.monotonic() + timeout
        for t in self._readers:
            t.join(timeout=max(0.0, end - time.monotonic()))

    def kill(self):
        kill_tree(self.proc)

    def close(self):
        self._stop.set()
        self.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for t in self._readers:
            t.join(timeout=2)
        for s in (self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except OSError:
                pass


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


def _unmapped_memfds(pid, mapped, seen):
    """Bytes allocated to memfds this process holds open but nobody in the tree maps, each
    counted once: a memfd filled with write() is in nobody's RSS and under no RLIMIT_AS, but it
    is host memory all the same."""
    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in fds:
        p = f"/proc/{pid}/fd/{fd}"
        try:
            if not os.readlink(p).startswith("/memfd:"):
                continue
            st = os.stat(p)
        except OSError:
            continue
        key = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
        if key in mapped or key in seen:
            continue
        seen.add(key)
        total += st.st_blocks * 512
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
    mapped (by inode, once), and what its private /dev/shm holds. {"total", "shared"} in bytes."""
    rss = shmem = 0
    mapped, seen = set(), set()
    for p in pids:
        _mapped_shared(p, mapped)
    unmapped = 0
    for p in pids:
        st = _status_kb(p, ("RssAnon", "RssFile", "RssShmem"))
        rss += st["RssAnon"] + st["RssFile"]
        shmem += st["RssShmem"]
        unmapped += _unmapped_memfds(p, mapped, seen)
    dev_shm = _shm_used(pids)
    shared = shmem + unmapped + dev_shm
    return {"total": rss + shared, "shared": shared}


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


# ---- inside the worker ---------------------------------------------------------------------------

def _unescape(p):
    return p.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _mount_points():
    with open("/proc/self/mountinfo") as fh:
        return [_unescape(ln.split()[4]) for ln in fh if len(ln.split()) > 4]


def _enc(s):
    return s.encode() if isinstance(s, str) else s


def _mount(src, target, fstype, flags, data=None):
    enc = _enc
    r = libc().mount(enc(src), enc(target), enc(fstype), flags, enc(data))
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {target}: {os.strerror(e)}")


def _locked_flags(path):
    f = os.statvfs(path).f_flag
    out = f & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    if f & ST_RELATIME:
        out |= MS_RELATIME
    return out


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


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


def minimal_dev(gpu, private_shm, report):
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
        os.mkdir("/dev/shm", 0o1777)
        if shm is not None:
            _mount(f"/proc/self/fd/{shm}", "/dev/shm", None, MS_BIND | MS_REC)
            os.close(shm)
        else:
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=1777")
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
                _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC)
                if (src, dst) in writable:
                    report["writable"].append(dst)
            except OSError as exc:
                report["errors"].append(f"{dst}: {exc}")
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
              "session_keyring": False, "nproc_in_namespace": False}
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
        dev_ok = minimal_dev(gpu, private_shm, report)
    report["minimal_dev"] = dev_ok
    ours = set()
    if dev_ok:
        ours.add("/dev")
    elif private_shm and os.path.isdir("/dev/shm"):
        try:
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=1777")
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


def _pid_namespace():
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


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


# ---- in words ---------------------------------------------------------------------------------

def planned(device="cpu"):
    """What a worker started now would get, before it starts (for the confirmation dialog)."""
    d = detect()
    words = ["a fresh process per kernel for the reference and for the candidate",
             "an environment allow-listed by exact name (no credentials; HOME and TMPDIR in its temp dir)",
             "stdin from /dev/null, stdout/stderr captured (at most "
             f"{OUTPUT_CAP_BYTES >> 20} MiB)",
             f"limits: host memory {default_memory_limit() / 2**30:.0f} GiB for the worker tree (memfds and "
             "shared memory counted), "
             f"files {FILE_SIZE_LIMIT_BYTES >> 30} GiB each, CPU time {CPU_LIMIT_S} s, "
             f"{NPROC_LIMIT} processes and threads (each worker its own count" + (
                 "; watchdog only: root is exempt from RLIMIT_NPROC" if os.getuid() == 0 else "") + ")",
             "killed with ktui (PR_SET_PDEATHSIG, SIGTERM/SIGHUP handlers)"]
    if d["namespaces"]:
        words += ["a root of its own: only the toolchain (system folders, Python, ktui), its temp dir and "
                  "its build dir are there, read-only but the last two; no home (HOME is its temp dir), no "
                  "/tmp, /run or home sockets (no ssh-agent), nothing next to the trace",
                  "its own session keyring (the keys of your session are out of reach)",
                  "own PID namespace (every descendant, setsid daemons included, dies with it; "
                  "ktui's /proc out of reach)",
                  "no network (own network namespace)",
                  "a minimal /dev (null, zero, full, random, urandom" + (", the GPU's nvidia* nodes"
                                                                          if device != "cpu" else "")
                  + "; no disks, consoles or terminals)",
                  "builds in a throwaway folder: ktui copies the result into its cache (regular files only)",
                  "capabilities dropped"]
    else:
        words += [f"NO namespaces ({d['why']}): trace code can read and write whatever this user can, "
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
            ro += (f" ({len(failed)} mount(s) left writable: " + ", ".join(failed[:3])
                   + (", ..." if len(failed) > 3 else "") + ")")
        out.append(ro)
    if report.get("minimal_dev"):
        out.append(f"a minimal /dev ({len(report.get('dev_nodes') or [])} device nodes)")
    if report.get("own_root"):
        out.append("its own root (toolchain, temp and build dirs only: no home, no sockets of the user)")
    if report.get("masked"):
        out.append(f"{len(report['masked'])} folder(s) hidden (cache, credentials)")
    if report.get("session_keyring"):
        out.append("its own session keyring")
    if report.get("caps_dropped"):
        out.append("capabilities dropped")
    if report.get("pdeathsig"):
        out.append("dies with its parent")
    out.append("allow-listed env")
    out.append("rlimits + memory/output watchdog")
    return out
