# ---- ktui repro harness: the judge <-> worker protocol --------------------------------------
# One AF_UNIX SOCK_SEQPACKET socket per worker (message boundaries kept by the kernel, so no
# line can grow without bound). A message is one JSON object of at most MAX_MESSAGE_BYTES plus
# up to MAX_FDS file descriptors (sealed memfds holding tensors, see shm.py).
#
# The channel carries data (tensors, shapes, timings, errors), never verdicts. Every message
# the judge receives is validated: size, JSON depth, the shape of the envelope, and per op the
# type of every field (REPLY_SCHEMAS). Anything else raises ProtocolError, which ends that
# worker with "worker protocol error"; the judge keeps going.
# Stdlib only. MIT license, part of ktui.
import array
import json
import math
import socket

from .defaults import MAX_DEPTH, MAX_FDS, MAX_LIST, MAX_MESSAGE_BYTES, MAX_STRING, MAX_TENSOR_BYTES

WORKER_FD = 3  # the worker's end of the socket, always this descriptor


class ProtocolError(Exception):
    """A message that is not what the protocol allows (the worker is ended)."""


class ChannelClosed(Exception):
    """The other end closed the channel (usually: the worker died)."""


def socketpair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (a, b):
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, MAX_MESSAGE_BYTES)
            except OSError:
                pass
    return a, b


def send(sock, obj, fds=()):
    data = json.dumps(obj, allow_nan=False, separators=(",", ":"), default=_default).encode("utf-8")
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_MESSAGE_BYTES} byte limit")
    fds = list(fds)
    if len(fds) > MAX_FDS:
        raise ProtocolError(f"{len(fds)} file descriptors in one message (limit {MAX_FDS})")
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([data], anc)


def _default(o):
    if isinstance(o, float):
        return None
    return str(o)


def _close_all(fds):
    import os

    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def recv(sock):
    """(object, [fds]) of the next message. Raises ChannelClosed or ProtocolError; on
    ProtocolError every descriptor that came with the message is already closed."""
    try:
        data, anc, flags, _addr = sock.recvmsg(MAX_MESSAGE_BYTES + 1, socket.CMSG_SPACE(MAX_FDS * 4),
                                               socket.MSG_CMSG_CLOEXEC)
    except (ConnectionResetError, BrokenPipeError):
        raise ChannelClosed() from None
    fds = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            a = array.array("i")
            a.frombytes(payload[: len(payload) - (len(payload) % a.itemsize)])
            fds.extend(a)
    if not data and not fds:
        raise ChannelClosed()
    try:
        if flags & (socket.MSG_TRUNC | getattr(socket, "MSG_CTRUNC", 0)) or len(data) > MAX_MESSAGE_BYTES:
            raise ProtocolError(f"message over the {MAX_MESSAGE_BYTES} byte limit (or too many descriptors)")
        obj = decode(data)
    except ProtocolError:
        _close_all(fds)
        raise
    from .inflight import channel_key, note_received
    from .proctree import note_shmem

    ch = channel_key(sock) if fds else None
    for fd in fds:  # the sizes of the sealed memfds that pass through the judge (a worker maps them later)
        note_shmem(fd)
        note_received(fd, ch)  # and whose they are while the judge holds them: the sender's
    return obj, fds


def decode(data):
    if _depth_over(data, MAX_DEPTH):
        raise ProtocolError(f"message nested deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"message is not JSON: {str(exc)[:120]}") from None
    check_tree(obj)
    return obj


def _depth_over(data, limit):
    """True when the JSON text nests brackets deeper than `limit` (strings skipped)."""
    depth = 0
    in_str = esc = False
    opens = (0x5B, 0x7B)
    closes = (0x5D, 0x7D)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    for b in data:
        if in_str:
            if esc:
                esc = False
            elif b == 0x5C:
                esc = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in opens:
            depth += 1
            if depth > limit:
                return True
        elif b in closes:
            depth -= 1
    return False


def check_tree(obj, depth=0):
    """Plain JSON values within the size limits (already bounded in depth)."""
    if depth > MAX_DEPTH:
        raise ProtocolError("message nested too deeply")
    if obj is None or isinstance(obj, bool):
        return
    if isinstance(obj, int):
        if abs(obj) > 2**63:
            raise ProtocolError("integer out of range")
        return
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ProtocolError("non-finite number")
        return
    if isinstance(obj, str):
        if len(obj) > MAX_STRING:
            raise ProtocolError("string over the size limit")
        return
    if isinstance(obj, list):
        if len(obj) > MAX_LIST:
            raise ProtocolError("list over the size limit")
        for x in obj:
            check_tree(x, depth + 1)
        return
    if isinstance(obj, dict):
        if len(obj) > MAX_LIST:
            raise ProtocolError("object over the size limit")
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ProtocolError("object key is not a string")
            check_tree(v, depth + 1)
        return
    raise ProtocolError(f"unexpected value of type {type(obj).__name__}")


# ---- typed messages --------------------------------------------------------------------------
# A spec is: a type or tuple of types; ("list", spec); ("opt", spec); ("dict", {field: spec});
# ("map", spec) (any str keys); "tensor" (a tensor descriptor); "value" (a value tree: tensors,
# scalars, lists, tuples); "any" (any JSON, already size-checked).

NUM = (int, float)
TENSOR_KEYS = {"__tensor__", "dtype", "shape", "nbytes", "type"}
DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int16": 2,
          "int32": 4, "int64": 8, "bool": 1, "complex64": 8, "complex128": 16, "uint16": 2, "uint32": 4,
          "uint64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_tensor(d, nfds, where):
    if not isinstance(d, dict) or set(d) != TENSOR_KEYS:
        raise ProtocolError(f"{where}: not a tensor descriptor")
    idx, dtype, shape, nbytes = d["__tensor__"], d["dtype"], d["shape"], d["nbytes"]
    if not _is_int(idx) or not 0 <= idx < nfds:
        raise ProtocolError(f"{where}: tensor names descriptor {idx!r} of {nfds}")
    if dtype not in DTYPES:
        raise ProtocolError(f"{where}: dtype {str(dtype)[:40]!r} is not supported")
    if not isinstance(shape, list) or len(shape) > 16 or not all(_is_int(s) and 0 <= s < 2**48 for s in shape):
        raise ProtocolError(f"{where}: bad shape")
    n = 1
    for s in shape:
        n *= s
    if not _is_int(nbytes) or nbytes != n * DTYPES[dtype] or nbytes > MAX_TENSOR_BYTES:
        raise ProtocolError(f"{where}: {nbytes!r} bytes do not fit dtype {dtype} and shape {shape}")
    if not isinstance(d["type"], str) or len(d["type"]) > 200:
        raise ProtocolError(f"{where}: bad type name")


def check_value(v, nfds, where, depth=0):
    """A value tree (outputs, inputs): tensors, numbers, strings, None, lists, tuples, dicts."""
    if depth > 8:
        raise ProtocolError(f"{where}: value nested too deeply")
    if v is None or isinstance(v, (bool, int, float, str)):
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            check_value(x, nfds, f"{where}[{i}]", depth + 1)
        return
    if isinstance(v, dict):
        if "__tensor__" in v:
            check_tensor(v, nfds, where)
            return
        if set(v) == {"__tuple__"}:
            check_value(v["__tuple__"], nfds, where, depth + 1)
            if not isinstance(v["__tuple__"], list):
                raise ProtocolError(f"{where}: bad tuple")
            return
        if set(v) == {"__dict__"}:
            items = v["__dict__"]
            if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                      for p in items):
                raise ProtocolError(f"{where}: bad dict")
            for k, x in items:
                check_value(x, nfds, f"{where}.{k[:20]}", depth + 1)
            return
        if set(v) == {"__repr__"} and isinstance(v["__repr__"], str):
            return
    raise ProtocolError(f"{where}: not a value")


def check(spec, v, nfds, where):
    if spec == "any":
        return
    if spec == "tensor":
        check_tensor(v, nfds, where)
        return
    if spec == "value":
        check_value(v, nfds, where)
        return
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        kind = spec[0]
        if kind == "opt":
            if v is not None:
                check(spec[1], v, nfds, where)
            return
        if kind == "list":
            if not isinstance(v, list):
                raise ProtocolError(f"{where}: expected a list, got {type(v).__name__}")
            for i, x in enumerate(v):
                check(spec[1], x, nfds, f"{where}[{i}]")
            return
        if kind == "map":
            if not isinstance(v, dict):
                raise ProtocolError(f"{where}: expected an object, got {type(v).__name__}")
            for k, x in v.items():
                check(spec[1], x, nfds, f"{where}.{k[:30]}")
            return
        if kind == "dict":
            if not isinstance(v, dict):
                raise ProtocolError(f"{where}: expected an object, got {type(v).__name__}")
            fields = spec[1]
            for k in v:
                if k not in fields:
                    raise ProtocolError(f"{where}: unexpected field {k[:40]!r}")
            for k, s in fields.items():
                if k not in v:
                    if isinstance(s, tuple) and s and s[0] == "opt":
                        continue
                    raise ProtocolError(f"{where}: missing field {k!r}")
                check(s, v[k], nfds, f"{where}.{k}")
            return
        raise ProtocolError(f"bad spec {spec!r}")  # a bug in ktui, not in the message
    types = spec if isinstance(spec, tuple) else (spec,)
    if isinstance(v, bool) and bool not in types:
        raise ProtocolError(f"{where}: expected {'/'.join(t.__name__ for t in types)}, got bool")
    if not isinstance(v, types):
        raise ProtocolError(f"{where}: expected {'/'.join(t.__name__ for t in types)}, got {type(v).__name__}")


ERROR = ("dict", {"kind": str, "message": str, "detail": ("opt", str), "trial": ("opt", int), "fatal": bool})
STATS = ("dict", {"mean_us": NUM, "median_us": NUM, "std_us": NUM, "min_us": NUM, "max_us": NUM, "cv": NUM,
                  "n": int, "q1_us": NUM, "q3_us": NUM, "iqr_us": NUM, "rse": NUM})
FINDING = ("dict", {"class": str, "reason": str, "evidence": "any"})
OUTPUTS = ("dict", {"outputs": "value", "types": ("list", str), "overrides": ("list", str),
                    "inputs_after": ("opt", "value"), "findings": ("opt", ("list", FINDING))})

#: the data each op's reply carries (worker -> judge)
REPLY_SCHEMAS = {
    "hello": ("dict", {"pid": int, "python": str, "role": str, "sandbox": ("map", "any")}),
    "setup": ("dict", {"environment": ("map", "any"), "device": str, "import_torch_s": NUM, "device_init_s": NUM}),
    "load_reference": ("dict", {"sha1": str}),
    "build": ("dict", {"key": str, "dir": str, "seconds": NUM, "cached": bool,
                       "extensions": ("list", ("dict", {"name": str, "unique_name": str, "seconds": NUM,
                                                        "steps": ("opt", ("list", ("dict", {
                                                            "output": str, "seconds": NUM, "start_s": NUM})))})),
                       "arch_list": ("opt", str), "has_model": bool,
                       "failed_builds": ("list", ("dict", {"name": str, "error": str}))}),
    "init": ("dict", {"init_inputs": "value"}),
    "make_inputs": ("dict", {"inputs": "value", "forward": ("opt", OUTPUTS)}),
    "put_inputs": ("dict", {"slot": int}),
    "drop": ("dict", {"dropped": int}),
    "refill": ("dict", {"slot": int}),
    "forward": OUTPUTS,
    "time": ("dict", {"samples": "tensor", "stats": STATS, "method_used": str, "batches": int,
                      "stopped": str, "seconds": NUM}),
    "wall": ("dict", {"forwards": int}),
    "wall_outputs": ("dict", {"outputs": ("list", OUTPUTS), "fingerprints": ("opt", "tensor")}),
    "floor": ("map", NUM),
    "memory": ("dict", {"peak_mb": NUM, "delta_mb": NUM, "reserved_mb": NUM}),
    "launches": ("map", "any"),
    "probe": ("dict", {"findings": ("list", FINDING), "data": ("map", "any")}),
    "bye": ("dict", {}),
    "ping": ("dict", {}),
}
PROGRESS = ("dict", {"what": str, "trial": ("opt", int), "of": ("opt", int)})


def check_reply(op, msg, nfds):
    """Validate one worker message for a request of `op`; returns ('progress'|'ok'|'error', payload)."""
    if not isinstance(msg, dict):
        raise ProtocolError(f"message is a {type(msg).__name__}, not an object")
    if "progress" in msg:
        check(("dict", {"id": int, "progress": PROGRESS}), msg, nfds, "progress")
        return "progress", msg["progress"]
    ok = msg.get("ok")
    if ok is True:
        check(("dict", {"id": int, "ok": bool, "data": REPLY_SCHEMAS[op]}), msg, nfds, op)
        return "ok", msg["data"]
    if ok is False:
        check(("dict", {"id": int, "ok": bool, "error": ERROR}), msg, nfds, op)
        return "error", msg["error"]
    raise ProtocolError("message has no 'ok' or 'progress'")
