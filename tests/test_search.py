"""ktui search: hits with run, turn and field over a trace or a sweep; the byte prefilter is
sound (escaped text is found) and rules files out without parsing them; excerpts are raw trace
text, cleaned where they are shown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from ktui.cli import main
from ktui.trace import search as S
from tests.conftest import SEED_TRACE, fixture_path

AGENT_LINE = 29  # 0-based line of the seed trace's agent message of turn 3 ("Error because generator device...")


def _with_text(dst: Path, text: str, *, ensure_ascii: bool = True) -> Path:
    lines = SEED_TRACE.read_text(encoding="utf-8").splitlines()
    ev = json.loads(lines[AGENT_LINE])
    assert ev["payload"]["kind"] == "agent_message"
    ev["payload"]["text"] = text
    lines[AGENT_LINE] = json.dumps(ev, ensure_ascii=ensure_ascii)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def _hits(path, pattern, **kw):
    fields = kw.pop("fields", S.FIELDS)
    return list(S.search(path, S.Matcher(pattern, **kw), fields=fields))


def test_seed_trace_hit_has_run_turn_and_field():
    hits = _hits(SEED_TRACE, "generator device")
    assert [(h.turn, h.field) for h in hits] == [(3, "reasoning")]
    assert "generator device" in hits[0].excerpt and hits[0].match == "generator device"
    assert hits[0].run.endswith("popcorn_l1_p27_grok-4.3.jsonl")


def test_known_error_text_in_a_fixture_sweep():
    root = fixture_path("ktbench").parent
    hits = _hits(root, "illegal memory access")
    assert hits, "the KTBench fixture records an illegal memory access"
    runs = {h.run for h in hits}
    assert runs == {"ktbench/v2_eval_chzr6_marker_kernel.jsonl"}
    first = hits[0]
    assert (first.turn, first.field, first.where) == (2, "results", "run_correctness")
    assert first.model and "gpt-5.5" in first.model


def test_escaped_text_is_found(tmp_path):
    """Quotes, a newline, a slash and non-ASCII are escaped in the file: the prefilter must not rule it out."""
    p = _with_text(tmp_path / "t.jsonl", 'the kernel said "out of bounds" at a/b\nthen café ☕ failed')
    assert [h.turn for h in _hits(p, 'said "out of bounds" at a/b')] == [3]
    assert [h.turn for h in _hits(p, "café ☕")] == [3]
    assert [h.turn for h in _hits(p, r"at a/b$", regex=True)] == [3]  # ^ and $ are a line's, as in grep
    assert [h.turn for h in _hits(p, r"^then café", regex=True)] == [3]
    assert [h.turn for h in _hits(p, r"failed$", regex=True)] == [3]
    assert _hits(p, "café ☕ failed", fields=("results",)) == []


def test_fields_restrict_the_search():
    assert {h.field for h in _hits(SEED_TRACE, "torch")} >= {"kernels", "calls", "results"} - {"calls"}
    ks = _hits(SEED_TRACE, "load_inline", fields=("kernels",))
    assert ks and {h.field for h in ks} == {"kernels"} and all(h.where.startswith("v") for h in ks)
    assert _hits(SEED_TRACE, "generator device", fields=("kernels", "results")) == []


def test_smart_case():
    assert _hits(SEED_TRACE, "error because generator")  # lower case: ignores case
    assert not _hits(SEED_TRACE, "ERROR because generator")  # upper case: matches case
    assert _hits(SEED_TRACE, "ERROR because generator", case_sensitive=False)


def test_prefilter_rules_files_out_without_parsing(tmp_path, monkeypatch):
    for i in range(5):
        _with_text(tmp_path / f"r{i}.jsonl", f"plain words {i}")
    _with_text(tmp_path / "hit.jsonl", "a RARE_marker_text here")
    loaded = []
    import ktui.trace as T

    real = T.load
    monkeypatch.setattr(T, "load", lambda p, **kw: loaded.append(str(p)) or real(p, **kw))
    st = S.SearchStats()
    hits = list(S.search(tmp_path, S.Matcher("RARE_marker_text"), stats=st))
    assert [Path(h.real).name for h in hits] == ["hit.jsonl"]
    assert [Path(p).name for p in loaded] == ["hit.jsonl"]
    assert (st.files, st.parsed, st.runs_hit) == (6, 1, 1)
    loaded.clear()
    assert len(list(S.search(tmp_path, S.Matcher(r"RARE_\w+", regex=True)))) == 1
    assert [Path(p).name for p in loaded] == ["hit.jsonl"]


RAW = ("\x1b", "\x07", "\u202e", "\x9b", "\r")


def _no_raw(text: str) -> None:
    for bad in RAW:
        assert bad not in text, (bad, text)


def test_excerpts_are_cleaned_where_they_are_shown(tmp_path):
    """A hit is raw trace text (the domain cleans nothing); ``ktui search``'s lines, its ``--json``
    (whose match offsets are in the cleaned excerpt) and the search screen clean it once."""
    from ktui.report.search import BOLD, RESET, hit_json, hit_line

    text = "before \x1b]52;c;ZXZpbA==\x07 \u202e\r\x1b[31mBOOM\x1b[0m after \u202e\x9b2J"
    p = _with_text(tmp_path / "r\x1b]0;t\x07un" / "t\u202e.jsonl", text)
    (h,) = _hits(p, "BOOM")
    assert h.match == "BOOM" and "\x1b]52;c;" in h.before and "\u202e" in h.run  # raw in the domain
    line = hit_line(h, color=True)
    _no_raw(line.replace(BOLD, "").replace(RESET, ""))
    assert f"{BOLD}BOOM{RESET}" in line and "␛]52;c;ZXZpbA==␇ <U+202E>␍␛[31m" in line
    _no_raw(hit_json(h))
    d = json.loads(hit_json(h))
    assert d["excerpt"][d["match"][0]: d["match"][1]] == "BOOM" and "<U+202E>" in d["run"] and "␛]0;t␇" in d["path"]
    for args in (["--json"], []):
        r = CliRunner().invoke(main, ["search", str(tmp_path), "BOOM", *args])
        assert r.exit_code == 0 and "BOOM" in r.output
        _no_raw(r.output)


def test_the_search_screen_shows_hits_cleaned(tmp_path):
    import asyncio

    from textual.app import App
    from textual.widgets import DataTable

    from ktui.trace.search import Matcher
    from ktui.tui.screens.search import SearchScreen
    from ktui.tui.screens.sweep_messages import SearchHits

    p = _with_text(tmp_path / "t\u202e.jsonl", "x \x1b]0;pwned\x07 [red]BOOM[/red] \x9b2J")
    hits = _hits(p, "BOOM")
    assert "\x1b]0;pwned" in hits[0].before

    async def go():
        app = App()
        async with app.run_test(size=(160, 48)) as pilot:
            scr = SearchScreen(tmp_path)
            await app.push_screen(scr)
            await pilot.pause()
            m = Matcher("BOOM")
            scr.matcher = m
            scr.on_search_hits(SearchHits(m, hits))
            await pilot.pause()
            table = scr.query_one(DataTable)
            cells = [str(c) for c in table.get_row_at(0)]
            for c in cells:
                _no_raw(c)
            assert "[red]BOOM[/red]" in cells[-1] and "␛]0;pwned␇" in cells[-1] and "<U+202E>" in cells[0]

    asyncio.run(go())


def test_long_lines_are_cut_around_the_match(tmp_path):
    p = _with_text(tmp_path / "t.jsonl", "x" * 5000 + " NEEDLE " + "y" * 5000)
    (h,) = _hits(p, "NEEDLE")
    assert len(h.excerpt) <= S.EXCERPT + 2 and h.match == "NEEDLE"
    assert h.before.startswith("…") and h.after.endswith("…")


def test_one_hit_a_line_and_a_limit_per_run(tmp_path):
    p = _with_text(tmp_path / "t.jsonl", "\n".join(["aa bb aa"] * 10))
    hits, more = S.search_run(__import__("ktui.trace", fromlist=["load"]).load(str(p)), S.Matcher("aa"),
                              fields=("reasoning",), max_hits=4)
    assert len(hits) == 4 and more == 6


def test_bad_patterns():
    with pytest.raises(S.PatternError):
        S.Matcher("(", regex=True)
    with pytest.raises(S.PatternError):
        S.Matcher("x*", regex=True)  # matches everywhere
    with pytest.raises(ValueError):
        S.parse_fields("reasoning,bogus")
    assert S.parse_fields("kernel, result") == ("results", "kernels")


def test_cli_streams_lines_and_json(tmp_path):
    d = tmp_path / "sweep"
    shutil.copy(SEED_TRACE, d / "a.jsonl") if d.exists() else None
    _with_text(d / "sub" / "b.jsonl", "hit: illegal memory access was encountered")
    _with_text(d / "c.jsonl", "nothing here")
    r = CliRunner().invoke(main, ["search", str(d), "illegal memory access"])
    assert r.exit_code == 0, r.output
    out = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert out == ["sub/b.jsonl  turn 3  reasoning  hit: illegal memory access was encountered"]
    assert "1 hit in 1 of 2 runs" in r.stderr
    r = CliRunner().invoke(main, ["search", str(d), "illegal.*encountered", "--regex", "--json"])
    rows = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert [(x["run"], x["turn"], x["field"]) for x in rows] == [("sub/b.jsonl", 3, "reasoning")]
    s, e = rows[0]["match"]
    assert rows[0]["excerpt"][s:e] == "illegal memory access was encountered"
    r = CliRunner().invoke(main, ["search", str(d), "no such words anywhere"])
    assert r.exit_code == 1
    r = CliRunner().invoke(main, ["search", str(d), "(", "--regex"])
    assert r.exit_code == 2 and "bad regular expression" in r.stderr
    r = CliRunner().invoke(main, ["search", str(d), "x", "--in", "nope"])
    assert r.exit_code == 2 and "not a field" in r.stderr


def test_not_traces_are_skipped(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"note": "illegal memory access"}))
    _with_text(tmp_path / "t.jsonl", "an illegal memory access")
    hits = _hits(tmp_path, "illegal memory access")
    assert [Path(h.real).name for h in hits] == ["t.jsonl"]


# ---- the app: F in ktui runs ---------------------------------------------------------------------
def test_runs_screen_search_opens_the_replay_at_the_hit(tmp_path):
    import asyncio

    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.runs import RunsScreen

    _with_text(tmp_path / "a" / "trace.jsonl", "plain words")
    _with_text(tmp_path / "b" / "trace.jsonl", "then CUDA error: an illegal memory access was encountered")

    async def flow():
        app = KtuiApp(lambda: RunsScreen(tmp_path, use_cache=False))
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause(0.2)
            runs = app.screen
            await pilot.press("F")
            await pilot.pause()
            scr = app.screen
            assert type(scr).__name__ == "SearchScreen"
            await pilot.press(*"illegal memory", "enter")
            for _ in range(200):
                await pilot.pause(0.02)
                if scr.stats is not None:
                    break
            assert scr.query_one("#search-pattern").value == "illegal memory", (scr.focused, scr.query_one("#search-state").render())
            assert [(Path(h.real).parent.name, h.turn, h.field) for h in scr.hits] == [("b", 3, "reasoning")]
            assert "1 hit in 1 run" in str(scr.query_one("#search-state").render())
            await pilot.press("enter")
            for _ in range(200):
                await pilot.pause(0.02)
                if getattr(app.screen, "ready", False):
                    break
            rep = app.screen
            assert type(rep).__name__ == "ReplayScreen" and rep.path.parent.name == "b"
            assert rep.turn_index == 3
            for _ in range(100):
                await pilot.pause(0.02)
                if rep._search_turns:
                    break
            assert rep._search_turns == [3]
            await pilot.press("escape", "escape")
            await pilot.pause()
            assert app.screen is scr
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is runs

    asyncio.run(flow())


def test_system_notes_and_other_actors_messages_are_searched_at_their_turn(tmp_path):
    """A backend's error is a system note and a harness's nudge a user message: neither is a
    turn's own text, and neither was searched ('which runs hit a 404 from the backend?' found
    nothing). Both are field "text", at the turn whose lines hold them."""
    lines = SEED_TRACE.read_text(encoding="utf-8").splitlines()
    ev = json.loads(lines[AGENT_LINE])
    note = dict(ev, payload={"kind": "system", "note": "backend error (m): rejected: 503 QuotaGone7 for key sk-abc"})
    nudge = dict(ev, actor="harness", payload={"kind": "user_message", "text": "Reminder: ZebraNudge9 call submit"})
    lines[AGENT_LINE + 1:AGENT_LINE + 1] = [json.dumps(note), json.dumps(nudge)]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from ktui.trace import load
    from ktui.view.build import messages_by_turn

    # the backend error ends turn 3: the nudge leads into turn 4, where the replay shows it; the
    # error is how the run ended, shown with the last turn ("run ended")
    run = load(p)
    shown_at = [t for t, ms in messages_by_turn(run)[1].items() if any("ZebraNudge9" in m[3] for m in ms)]
    assert shown_at == [4], shown_at
    hits = _hits(p, "quotagone7")
    assert [(h.turn, h.field, h.where) for h in hits] == [(len(run.turns) - 1, "text", "note")], hits
    hits = _hits(p, "ZebraNudge9")
    assert [(h.turn, h.field) for h in hits] == [(4, "text")] and "user_message" in hits[0].where, hits
    assert _hits(p, "ZebraNudge9", fields=("calls", "results", "kernels", "reasoning")) == []


def test_the_replay_opened_at_a_hit_on_how_the_run_ended_finds_it(tmp_path):
    """The sweep search finds the run's end ('scheduler quiescent', a backend's error) at the last
    turn; the replay shows it there ("run ended") and its search finds it there too (it searched
    only the turn's own blocks: 'no match')."""
    import asyncio

    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.replay import ReplayScreen
    from ktui.tui.screens.replay_parts import compile_search

    hits = _hits(SEED_TRACE, "quiescent")
    assert [(h.turn, h.field, h.where) for h in hits] == [(8, "text", "note")], hits

    async def flow():
        rep = ReplayScreen(SEED_TRACE, turn=hits[0].turn, search=compile_search("quiescent"))
        app = KtuiApp(lambda: rep)
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(200):
                await pilot.pause(0.02)
                if rep.ready and rep._search_turns:
                    break
            assert rep.turn_index == 8 and rep._search_turns == [8] and rep._search_total == 1

    asyncio.run(flow())


def test_the_search_screen_tells_runs_apart_that_differ_in_the_middle_of_their_path():
    """Hits of a sweep laid out as <cell>/<uuid>/trace.jsonl all read 'l1_p10_…trace.jsonl' in the
    search screen's run column (the path cut in its middle): the end of the run's folder stays."""
    from ktui.tui.screens.search import _middle_path

    paths = [f"l1_p10_gemini-3-pro_careful_s{s}/{u}/trace.jsonl"
             for s, u in ((147, "5cf1d1e6452aa8e0"), (1107, "6ed8fe6240587f21"), (1587, "c9a7137ea92ae8e8"))]
    for n in (16, 25, 40):
        cut = [_middle_path(p, n) for p in paths]
        assert all(len(c) <= n for c in cut), cut
        assert len(set(cut)) == 3, (n, cut)
    assert _middle_path(paths[0], 25).endswith("/trace.jsonl")
    assert _middle_path("short/t.jsonl", 25) == "short/t.jsonl"
    assert len(_middle_path("a/" + "x" * 80 + ".jsonl", 25)) <= 25


def test_the_runs_screen_search_shows_each_run_of_a_folder_layout_apart(tmp_path):
    import asyncio

    from textual.widgets import DataTable

    from ktui.tui.app import KtuiApp
    from ktui.tui.screens.runs import RunsScreen

    for s, u in ((147, "5cf1d1e6452aa8e0"), (1107, "6ed8fe6240587f21"), (1587, "c9a7137ea92ae8e8")):
        _with_text(tmp_path / f"l1_p10_gemini-3-pro_careful_s{s}" / u / "trace.jsonl", f"marker Qz7 of {s}")

    async def flow():
        app = KtuiApp(lambda: RunsScreen(tmp_path, use_cache=False))
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(100):
                await pilot.pause(0.02)
                if getattr(app.screen, "scan_done", False):
                    break
            await pilot.press("F")
            await pilot.pause()
            scr = app.screen
            await pilot.press(*"Qz7", "enter")
            for _ in range(300):
                await pilot.pause(0.02)
                if scr.stats is not None:
                    break
            table = scr.query_one(DataTable)
            cells = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert len(cells) == 3 and len(set(cells)) == 3, cells

    asyncio.run(flow())


def _with_notes(dst: Path, notes: dict[int, list[dict]]) -> Path:
    """The seed trace with system events inserted after the given 0-based lines."""
    lines = SEED_TRACE.read_text(encoding="utf-8").splitlines()
    for at in sorted(notes, reverse=True):
        env = json.loads(lines[at])
        lines[at + 1:at + 1] = [json.dumps(dict(env, actor=None, message_id=None, payload=p)) for p in notes[at]]
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def test_notes_in_the_middle_of_a_run_are_searched_and_shown_at_their_turn(tmp_path):
    """Issue 24: only the notes that end a run were searched; one in its middle (a persona's
    fallback, a retried backend, an actor spawned late, a JSON note carrying a message) was in
    no search and in no turn's document. Each is found at the turn it leads into (where the
    replay now shows it); a JSON body's strings are searched with their escapes undone (the file
    holds them escaped twice: the byte and text prefilter must not rule the file out); a spawned
    actor's system prompt, which its note only names, is found where the preamble shows it."""
    kickoff = {"kind": "kickoff", "actor_id": "harness", "to": "kernel_author",
               "message": 'please say "PangolinQ7" twice\nthen stop'}
    spawned = {"kind": "agent_spawned", "actor_id": "reviewer", "model": "m-2", "tools": None,
               "system_prompt": "You review kernels. Mention OkapiZ3 in every reply.", "params": {}}
    p = _with_notes(tmp_path / "t.jsonl", {
        AGENT_LINE: [{"kind": "system", "note": "trained-persona fallback: adapter WombatX5 unavailable"},
                     {"kind": "system", "note": json.dumps(kickoff)}],
        AGENT_LINE + 10: [{"kind": "system", "note": json.dumps(spawned)}]})
    from ktui.trace import load

    run = load(p)
    at = {ln: t.index for t in run.turns for ln in range(t.first_line, t.last_line + 1)}
    n1 = next(ln for ln, text in run.notes if "WombatX5" in text)
    n3 = next(ln for ln, text in run.notes if "reviewer" in text)
    lead1 = min(t.index for t in run.turns if t.last_line >= n1)
    lead3 = min(t.index for t in run.turns if t.last_line >= n3)
    assert lead1 > 0 and lead3 > lead1 < len(run.turns) - 1, (lead1, lead3, at)
    for pattern, turn in (("wombatx5", lead1), ('say "PangolinQ7" twice', lead1), ("reviewer", lead3)):
        hits = _hits(p, pattern)
        assert [(h.turn, h.field, h.where) for h in hits] == [(turn, "text", "note")], (pattern, hits)
    first = min(run.turns, key=lambda t: t.first_line).index
    hits = _hits(p, "OkapiZ3")
    assert [(h.turn, h.field, h.where) for h in hits] == [(first, "text", "system prompt reviewer")], hits
    assert _hits(p, "WombatX5", fields=("calls", "results", "kernels", "reasoning")) == []
    # the replay shows each note with that turn, and its own search counts it there
    from ktui.tui.screens.replay_parts import compile_search, count_matches, turn_search_text

    for pattern, turn in (("WombatX5", lead1), ('say "PangolinQ7" twice', lead1), ("reviewer model=m-2", lead3)):
        rx = compile_search(re_escape(pattern))
        counts = {t.index: count_matches(rx, turn_search_text(run, t)) for t in run.turns}
        assert {k: v for k, v in counts.items() if v} == {turn: 1}, (pattern, counts)


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


def test_notes_before_the_first_turn_and_spawned_prompts_in_a_real_trace_are_searched():
    """The ensemble recorder's own sample (several actors, a persona's fallback note before any
    turn): the fallback note, a user actor's system prompt and an agent's were found nowhere."""
    p = fixture_path("ensemble") / "v1_ensemble_site_sample_non_kernel.jsonl"
    hits = _hits(p, "adapter_name")
    assert [(h.turn, h.field, h.where) for h in hits] == [(None, "text", "note")], hits
    hits = _hits(p, "long-tenured Plank customer")
    assert [(h.turn, h.where) for h in hits] == [(0, "system prompt alice")], hits


def test_result_files_beside_the_runs_are_not_counted_as_runs(tmp_path, monkeypatch):
    """A Harbor job holds a reward.json beside each trajectory.json: `ktui runs` lists 3 runs, and
    search said "in 3 of 6 runs" (the result files counted as runs), with or without the index."""
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    jobs = Path(__file__).parent / "fixtures" / "real" / "harbor_minimal" / "results" / "jobs"
    d = tmp_path / "jobs"
    shutil.copytree(jobs, d)
    assert len(list(d.rglob("reward.json"))) == 3 and len(list(d.rglob("trajectory.json"))) == 3
    for with_index in (False, True):
        if with_index:
            assert CliRunner().invoke(main, ["runs", str(d), "--print"]).exit_code == 0
        for pattern in ("relu", "zzz-no-such-text"):
            st = S.SearchStats()
            list(S.search(d, S.Matcher(pattern), stats=st))
            assert st.files == 3 and st.searched == 3, (with_index, pattern, st)
    r = CliRunner().invoke(main, ["search", str(d), "relu"])
    assert "in 3 of 3 runs" in r.stderr
