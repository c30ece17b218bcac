"""The app's one error handler: notified as plain text, logged with the traceback, never raised."""

from __future__ import annotations

import asyncio

from textual.app import App

from ktui.tui.errors import log_path, report


class Host(App):
    pass


def _raise(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - the test needs a traceback
        return caught


def test_report_notifies_plain_text_and_logs_the_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))
    shown = []

    async def go():
        app = Host()
        orig = app.notify
        app.notify = lambda m, *a, **kw: (shown.append((m, kw)), orig(m, *a, **kw))
        async with app.run_test():
            msg = report(app, "render", _raise(ValueError("bad [b]markup[/b] \x1b]0;title\x07 here")))
            assert "\x1b" not in msg and "\x07" not in msg
    asyncio.run(go())
    (message, kw), = shown
    assert kw["severity"] == "error" and kw["markup"] is False
    assert "render: ValueError: bad [b]markup[/b]" in message and "\x1b" not in message
    log = log_path().read_text(encoding="utf-8")
    assert "render: ValueError" in log and "Traceback" in log and "_raise" in log


def test_an_unwritable_log_is_said_in_the_notification(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KTUI_CACHE_DIR", str(blocker / "sub"))
    shown = []

    async def go():
        app = Host()
        orig = app.notify
        app.notify = lambda m, *a, **kw: (shown.append(m), orig(m, *a, **kw))
        async with app.run_test():
            report(app, "load", _raise(RuntimeError("boom")))
    asyncio.run(go())
    assert "boom" in shown[0] and "log not written" in shown[0]


def test_a_block_that_cannot_render_is_reported_and_the_rest_shows(tmp_path, monkeypatch):
    from ktui.tui.widgets.docview import DocView, RenderBlock, text_block

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))

    class Broken:
        def __rich_console__(self, console, options):
            raise RuntimeError("renderable exploded")

    shown = []

    class One(App):
        def compose(self):
            yield DocView([text_block("before"), RenderBlock(Broken()), text_block("after")], id="d")

    async def go():
        app = One()
        orig = app.notify
        app.notify = lambda m, *a, **kw: (shown.append((m, kw.get("severity"))), orig(m, *a, **kw))
        async with app.run_test(size=(80, 10)) as pilot:
            await pilot.pause()
            rows = app.query_one(DocView).plain_rows()
            assert rows[0] == "before" and rows[-1] == "after"
            assert any("cannot render this block" in r and "renderable exploded" in r for r in rows)
    asyncio.run(go())
    assert any("renderable exploded" in m and sev == "error" for m, sev in shown)
    assert "renderable exploded" in log_path().read_text(encoding="utf-8")


def test_a_crash_exits_non_zero_and_is_logged(tmp_path, monkeypatch, capsys):
    from textual.screen import Screen

    from ktui.tui.app import KtuiApp, _exit_code

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path))

    class Crashes(Screen):
        def on_mount(self) -> None:
            raise RuntimeError("crash on purpose")

    assert _exit_code(KtuiApp(lambda: Crashes()), headless=True) == 1
    assert "crash on purpose" in log_path().read_text(encoding="utf-8")
    assert str(log_path()) in capsys.readouterr().err
