"""Run inside the profile's sandbox, in front of ncu: bring the loopback interface of the fresh
network namespace up (a new namespace starts with `lo` down, and Nsight Compute's front end may
talk to the library it injects into the target over localhost), then exec the rest of argv.

No network is reachable either way: the namespace holds only `lo`. Failure to bring it up is said
on stderr (one line) and the command still runs.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def loopback_up(name: bytes = b"lo") -> str | None:
    """Set IFF_UP on `name`; returns None, or the reason it could not."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH14x", name, 0)
            flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, req))[1]
            if not flags & IFF_UP:
                fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", name, flags | IFF_UP))
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    return None


def main(argv: list[str]) -> None:
    if not argv:
        sys.stderr.write("ktui.engine.netup: nothing to run\n")
        raise SystemExit(2)
    why = loopback_up()
    if why is not None:
        sys.stderr.write(f"ktui: loopback not brought up in the profile sandbox ({why})\n")
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
