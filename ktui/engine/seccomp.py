"""The sandboxed worker's seccomp filter (split out of confine.py, which applies it after the mounts):
a classic-BPF program built from a per-machine table, and the call that installs it. No torch."""

from __future__ import annotations

import ctypes
import os

from .oslib import PR_SET_NO_NEW_PRIVS, libc, prctl

#: the system calls the worker's seccomp filter knows, per machine: its audit arch; calls refused
#: outright (add_key, request_key, keyctl; io_uring's three, whose queued operations (an openat with
#: any mode, a socket) run without passing this filter: moby's default profile refuses them too; bpf
#: and userfaultfd, which no kernel or toolchain of a trace needs and which kernel exploits start
#: from: an eBPF map or program, a page fault held open to widen a race; moby refuses both too); the
#: socket call; calls whose mode argument must not carry S_ISUID/S_ISGID (name -> (nr, mode arg)); the
#: open calls of that kind, checked when their flags create a file (nr -> (flags arg, mode arg)); and
#: openat2 (its mode is inside a struct a filter cannot read: ENOSYS, libc falls back to openat)
_SECCOMP: dict = {
    "x86_64": {"arch": 0xC000003E, "deny": (248, 249, 250, 425, 426, 427, 321, 323), "socket": 41,
               "mode": {90: 1, 91: 1, 268: 2, 452: 2, 85: 1, 133: 1, 259: 2}, "open": {2: (1, 2), 257: (2, 3)},
               "enosys": (437,), "x32": True},
    "aarch64": {"arch": 0xC00000B7, "deny": (217, 218, 219, 425, 426, 427, 280, 282), "socket": 198,
                "mode": {52: 1, 53: 2, 452: 2, 33: 2}, "open": {56: (2, 3)}, "enosys": (437,), "x32": False},
}
AF_VSOCK = 40
SET_ID_BITS = 0o6000  # S_ISUID | S_ISGID
O_CREAT_OR_TMPFILE = 0o100 | 0o20000000  # O_CREAT, __O_TMPFILE (x86_64 and aarch64 share both values)


def seccomp_program(machine):
    """The worker's filter as classic BPF (code, jt, jf, k) tuples, or None for a machine it does not
    know. Refused with EPERM: key calls and io_uring; another ABI's calls (x32's, by bit 30 of the
    number; i386's by the audit arch); bpf and userfaultfd; socket(AF_VSOCK); a mode with the set-uid or set-gid bit in
    chmod, fchmod, fchmodat(2), mknod(at), creat, and in open/openat when they create a file.
    openat2 fails with ENOSYS. Everything else is allowed."""
    t = _SECCOMP.get(machine)
    if t is None:
        return None
    LD, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
    EPERM, ENOSYS, ALLOW = 0x00050000 | 1, 0x00050000 | 38, 0x7FFF0000

    def arg(i):  # the low 32 bits of argument i (seccomp_data.args[i], little-endian)
        return 16 + 8 * i

    ops = [(LD, 0, 0, 4), (JEQ, 0, "deny", t["arch"]), (LD, 0, 0, 0)]
    if t["x32"]:
        ops.append((JSET, "deny", 0, 0x40000000))
    ops += [(JEQ, "deny", 0, nr) for nr in t["deny"]]
    ops += [(JEQ, "enosys", 0, nr) for nr in t["enosys"]]
    ops.append((JEQ, "socket", 0, t["socket"]))
    ops += [(JEQ, f"mode{a}", 0, nr) for nr, a in t["mode"].items()]
    ops += [(JEQ, f"open{nr}", 0, nr) for nr in t["open"]]
    ops.append((RET, 0, 0, ALLOW))
    blocks = {"socket": [(LD, 0, 0, arg(0)), (JEQ, "deny", "allow", AF_VSOCK)]}
    for a in sorted(set(t["mode"].values())):
        blocks[f"mode{a}"] = [(LD, 0, 0, arg(a)), (JSET, "deny", "allow", SET_ID_BITS)]
    for nr, (fa, ma) in t["open"].items():
        blocks[f"open{nr}"] = [(LD, 0, 0, arg(fa)), (JSET, 0, "allow", O_CREAT_OR_TMPFILE),
                               (LD, 0, 0, arg(ma)), (JSET, "deny", "allow", SET_ID_BITS)]
    labels = {}
    for name, body in blocks.items():
        labels[name] = len(ops)
        ops += body
    for name, k in (("deny", EPERM), ("enosys", ENOSYS), ("allow", ALLOW)):
        labels[name] = len(ops)
        ops.append((RET, 0, 0, k))
    out = []
    for i, (code, jt, jf, k) in enumerate(ops):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise ValueError("seccomp jump out of range")  # a bug in this table, not the machine's
        out.append((code, jt, jf, k))
    return out


def deny_key_syscalls(report):
    """The worker's seccomp filter (after no_new_privs; :func:`seccomp_program`). Key quotas are the
    kernel's per user over every namespace (200 keys, 20,000 bytes for a normal user): a worker that
    filled its own session keyring made every add_key of the user's other programs fail with EDQUOT
    while it ran and until the keys' collection, some seconds later. AF_VSOCK is not separated by a
    network namespace (a VM guest's channel to its host: the worker could open one). A set-uid or
    set-gid file made in the temp dir runs with the worker's uid for whoever reaches it (root's when
    ktui runs as root). io_uring would carry the same calls past the filter. ktui's prologue joined
    its session keyring before this; torch and CUDA make none of these calls. True when in force."""
    import platform

    prog = seccomp_program(platform.machine())
    if prog is None:
        return False

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Filter))]

    arr = (Filter * len(prog))(*[Filter(*f) for f in prog])
    fprog = Prog(len(prog), arr)
    lc = libc()
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if lc.prctl(22, 2, ctypes.cast(ctypes.pointer(fprog), ctypes.c_void_p).value or 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "seccomp: " + os.strerror(ctypes.get_errno()))
    except OSError as exc:
        report["errors"].append(f"key filter: {exc}")
        return False
    return True
