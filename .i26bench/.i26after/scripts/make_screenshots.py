"""Make the PNG screenshots of the HTML report and the served app (``screenshots/*.png``).

    python scripts/make_screenshots.py

Needs ``/usr/bin/chromium`` and Playwright. Writes:

- ``screenshots/report.png``: ``ktui report`` of a 240-run synthetic sweep (``benchmarks/bench_runs.py``'s
  generator: 8 models, 60 problems), the charts;
- ``screenshots/report_runs.png``: the same page, the runs table sorted by speedup, one run open;
- ``screenshots/report_fixtures.png``: ``ktui report ../shared/fixtures``;
- ``screenshots/serve.png``: ``ktui serve`` of the synthetic sweep in Chromium, after ``p`` (the fast_p chart).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHOTS = REPO / "screenshots"
sys.path.insert(0, str(REPO / "benchmarks"))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def report(src: Path, out: Path, env: dict, cwd: Path | None = None) -> None:
    subprocess.run([sys.executable, "-m", "ktui", "report", str(src), "-o", str(out)], env=env, check=True, cwd=cwd)


def settle(page, timeout: float = 60) -> None:
    last = page.screenshot()
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        page.wait_for_timeout(700)
        shot = page.screenshot()
        if shot == last:
            return
        last = shot


def main() -> None:
    from bench_runs import generate
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as td:
        base = Path(td)
        env = dict(os.environ, KTUI_CACHE_DIR=str(base / "cache"), PYTHONPATH=str(REPO))
        generate(base, 240, 8.0)
        sweep = base / "sweep"
        report(Path("sweep"), base / "sweep.html", env, cwd=base)  # the page shows the root as given
        fixtures = REPO.parent / "shared" / "fixtures"
        if fixtures.is_dir():
            report(Path("../shared/fixtures"), base / "fixtures.html", env, cwd=REPO)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "ktui", "serve", str(sweep), "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            with sync_playwright() as pw:
                b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS, headless=True)
                page = b.new_page(viewport={"width": 1440, "height": 1100})
                page.goto((base / "sweep.html").as_uri())
                page.wait_for_selector("body[data-ready='1']")
                page.screenshot(path=str(SHOTS / "report.png"))
                page.fill("#f-text", "bench_problem")  # the seed-derived runs (not the fixture copies)
                page.click("#runs thead th[data-col='speedup']")
                page.click("#runs thead th[data-col='speedup']")
                page.click("#runs tbody tr >> nth=2")
                page.wait_for_selector("#detail[data-state='ready']")
                page.eval_on_selector(".tablewrap", "e => { e.scrollLeft = 0; }")
                page.eval_on_selector("#runs-section", "e => e.scrollIntoView()")
                page.screenshot(path=str(SHOTS / "report_runs.png"))
                if fixtures.is_dir():
                    page.goto((base / "fixtures.html").as_uri())
                    page.wait_for_selector("body[data-ready='1']")
                    page.screenshot(path=str(SHOTS / "report_fixtures.png"))
                page = b.new_page(viewport={"width": 1400, "height": 900})
                for _ in range(100):
                    try:
                        page.goto(f"http://127.0.0.1:{port}/")
                        break
                    except Exception:  # noqa: BLE001 - the server is still starting
                        time.sleep(0.2)
                page.wait_for_selector("canvas")
                settle(page)
                page.click("canvas >> nth=-1")
                page.keyboard.press("p")
                settle(page)
                page.screenshot(path=str(SHOTS / "serve.png"))
                b.close()
        finally:
            os.killpg(server.pid, 15)
            server.wait(10)
    print("wrote", ", ".join(sorted(p.name for p in SHOTS.glob("*.png"))))


if __name__ == "__main__":
    main()
