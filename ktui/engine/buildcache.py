# ---- ktui repro harness: the content-addressed build cache, judge side ----------------------
# A kernel builds in a throwaway folder (the judge's temp dir, shown to the candidate worker at
# sandbox.BUILD_MOUNT); the judge, never a worker, copies it into the cache after the build, with
# the candidate stopped, and copies a cached build into the next throwaway folder. A copy holds
# regular files and folders only: no set-uid / set-gid / sticky bits, no write bits for group or
# others, no device files, FIFOs, sockets or symbolic links (in or out), within a size and count
# budget; torch's lock files stay behind. Nothing a kernel writes once it runs reaches the cache:
# the worker only ever writes to its throwaway copy.
# Stdlib only. MIT license, part of ktui.
import os
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


def has_binary(path):
    for _root, _dirs, files in os.walk(path):
        if any(f.endswith((".so", ".pyd")) for f in files):
            return True
    return False


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


def fetch(cache_dir, work_dir):
    """A cached build (when there is one) copied into the throwaway folder ``work_dir`` (made
    here, empty otherwise). Returns True when a cached build was copied."""
    if os.path.isdir(cache_dir) and not os.path.islink(cache_dir) and has_binary(cache_dir):
        try:
            copy_tree(cache_dir, work_dir)
            return True
        except (OSError, TooLarge):
            shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir, exist_ok=True)
    return False


def publish(work_dir, cache_dir):
    """The throwaway build folder copied into the cache at ``cache_dir`` (atomically: a folder
    next to it renamed into place; a build already there is kept). Returns a dict that says what
    happened: {"stored": bool, "files", "bytes", "skipped", "why"}."""
    if os.path.isdir(cache_dir) and has_binary(cache_dir):
        return {"stored": False, "why": "already cached"}
    if not has_binary(work_dir):
        return {"stored": False, "why": "no binary built"}
    parent = os.path.dirname(cache_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".incoming-", dir=parent)
    target = os.path.join(tmp, "b")
    try:
        stats = copy_tree(work_dir, target)
    except (OSError, TooLarge) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"stored": False, "why": f"not cached: {exc}"}
    try:
        if os.path.isdir(cache_dir) and not has_binary(cache_dir):
            shutil.rmtree(cache_dir, ignore_errors=True)  # an empty or partial one (an older ktui's)
        os.rename(target, cache_dir)
        stats["stored"] = True
    except OSError as exc:
        stats["stored"] = False
        stats["why"] = f"not cached: {exc}"
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
