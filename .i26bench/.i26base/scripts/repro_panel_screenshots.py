"""Make ``screenshots/repro_panel_100x30.svg`` and ``repro_panel_160x48.svg``: the replay app's
repro panel after a live CPU re-execution of the corpus's ``hack_global_flag_mutation`` (timings
change from run to run, so these are not snapshot tests' images).

    python scripts/repro_panel_screenshots.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "tests" / "fixtures" / "hacks" / "hack_global_flag_mutation.jsonl"


async def shoot(size: tuple[int, int], name: str) -> str:
    from textual.app import App

    from ktui.repro.api import ReproOptions
    from ktui.trace import load
    from ktui.tui.screens.repro_panel import ReproScreen

    run = load(str(TRACE))
    screen = ReproScreen(run, run.final_kernel, ReproOptions(device="cpu", trials=20, timeout=120), confirm=False)

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    app = Host()
    async with app.run_test(size=size) as pilot:
        for _ in range(1800):
            if screen.state == "done":
                break
            await pilot.pause(0.1)
        await pilot.pause()
        await pilot.pause()
        app.save_screenshot(filename=name, path=str(REPO / "screenshots"))
        w = getattr(app, "_ktui_repro_worker", None)
        if w is not None:
            w.close()
    return screen.report.verdict if screen.report else screen.state


def main() -> int:
    os.environ.setdefault("KTUI_CACHE_DIR", tempfile.mkdtemp(prefix="ktui-shots-"))
    for size, name in (((100, 30), "repro_panel_100x30.svg"), ((160, 48), "repro_panel_160x48.svg")):
        print(name, asyncio.run(shoot(size, name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
