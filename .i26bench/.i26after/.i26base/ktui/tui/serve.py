"""``ktui serve [TRACE|DIR]``: the app itself in a browser, through textual-serve.

textual-serve runs a web server; each browser tab that connects starts its own ``ktui`` process
(``replay TRACE``, ``runs DIR``, or the bundled trace) and streams its screen over a websocket.
The app can re-execute trace code (``r`` in replay), so the server binds to the loopback
interface by default; any other address needs ``--allow-remote`` and prints a warning.
"""

from __future__ import annotations

import ipaddress
import shlex
import socket
import sys
from pathlib import Path

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def is_loopback(host: str) -> bool:
    """True when ``host`` only ever means this machine (127.0.0.0/8, ::1, localhost)."""
    h = host.strip().strip("[]").lower()
    if h in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        pass
    try:  # a name: every address it resolves to must be a loopback one
        infos = socket.getaddrinfo(h, None)
    except OSError:
        return False
    addrs = {i[4][0] for i in infos}
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def app_command(target: Path | None, *, bundled: Path) -> str:
    """The shell command textual-serve runs for each browser session."""
    exe = shlex.quote(sys.executable)
    if target is None:
        return f"{exe} -m ktui replay {shlex.quote(str(bundled))}"
    p = target.resolve()
    if p.is_dir():
        return f"{exe} -m ktui runs {shlex.quote(str(p))}"
    return f"{exe} -m ktui replay {shlex.quote(str(p))}"


def serve(command: str, host: str, port: int, title: str = "ktui") -> None:
    from textual_serve.server import Server

    Server(command, host=host, port=port, title=title).serve()
