# ---- ktui repro harness: the content-addressed build cache, judge side ----------------------
# A kernel builds in a throwaway folder (the judge's temp dir, shown to the candidate worker at
# sandbox.BUILD_MOUNT); the judge, never a worker, copies it into the cache after the build, with
# the candidate stopped, and copies a cached build into the next throwaway folder. A copy holds
# regular files and folders only: no set-uid / set-gid / sticky bits, no write bits for group or
# others, no device files, FIFOs, sockets or symbolic links (in or out), within a size and count
# budget; torch's lock files stay behind. Nothing a kernel writes once it saw a judged input reaches
# the cache: the worker only ever writes to its throwaway copy, and the judge copies from it after the
# build and, for Triton's cache (JIT_CACHE), right after the kernel's warm-up call, whose inputs come
# from the public init seed (publish_jit). And of what the build left, only the build's own
# outputs, by name (build_outputs): in each extension folder of the key (NAME_k<key[:10]>, what
# build.BuildPatch names it) torch's files (the extension NAME_k<key>.so, build.ninja, ninja's log
# and deps, the load_inline sources, object files), and Triton's cache entries (triton/<hash>/<file>
# of Triton's kinds); a sitecustomize.py, a .pth, a libc10.so copy or any other file a kernel
# planted at import stays in the throwaway folder.
# Stdlib only. MIT license, part of ktui.
import os
import re
import shutil
import stat
import tempfile
import time

MAX_BYTES = 1 << 30  # one build, all files
MAX_FILES = 20000
MAX_DEPTH = 24
SKIP_NAMES = {"lock"}


class TooLarge(Exception):
    pass


# torch's files in an extension's build folder (cpp_extension: load_inline writes main.cpp / cuda.cu,
# ninja build.ninja, .ninja_log, .ninja_deps, one object per source, the extension NAME.so)
TORCH_FILES = {"build.ninja", ".ninja_log", ".ninja_deps", "main.cpp", "cuda.cu", "cuda.cuh"}
_OBJECT = re.compile(r"^[A-Za-z0-9_.+-]{1,200}\.o$")
# Triton's cache (TRITON_CACHE_DIR = <build>/triton): one folder per hash, files of these kinds
_TRITON_DIR = re.compile(r"^[A-Za-z0-9_-]{8,100}$")
_TRITON_FILE = re.compile(r"^[A-Za-z0-9_.-]{1,200}\.(cubin|ptx|json|ttir|ttgir|llir|source|so|hsaco|amdgcn)$")
BINARY_SUFFIXES = (".so", ".cubin", ".hsaco")


def _entries(path):
    """(name, lstat) of a folder's entries, never following a link; [] when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        names = sorted(os.listdir(fd))
    except OSError:
        names = []
    finally:
        os.close(fd)
    out = []
    for n in names:
        try:
            out.append((n, os.lstat(os.path.join(path, n))))
        except OSError:
            continue
    return out


def build_outputs(path, key):
    """The build's own outputs in the build folder ``path`` for ``key`` (relative paths of regular
    files, sorted): torch's files in each extension folder NAME_k<key[:10]> (the extension itself
    only as NAME_k<key[:10]>.so) and Triton's cache entries. Everything else a kernel left there is
    not the build's: it is never stored."""
    out = []
    suffix = "_k" + str(key)[:10]
    for name, st in _entries(path):
        if not stat.S_ISDIR(st.st_mode):
            continue
        sub = os.path.join(path, name)
        if name.endswith(suffix) and len(name) > len(suffix):
            for f, fst in _entries(sub):
                if stat.S_ISREG(fst.st_mode) and (f == name + ".so" or f in TORCH_FILES or _OBJECT.match(f)):
                    out.append(os.path.join(name, f))
        elif name == "triton":
            for h, hst in _entries(sub):
                if not (stat.S_ISDIR(hst.st_mode) and _TRITON_DIR.match(h)):
                    continue
                for f, fst in _entries(os.path.join(sub, h)):
                    if stat.S_ISREG(fst.st_mode) and _TRITON_FILE.match(f):
                        out.append(os.path.join(name, h, f))
    return out


def has_binary(path, key=None):
    """Whether the build folder holds a built binary: with ``key``, one of the build's own outputs
    (an extension's .so by its name, or a Triton binary); without, any .so (the worker's own check
    of its folder)."""
    if key is not None:
        return any(p.endswith(BINARY_SUFFIXES) for p in build_outputs(path, key))
    for _root, _dirs, files in os.walk(path):
        if any(f.endswith((".so", ".pyd")) for f in files):
            return True
    return False


def copy_outputs(src, dst, key, max_bytes=MAX_BYTES, max_files=MAX_FILES, only=None):
    """Copy the build's own outputs (``build_outputs``) of ``src`` into the new folder ``dst`` (modes
    and times as copy_tree); ``only``: those under that top folder of it. Returns {"files", "bytes",
    "skipped"}, "skipped" naming what the build folder held that is not the build's (up to 20);
    raises TooLarge past the budget (``dst`` removed)."""
    keep = [p for p in build_outputs(src, key) if only is None or p.split(os.sep)[0] == only]
    stats = {"files": 0, "bytes": 0, "skipped": _not_kept(src, set(keep))}
    os.makedirs(dst, mode=0o755)
    try:
        for rel in keep:
            stats["files"] += 1
            if stats["files"] > max_files:
                raise TooLarge(f"more than {max_files} files")
            d = os.path.join(dst, rel)
            parts = rel.split(os.sep)
            for i in range(1, len(parts)):
                sd = os.path.join(dst, *parts[:i])
                if not os.path.isdir(sd):
                    os.mkdir(sd, 0o755)
            try:
                st = os.lstat(os.path.join(src, rel))
            except OSError:
                continue
            _copy_file(os.path.join(src, rel), d, st, stats, max_bytes)
    except TooLarge:
        shutil.rmtree(dst, ignore_errors=True)
        raise
    return stats


def _not_kept(src, keep, limit=20):
    out = []
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(root, f), src)
            if rel not in keep and f not in SKIP_NAMES:
                out.append(rel + " (not the build's)")
                if len(out) >= limit:
                    return out
    return out


def copy_tree(src, dst, max_bytes=MAX_BYTES, max_files=MAX_FILES):
    """Copy ``src`` into the new folder ``dst`` keeping only folders and regular files (modes
    reduced to rwx for the owner, r-x for the rest; modification times kept, so that ninja finds
    the copy up to date). Never follows a link. Returns {"files", "bytes", "skipped"}; raises
    TooLarge past the budget (``dst`` is then removed)."""
    stats = {"files": 0, "bytes": 0, "skipped": []}
    os.makedirs(dst, mode=0o755)
    try:
        _copy_dir(src, dst, stats, 0, max_bytes, max_files)
    except TooLarge:
        shutil.rmtree(dst, ignore_errors=True)
        raise
    return stats


def _copy_dir(src, dst, stats, depth, max_bytes, max_files):
    if depth > MAX_DEPTH:
        stats["skipped"].append(src + " (too deep)")
        return
    fd = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        names = sorted(os.listdir(fd))
    finally:
        os.close(fd)
    for name in names:
        s = os.path.join(src, name)
        d = os.path.join(dst, name)
        try:
            st = os.lstat(s)
        except OSError:
            continue
        if name in SKIP_NAMES:
            continue
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(d, 0o755)
            _copy_dir(s, d, stats, depth + 1, max_bytes, max_files)
            os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
        elif stat.S_ISREG(st.st_mode):
            stats["files"] += 1
            if stats["files"] > max_files:
                raise TooLarge(f"more than {max_files} files")
            _copy_file(s, d, st, stats, max_bytes)
        else:
            stats["skipped"].append(f"{name} ({_kind(st.st_mode)})")


def _copy_file(src, dst, st, stats, max_bytes):
    fi = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        fst = os.fstat(fi)
        if not stat.S_ISREG(fst.st_mode):  # swapped for something else since the lstat
            stats["skipped"].append(os.path.basename(src) + " (changed)")
            return
        mode = 0o755 if fst.st_mode & 0o111 else 0o644  # never set-uid/set-gid/sticky, never group/other-writable
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            while True:
                chunk = os.read(fi, 1 << 20)
                if not chunk:
                    break
                stats["bytes"] += len(chunk)
                if stats["bytes"] > max_bytes:
                    raise TooLarge(f"more than {max_bytes >> 20} MiB")
                os.write(fo, chunk)
            os.fchmod(fo, mode)
        finally:
            os.close(fo)
        os.utime(dst, ns=(fst.st_atime_ns, fst.st_mtime_ns))
    finally:
        os.close(fi)


def _kind(mode):
    for test, word in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return word
    return "special file"


def fetch(cache_dir, work_dir, key=None):
    """A cached build (when there is one) copied into the throwaway folder ``work_dir`` (made
    here, empty otherwise): only the build's own outputs for ``key`` (by default the cache folder's
    name), whatever an older ktui stored with them. Returns True when a cached build was copied."""
    key = key or os.path.basename(os.path.normpath(cache_dir))
    if os.path.isdir(cache_dir) and not os.path.islink(cache_dir) and has_binary(cache_dir, key):
        try:
            copy_outputs(cache_dir, work_dir, key)
            return True
        except (OSError, TooLarge):
            shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir, exist_ok=True)
    return False


def publish(work_dir, cache_dir, key=None):
    """The build's own outputs in the throwaway build folder copied into the cache at ``cache_dir``
    (atomically: a folder next to it renamed into place; a build already there is kept). ``key``:
    the build key (by default the cache folder's name). Returns a dict that says what happened:
    {"stored": bool, "files", "bytes", "skipped", "why"}."""
    key = key or os.path.basename(os.path.normpath(cache_dir))
    if os.path.isdir(cache_dir) and has_binary(cache_dir, key):
        return {"stored": False, "why": "already cached"}
    if not has_binary(work_dir, key):
        return {"stored": False, "why": "no binary built"}
    parent = os.path.dirname(cache_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".incoming-", dir=parent)
    target = os.path.join(tmp, "b")
    try:
        stats = copy_outputs(work_dir, target, key)
    except (OSError, TooLarge) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"stored": False, "why": f"not cached: {exc}"}
    try:
        if os.path.isdir(cache_dir) and not has_binary(cache_dir, key):
            shutil.rmtree(cache_dir, ignore_errors=True)  # an empty or partial one (an older ktui's)
        os.rename(target, cache_dir)
        stats["stored"] = True
    except OSError as exc:
        stats["stored"] = False
        stats["why"] = f"not cached: {exc}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return stats


#: the folder of a kernel's build where Triton keeps its cache (roles.op_build points TRITON_CACHE_DIR at
#: it): compiled kernels, their launchers (built with the host's C compiler) and autotuning timings
JIT_CACHE = "triton"


def publish_jit(work_dir, cache_dir, key=None):
    """Triton's cache entries of the throwaway build (``work_dir/JIT_CACHE``, build_outputs' kinds)
    copied into the kernel's cached build when it has none yet: the whole build when nothing of it
    is cached (a Triton-only kernel builds no extension), else that folder beside the cached build
    (atomically: a folder in the cached build renamed into place). Returns a dict as :func:`publish`."""
    key = key or os.path.basename(os.path.normpath(cache_dir))
    if not any(p.split(os.sep)[0] == JIT_CACHE for p in build_outputs(work_dir, key)):
        return {"stored": False, "why": "nothing compiled"}
    if not (os.path.isdir(cache_dir) and has_binary(cache_dir, key)):
        return publish(work_dir, cache_dir, key)
    dst = os.path.join(cache_dir, JIT_CACHE)
    if os.path.lexists(dst):
        return {"stored": False, "why": "already cached"}
    tmp = tempfile.mkdtemp(prefix=".incoming-", dir=cache_dir)
    try:
        stats = copy_outputs(work_dir, os.path.join(tmp, "b"), key, only=JIT_CACHE)
        os.rename(os.path.join(tmp, "b", JIT_CACHE), dst)
        stats["stored"] = True
    except (OSError, TooLarge) as exc:  # another judge of this kernel stored it first, or too large
        stats = {"stored": False, "why": f"not cached: {exc}"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return stats


STALE_LOCK_S = 900


def _clear_stale_lock(bdir, max_age=STALE_LOCK_S):
    """torch's FileBaton waits forever on a 'lock' left by a process killed mid-build."""
    lock = os.path.join(bdir, "lock")
    try:
        if os.path.exists(lock) and time.time() - os.path.getmtime(lock) > max_age:
            os.remove(lock)
    except OSError:
        pass
