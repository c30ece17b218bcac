"""The profile sandbox's loopback: a fresh network namespace starts with `lo` down; netup brings it
up before ncu runs (nothing else is reachable there) and always runs the command."""

import shutil
import subprocess
import sys

import pytest

CHECK = ("import fcntl, socket, struct\n"
         "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
         "f = struct.unpack('16sH14x', fcntl.ioctl(s.fileno(), 0x8913, struct.pack('16sH14x', b'lo', 0)))[1]\n"
         "print('UP' if f & 1 else 'DOWN', [n for _i, n in socket.if_nameindex()])\n")


def _netns_ok():
    u = shutil.which("unshare")
    if not u:
        return None
    r = subprocess.run([u, "--user", "--map-root-user", "--net", "true"], capture_output=True)
    return u if r.returncode == 0 else None


UNSHARE = _netns_ok()


@pytest.mark.skipif(UNSHARE is None, reason="user + network namespaces not available here")
def test_loopback_is_down_without_netup_and_up_with_it():
    base = [UNSHARE, "--user", "--map-root-user", "--net"]
    plain = subprocess.run([*base, sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert plain.stdout.startswith("DOWN"), plain
    up = subprocess.run([*base, sys.executable, "-m", "ktui.engine.netup", sys.executable, "-c", CHECK],
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("UP") and "['lo']" in up.stdout, up  # still nothing but loopback


def test_netup_runs_the_command_even_when_it_cannot_bring_lo_up():
    # outside a namespace of our own, unprivileged or not, the command still runs and its status passes through
    r = subprocess.run([sys.executable, "-m", "ktui.engine.netup", sys.executable, "-c", "raise SystemExit(7)"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 7


def test_netup_without_a_command_says_so():
    r = subprocess.run([sys.executable, "-m", "ktui.engine.netup"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "nothing to run" in r.stderr
