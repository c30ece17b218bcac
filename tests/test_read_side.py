"""The read side refuses what is not a trace, in one line, and never blocks or reads forever."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SEED_TRACE

from ktui.trace import load
from ktui.trace.index import SweepIndex
from ktui.trace.reader import load_bytes

EV = {"tick": 0, "ts_ms": 1000, "actor": None, "payload": {"kind": "system", "note": "ensemble: backend=mock"}}
MSG = {"tick": 1, "ts_ms": 1001, "actor": "harness", "payload": {"kind": "user_message", "text": "Begin."}}
LS = shutil.which("ls") or "/bin/ls"


def ktui(*args, timeout=60, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "ktui", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, stdin=subprocess.DEVNULL)


def one_line_error(r, needle: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ktui: ") and needle in lines[0], r.stderr
    assert "Traceback" not in r.stdout + r.stderr


@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "live.jsonl"
    os.mkfifo(p)
    return p


def test_fifo_and_device_one_line_each(fifo):
    for cmd in ("show", "diff", "replay", "repro", "export"):
        args = [cmd, str(fifo)] + (["-o", str(fifo.parent / "x.py")] if cmd == "export" else [])
        one_line_error(ktui(*args, timeout=30), "not a regular file (a FIFO)")
    one_line_error(ktui("show", "/dev/zero", timeout=30), "not a regular file (a character device)")
    run = load(fifo)
    assert [p.message for p in run.problems] == ["not a regular file (a FIFO): not read"]


def test_search_never_opens_a_fifo_nor_reads_a_device(tmp_path, fifo):
    """``ktui search FIFO TEXT`` hung for ever (open() of a FIFO blocks until a writer comes) and
    ``ktui search LINK-TO-/dev/zero TEXT`` read 1 GB of zeros (9.5 s, 1 GB of memory): search
    opened the file with open(), not as every other reader does. Each is skipped, and said so."""
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    for path, kind in ((fifo, "a FIFO"), (tmp_path / "zero.jsonl", "a character device")):
        r = ktui("search", str(path), "memory", timeout=60)
        assert r.returncode == 1 and f"not a regular file ({kind})" in r.stderr, (r.stdout, r.stderr)
        assert "Traceback" not in r.stderr


def test_directory_scans_refuse_fifos_and_devices(tmp_path, fifo):
    shutil.copy(SEED_TRACE, tmp_path / "seed.jsonl")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    r = ktui("validate", str(tmp_path), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "not a regular file (a FIFO)" in r.stdout and "not a regular file (a character device)" in r.stdout
    idx = SweepIndex(tmp_path, use_cache=False)
    runs = list(idx.summaries())
    assert [s.path for s in runs] == ["seed.jsonl"]
    msgs = [str(i) for i in idx.issues]
    assert any("live.jsonl" in m and "FIFO" in m for m in msgs), msgs
    assert any("zero.jsonl" in m for m in msgs), msgs
    # a link to a device is not "broken": `ktui runs` said "broken symlink (not a regular file)"
    # where `validate` said what it is
    zero = next(m for m in msgs if "zero.jsonl" in m)
    assert "broken" not in zero and "character device" in zero, zero


def test_non_traces_rejected_by_every_command_with_the_same_line(tmp_path):
    shown = ktui("show", LS)
    one_line_error(shown, "not a trace")
    line = shown.stderr.strip()
    for args in (["diff", LS], ["repro", LS], ["replay", LS], ["export", LS, "-o", str(tmp_path / "x.py")],
                 ["compare", LS, str(SEED_TRACE)], ["compare", str(SEED_TRACE), LS, "--print"]):
        r = ktui(*args)
        assert r.returncode == 2 and r.stderr.strip() == line, (args, r.stderr)
    for i in range(3):  # three different files (identical copies would be listed once)
        (tmp_path / f"ls{i}.jsonl").write_bytes(Path(LS).read_bytes() + bytes([i]))
    shutil.copy(SEED_TRACE, tmp_path / "seed.jsonl")
    r = ktui("runs", str(tmp_path), "--print", "--no-cache")
    assert r.returncode == 0 and "1 run in" in r.stdout
    bad = [ln for ln in r.stdout.splitlines() if ln.startswith("error: ls")]
    assert len(bad) == 3 and all("not a trace" in ln for ln in bad)
    r = ktui("runs", str(tmp_path), "--format", "json", "--no-cache")
    assert [x["path"] for x in json.loads(r.stdout)["runs"]] == ["seed.jsonl"]


def test_bom_cr_only_and_single_partial_line():
    line = json.dumps(EV).encode()
    run = load_bytes(b"\xef\xbb\xbf" + line + b"\n" + json.dumps(MSG).encode() + b"\n")
    assert run.problems == [] and len(run.events) == 2  # the BOM does not cost the first event
    run = load_bytes(line + b"\r" + json.dumps(MSG).encode() + b"\r")
    assert run.problems == [] and len(run.events) == 2  # classic-Mac line endings
    run = load_bytes(line[:30])
    assert [p.message for p in run.problems] == ["incomplete: the only line is still being written"]
    assert load_bytes(b"").problems[0].message == "empty file: no events"


@pytest.mark.parametrize("sep", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
def test_follower_reads_every_line_ending_as_it_grows(tmp_path, sep):
    """Follow mode on a file written a piece at a time, with LF, CRLF or CR-only line endings:
    the same events as a whole-file load, a half-written line (or a CRLF cut between its CR
    and LF) held back until it ends."""
    from ktui.trace.reader import Follower

    lines = [json.dumps(EV).encode(), json.dumps(MSG).encode(), json.dumps(dict(MSG, tick=2)).encode()]
    data = b"".join(ln + sep for ln in lines)
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"")
    f = Follower(p)
    cuts = [len(lines[0]) + 1, len(lines[0]) + len(sep), len(lines[0]) + len(sep) + 7, len(data)]
    seen = []
    for cut in cuts:
        p.write_bytes(data[:cut])
        f.poll()
        seen.append(len(f.run.events))
        assert f.run.problems == [], (cut, f.run.problems)
    assert seen[-1] == 3 and seen == sorted(seen)
    whole = load_bytes(data)
    assert [e.kind for e in f.run.events] == [e.kind for e in whole.events]


def test_file_in_a_directory_without_execute_permission(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads through any permission")
    d = tmp_path / "locked"
    d.mkdir()
    shutil.copy(SEED_TRACE, d / "t.jsonl")
    d.chmod(0o600)
    try:
        one_line_error(ktui("show", str(d / "t.jsonl")), "Permission denied")
    finally:
        d.chmod(0o700)


def test_unknown_command_suggests_close_ones():
    r = ktui("shwo", "x")
    assert r.returncode == 2 and "Did you mean 'show'" in r.stderr and "Traceback" not in r.stderr
    r = ktui("compre", "a", "b")
    assert "Did you mean 'compare'" in r.stderr


def test_export_refuses_to_overwrite(tmp_path):
    out = tmp_path / "repro.py"
    out.write_text("mine\n")
    r = ktui("export", str(SEED_TRACE), "--version", "v4", "-o", str(out))
    one_line_error(r, "exists (use --force to overwrite)")
    assert out.read_text() == "mine\n"
    r = ktui("export", str(SEED_TRACE), "--version", "v4", "-o", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert out.read_text() != "mine\n"


def test_apps_print_when_not_on_a_terminal(tmp_path):
    other = ROOT / "tests" / "fixtures" / "compare" / "popcorn_l1_p27_test-agent-b.jsonl"
    r = ktui("compare", str(SEED_TRACE), str(other), timeout=60)
    assert r.returncode == 0 and "failed calls" in r.stdout and "\x1b" not in r.stdout
    shutil.copy(SEED_TRACE, tmp_path / "seed.jsonl")
    r = ktui("runs", str(tmp_path), "--no-cache", timeout=60)
    assert r.returncode == 0 and "1 run in" in r.stdout and "per model" in r.stdout
    r = ktui("replay", str(SEED_TRACE), timeout=60)
    assert r.returncode == 0 and "L1 P27 27_permutation_all_to_all.py" in r.stdout and "turn 8" in r.stdout


def test_split_diff_keeps_markers_and_piped_output_never_wraps():
    r = ktui("diff", str(SEED_TRACE), "v3", "v4", "--split")
    assert r.returncode == 0
    rows = r.stdout.splitlines()
    assert any(" -__global__ void permute_kernel" in ln and "+__global__ void permute_kernel" in ln for ln in rows)
    # the longest kernel line is whole on one row, and so is every flag of `show`
    longest = max(load(SEED_TRACE).kernel("v4").code.splitlines(), key=len)
    assert any(longest.strip() in ln for ln in rows)
    # `show` wraps at the width it is given (COLUMNS, else 100 piped): wide enough, every flag is whole
    env = {**os.environ, "COLUMNS": "400"}
    r = subprocess.run([sys.executable, "-m", "ktui", "show", str(SEED_TRACE), "--full"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    out = r.stdout
    for f in load(SEED_TRACE).flags:
        assert f.message in out, f.message  # not broken across rows
    assert "Expected a 'cuda' device type for generator but found 'cpu'" in out


def test_piped_split_diff_pads_no_line():
    """`ktui diff --split | cat` padded every line with blanks to the widest (476 cells on a
    KTBench fixture, 296 lines ending in blanks): only the left column is padded now, to align the
    right one; no line ends in a blank, and the markers and the longest line stay whole."""
    r = ktui("diff", str(SEED_TRACE), "v3", "v4", "--split")
    assert r.returncode == 0
    rows = r.stdout.splitlines()
    assert rows and not [ln for ln in rows if ln != ln.rstrip()], [ln for ln in rows if ln != ln.rstrip()][:3]
    assert any(" -__global__ void permute_kernel" in ln and "+__global__ void permute_kernel" in ln for ln in rows)


def test_pager_key_hands_safe_raw_lines(tmp_path):
    import asyncio

    from ktui.trace.model import Event
    from ktui.tui.app import replay_app
    from ktui.tui.widgets.documents import raw_lines_text

    ev = Event(line=7, offset=0, length=10, kind="system")
    text = raw_lines_text([ev], ['{"note": "\x1b]0;x\x07\x9b\u202e"}'])
    assert text.startswith("line 7\t") and not any(c in text for c in "\x1b\x07\x9b\u202e")

    async def go():
        app = replay_app(SEED_TRACE)
        said = []
        orig = app.notify
        app.notify = lambda m, *a, **kw: (said.append(str(m)), orig(m, *a, **kw))[1]
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                if getattr(app.screen, "run", None) is not None:
                    break
            await pilot.press("T")
            for _ in range(40):
                await pilot.pause(0.05)
                if said:
                    break
            assert any("$PAGER" in m for m in said), said  # headless: no terminal to hand over, said so
            assert app.return_code is None

    asyncio.run(go())


def test_unknown_word_is_neither_a_command_nor_a_file():
    """`ktui bogus-cmd`: not "no such file" alone: it says it is no command either, and lists them."""
    r = ktui("bogus-cmd")
    one_line_error(r, "bogus-cmd: neither a command nor a file")
    for cmd in ("show", "validate", "runs", "repro", "verify", "report"):
        assert cmd in r.stderr


def test_validate_missing_file_says_it_once():
    r = ktui("validate", "missing.jsonl")
    assert r.returncode == 1 and r.stderr == "ktui: missing.jsonl: no such file or directory\n"
    assert (r.stdout + r.stderr).lower().count("no such file") == 1, (r.stdout, r.stderr)
    assert "1 file, 1 with problems" in r.stdout


def test_validate_binary_file_is_one_not_a_trace_line(tmp_path):
    """Like every other command: one line "not a trace", not a line per bad line."""
    f = tmp_path / "ls.jsonl"
    f.write_bytes(Path(LS).read_bytes()[:200_000])
    r = ktui("validate", str(f))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 2 and "not a trace" in lines[0] and lines[0].startswith("✗ "), r.stdout
    shown = ktui("show", str(f))
    assert shown.stderr.strip().split(": ", 2)[-1] in lines[0]  # the same words as `show`


def test_validate_prints_one_record_a_line(tmp_path):
    """A long path, a long problem and excerpt: never wrapped (grep finds every record whole)."""
    d = tmp_path / ("d" * 90)
    d.mkdir()
    f = d / "t.jsonl"
    f.write_text(json.dumps(EV) + "\n" + '{"tick": 1, "payload": ' + "x" * 300 + "\n" + json.dumps(MSG) + "\n")
    env_cols = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "ktui", "validate", str(f)], capture_output=True, text=True,
                       timeout=60, cwd=ROOT, env=env_cols, stdin=subprocess.DEVNULL)
    lines = r.stdout.splitlines()
    assert len(lines) == 3, r.stdout
    assert lines[0].startswith("✗ ") and str(f) in lines[0] and "events=" in lines[0]
    assert lines[1].startswith("    line 2: ") and lines[1].endswith("…]") and len(lines[1]) > 80


def test_export_suggests_the_device_the_trace_ran_on(tmp_path):
    cpu = ROOT / "tests" / "fixtures" / "repro" / "cpu_run.jsonl"
    r = ktui("export", str(cpu), "--version", "v3", "-o", str(tmp_path / "a.py"))
    assert r.returncode == 0, r.stderr
    assert "--device cpu" in r.stderr and "--device cuda" not in r.stderr
    r = ktui("export", str(SEED_TRACE), "-o", str(tmp_path / "b.py"))
    assert r.returncode == 0 and "--device cuda" in r.stderr and "H100" in r.stderr


def test_a_message_of_one_huge_line_is_folded(tmp_path):
    """A model's message of one 3 MB line (no newline) was never folded, since blocks fold by
    lines: ``ktui show`` printed all of it without ``--full`` (11 MB and 1.1 GB of memory for a
    10 MB line) and the app drew every wrapped row of the turn. Long lines are broken into lines
    of ``LONG_LINE`` characters, so the block folds; ``--full`` still prints every character."""
    from ktui.view import build_view
    from ktui.view.build import FOLD_KEEP, LONG_LINE

    line = {"tick": 5, "ts_ms": 1778502768000, "actor": "kernel_author", "message_id": None,
            "payload": {"kind": "agent_message", "text": "A" * 3_000_000 + "THE-END"}}
    seed = SEED_TRACE.read_text(encoding="utf-8").splitlines()
    p = tmp_path / "huge_line.jsonl"
    p.write_text("\n".join(seed[:6] + [json.dumps(line)] + seed[6:]) + "\n", encoding="utf-8")
    v = build_view(load(p))
    big = [b for t in v.turns for b in t.blocks if "THE-END" in b.text]
    assert len(big) == 1 and big[0].folded_by_default
    shown = big[0].plain_lines(expanded=False)
    assert len(shown) == FOLD_KEEP + 1 and sum(map(len, shown)) <= FOLD_KEEP * LONG_LINE + 100
    r = subprocess.run([sys.executable, "-m", "ktui", "show", str(p)], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "100"}, timeout=600)
    assert r.returncode == 0 and "THE-END" not in r.stdout and len(r.stdout) < 400_000, len(r.stdout)
    assert "more lines" in r.stdout
    r = subprocess.run([sys.executable, "-m", "ktui", "show", str(p), "--full"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "100"}, timeout=600)
    assert r.returncode == 0 and "THE-END" in r.stdout


def test_the_labels_file_beside_a_sweep_is_not_a_trace_with_a_problem(tmp_path):
    """``ktui label ... --labels DIR/ktui-labels.jsonl`` is how the README shares labels beside a
    sweep; ``runs`` then listed it as "error: ktui-labels.jsonl: not a trace" and ``validate DIR``
    exited 1 on a sweep with nothing wrong. It is read as the sweep's labels, not as a run."""
    shutil.copy(SEED_TRACE, tmp_path / "a.jsonl")
    env = {"KTUI_CACHE_DIR": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    r = subprocess.run([sys.executable, "-m", "ktui", "label", str(tmp_path / "a.jsonl"), "good", "--labels",
                        str(tmp_path / "ktui-labels.jsonl")], capture_output=True, text=True, env={**os.environ, **env})
    assert r.returncode == 0 and (tmp_path / "ktui-labels.jsonl").is_file(), r.stderr
    r = subprocess.run([sys.executable, "-m", "ktui", "validate", str(tmp_path)], capture_output=True, text=True,
                       env={**os.environ, **env})
    assert r.returncode == 0 and "ktui-labels" not in r.stdout + r.stderr, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "ktui", "runs", str(tmp_path), "--print", "--label", "good"],
                       capture_output=True, text=True, env={**os.environ, **env, "COLUMNS": "100"})
    assert r.returncode == 0 and "a.jsonl" in r.stdout and "ktui-labels" not in r.stdout + r.stderr, r.stdout + r.stderr
