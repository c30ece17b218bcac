"""Descriptors in flight, charged to the worker tree they are attributable to (stdlib only; MIT license,
part of ktui).

A memfd sent over a unix socket and closed by its sender is in no process's descriptor table while the
message waits in the receiving socket's queue: its pages are the host's shared memory, and no count of a
tree's memory sees them. Two places hold such messages, and the watchdog
(:class:`ktui.engine.sandbox.Launched`) looks at both:

- the judge's own end of a worker's channel (:func:`queued`): what the worker sent that the judge has not
  read yet (a worker that sends unsolicited messages while the judge is busy with the other worker);
- the unix sockets the worker tree holds (:func:`tree_queued`, each one duplicated into the judge with
  pidfd_getfd(2), never read: peeked): a socketpair of its own with memfds in its queue, or a listening
  socket (connections not yet accepted may hold messages).

Only while one of them holds messages is the host's unexplained shared-memory growth charged to that
tree (another program growing /dev/shm while an honest kernel merely holds a socket is not its).

And what the judge received and still holds (:func:`note_received`, :func:`held_from`): a worker's
output memfds, or the reference's inputs the judge passes on, count against the tree that sent them,
where that tree no longer holds them itself.
"""

from __future__ import annotations

import ctypes
import os
import socket
import struct
import time

from .proctree import held_shmem
from .words import count

#: memfds the judge received, by (major, minor, inode): the inode of the judge's end of the channel they came by
RECEIVED_BY: dict = {}
RECEIVED_MAX = 100000
#: how many memfds came by each channel (the watchdog skips the walk of the judge's table for one with none)
_RECEIVED_ON: dict = {}
#: unix sockets of a tree looked at per watchdog pass (its channel limit bounds how many it may hold)
MAX_SOCKETS = 512
_PIDFD_GETFD = {"x86_64": 438, "aarch64": 438}
_SCM_MAX_FD = 253


def _key(st):
    return (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)


def channel_key(sock):
    """The inode of a socket (the judge's end of a channel): how the received memfds name their channel."""
    try:
        return os.fstat(sock.fileno()).st_ino
    except (OSError, ValueError):
        return None


def note_received(fd, channel):
    """Remember that the judge received the file ``fd`` by ``channel`` (:func:`channel_key`)."""
    if channel is None:
        return
    try:
        st = os.fstat(fd)
    except OSError:
        return
    if len(RECEIVED_BY) >= RECEIVED_MAX:
        RECEIVED_BY.pop(next(iter(RECEIVED_BY)))
    RECEIVED_BY[_key(st)] = channel
    _RECEIVED_ON[channel] = _RECEIVED_ON.get(channel, 0) + 1


def received_on(channel):
    """Whether any memfd came by ``channel``."""
    return bool(_RECEIVED_ON.get(channel))


def held_from(channel, held, exclude=()):
    """Bytes of the files in ``held`` ({key: bytes}: what the judge holds open or maps) that came by
    ``channel``, leaving out those in ``exclude`` (keys the sending tree still holds itself: counted there)."""
    if channel is None:
        return 0
    return sum(v for k, v in held.items() if RECEIVED_BY.get(k) == channel and k not in exclude)


def queued(fd):
    """True when the unix socket ``fd`` (a descriptor of this process) has messages waiting or listens;
    False when its queue is empty, or it is not a unix socket. Nothing is taken off the queue: a peek,
    whose duplicated descriptors are closed at once."""
    try:
        s = socket.socket(fileno=os.dup(fd))
    except OSError:
        return False
    try:
        if s.family != socket.AF_UNIX:
            return False
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            return True
        try:
            data, anc, _flags, _addr = s.recvmsg(1, socket.CMSG_SPACE(_SCM_MAX_FD * 4),
                                                 socket.MSG_PEEK | socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                for (n,) in struct.iter_unpack("i", payload[: len(payload) - len(payload) % 4]):
                    try:
                        os.close(n)
                    except OSError:
                        pass
        return bool(data or anc)
    finally:
        s.close()


def _pidfd_getfd(pidfd, fd):
    import platform

    nr = _PIDFD_GETFD.get(platform.machine())
    if nr is None:
        return None
    lc = ctypes.CDLL(None, use_errno=True)
    lc.syscall.restype = ctypes.c_long
    r = lc.syscall(ctypes.c_long(nr), ctypes.c_long(pidfd), ctypes.c_long(fd), ctypes.c_long(0))
    return None if r < 0 else int(r)


def tree_queued(pids, skip=()):
    """How many of the unix sockets the processes ``pids`` hold have messages waiting (or listen), each
    socket once, leaving out ``skip`` ("socket:[inode]" names: the worker's end of the judge's channel,
    whose queue holds the judge's requests). None when the judge cannot look (no pidfd_getfd(2), or the
    kernel refuses it): the caller then charges nothing."""
    seen, n = set(skip), 0
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        pidfd = None
        try:
            for fd in fds:
                try:
                    target = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if not target.startswith("socket:") or target in seen:
                    continue
                seen.add(target)
                if len(seen) > MAX_SOCKETS:
                    return n
                if pidfd is None:
                    try:
                        pidfd = os.pidfd_open(p)
                    except (OSError, AttributeError):
                        return None
                mine = _pidfd_getfd(pidfd, int(fd))
                if mine is None:
                    if not os.path.exists(f"/proc/{p}/fd/{fd}"):
                        continue  # closed in between
                    return None
                try:
                    n += int(queued(mine))
                finally:
                    os.close(mine)
        finally:
            if pidfd is not None:
                os.close(pidfd)
    return n


def socket_names(fds):
    """"socket:[inode]" of each descriptor in ``fds`` that is a socket."""
    out = set()
    for fd in fds:
        try:
            t = os.readlink(f"/proc/self/fd/{int(fd)}")
        except (OSError, ValueError):
            continue
        if t.startswith("socket:"):
            out.add(t)
    return out


def waiting(channel, pids, own_sockets, skip=()):
    """Words for the messages that wait in a queue attributable to the tree ``pids``, or None: on the
    judge's end of its channel (``channel``, a socket), or on unix sockets the tree holds (looked at only
    where it made some of its own: ``own_sockets``; ``skip`` as :func:`tree_queued`)."""
    if channel is not None:
        try:
            if queued(channel.fileno()):
                return "messages it sent wait on the judge's channel"
        except (OSError, ValueError):
            pass
    if own_sockets:
        n = tree_queued(pids, skip)
        if n:
            return f"messages wait on {count(n, 'unix socket')} of its own"
    return None


class HeldFrom:
    """Bytes of the memfds the judge (this process) received by one worker's channel and still holds,
    that the worker's tree no longer holds itself; the judge's table walked once a second at most."""

    def __init__(self, channel):
        self.key = channel_key(channel) if channel is not None else None
        self.last, self.next = 0, 0.0

    def bytes(self, tree_keys):
        if self.key is None or not received_on(self.key):
            return 0
        now = time.monotonic()
        if now < self.next:
            return self.last
        try:
            self.last = held_from(self.key, held_shmem(os.getpid()), tree_keys)
        except Exception:  # noqa: BLE001 - the other counts still hold
            self.last = 0
        self.next = now + 1.0
        return self.last
