"""``ktui serve``: the app in a browser through textual-serve, localhost by default; headless
Chromium opens it, types a key, and the screen changes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT, SEED_TRACE

from ktui.cli import main
from ktui.tui.serve import app_command, is_loopback

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _have_browser() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
        import textual_serve  # noqa: F401
    except ImportError:
        return False
    return CHROMIUM.exists()


needs_browser = pytest.mark.skipif(not _have_browser(), reason="needs /usr/bin/chromium, playwright, textual-serve")


def test_loopback_detection():
    for h in ("127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(h), h
    for h in ("0.0.0.0", "::", "10.0.0.1", "192.168.1.20", "8.8.8.8", "no-such-host.invalid"):
        assert not is_loopback(h), h


def test_remote_host_needs_an_explicit_flag(tmp_path):
    res = CliRunner().invoke(main, ["serve", str(SEED_TRACE), "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--allow-remote" in res.output and "re-execute" in res.output
    res = CliRunner().invoke(main, ["serve", str(tmp_path / "nope.jsonl")])
    assert res.exit_code == 2 and "no such file" in res.output
    res = CliRunner().invoke(main, ["serve", str(SEED_TRACE), "--port", "70000"])
    assert res.exit_code == 2 and "not a TCP port" in res.output


def test_remote_with_the_flag_warns(monkeypatch):
    calls = []
    monkeypatch.setattr("ktui.tui.serve.serve", lambda *a, **k: calls.append(a))
    res = CliRunner().invoke(main, ["serve", str(SEED_TRACE), "--host", "0.0.0.0", "--allow-remote", "--port", "9"])
    assert res.exit_code == 0, res.output
    assert "WARNING" in res.output and "reachable from other machines" in res.output
    assert calls and calls[0][1:] == ("0.0.0.0", 9)


def test_app_command(tmp_path):
    bundled = ROOT / "traces" / "x.jsonl"
    assert app_command(None, bundled=bundled).endswith(f"-m ktui replay {bundled}")
    assert app_command(tmp_path, bundled=bundled).endswith(f"-m ktui runs {tmp_path.resolve()}")
    odd = tmp_path / "a b; rm -rf x.jsonl"
    odd.write_text("")
    cmd = app_command(odd, bundled=bundled)
    assert cmd.endswith("replay '" + str(odd.resolve()) + "'")  # quoted for the shell


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise AssertionError(f"ktui serve exited: {proc.stdout.read().decode(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("ktui serve did not listen")


def _settled_shot(page, different_from: bytes | None = None, timeout: float = 60) -> bytes:
    """A screenshot once the screen stops changing (and, if given, differs from a previous one)."""
    t0 = time.monotonic()
    last = page.screenshot()
    while time.monotonic() - t0 < timeout:
        page.wait_for_timeout(500)
        shot = page.screenshot()
        if shot == last and (different_from is None or shot != different_from):
            return shot
        last = shot
    raise AssertionError("the served screen did not settle" + (" or change" if different_from else ""))


@needs_browser
def test_served_app_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    port = _free_port()
    env = dict(os.environ, KTUI_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "ktui", "serve", str(SEED_TRACE), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        _wait_port(port, proc)
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            try:
                page = b.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                page.wait_for_selector("canvas", timeout=30_000)
                blank = page.screenshot()
                first = _settled_shot(page, different_from=blank)
                page.click("canvas >> nth=-1")  # focus the terminal
                page.wait_for_timeout(300)
                first = _settled_shot(page)
                page.keyboard.press("2")  # the Kernels pane
                second = _settled_shot(page, different_from=first)
                assert second != first
                page.keyboard.press("?")  # the help screen
                third = _settled_shot(page, different_from=second)
                assert third != second
            finally:
                b.close()
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(5)
