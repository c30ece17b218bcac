"""`ktui diff`: headless kernel version diffs (unified text when piped, --split side by side)."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from ktui.cli import main
from ktui.report.diff import diff_command
from ktui.report.render_diff import clean, render_split, split_text_pairs, unified_text_lines

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
FIXTURES = sorted(glob.glob(str(REPO.parent / "shared" / "fixtures" / "**" / "*.jsonl"), recursive=True))
needs_seed = pytest.mark.skipif(not SEED.is_file(), reason="bundled seed trace missing")

V3_V4 = """\
--- v3 (c7fb4e311e, turn 3)
+++ v4 (3cc3c4f9ad, turn 5)
@@ -6,12 +6,12 @@
 #include <torch/extension.h>
 #include <cuda_runtime.h>
<SP>
-__global__ void permute_kernel(const float* __restrict__ x, const int* __restrict__ perm, float* __restrict__ y, int B, int N) {
+__global__ void permute_kernel(const float* __restrict__ x, const int64_t* __restrict__ perm, float* __restrict__ y, int B, int N) {
     int idx = blockIdx.x * blockDim.x + threadIdx.x;
     if (idx < B * N) {
         int b = idx / N;
         int j = idx % N;
-        int p = perm[j];
+        int64_t p = perm[j];
         y[b * N + j] = x[b * N + p];
     }
 }
@@ -22,7 +22,7 @@
     auto y = torch::empty({B, N}, x.options());
     int threads = 256;
     int blocks = (B * N + threads - 1) / threads;
-    permute_kernel<<<blocks, threads>>>(x.data_ptr<float>(), perm.data_ptr<int>(), y.data_ptr<float>(), B, N);
+    permute_kernel<<<blocks, threads>>>(x.data_ptr<float>(), perm.data_ptr<int64_t>(), y.data_ptr<float>(), B, N);
     return y;
 }
 '''
""".replace("<SP>", " ")  # a blank context line is one space


def run(*args: str):
    return CliRunner().invoke(main, ["diff", *args])


@needs_seed
def test_v3_v4_is_exactly_the_three_int64_lines():
    r = run(str(SEED), "v3", "v4")
    assert r.exit_code == 0, r.output
    assert r.output == V3_V4
    minus = [ln for ln in r.output.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln for ln in r.output.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert len(minus) == len(plus) == 3
    assert [p[1:].replace("int64_t", "int") for p in plus] == [m[1:] for m in minus]


@needs_seed
def test_default_is_every_successive_pair_and_refs():
    r = run(str(SEED))
    assert r.exit_code == 0
    heads = re.findall(r"^--- (v\d)", r.output, re.M)
    assert heads == ["v1", "v2", "v3"]
    assert "-    verbose=True" in r.output and "+    verbose=False" in r.output
    # one version: against the one before it; sha1 prefixes and "final" work too
    assert run(str(SEED), "v4").output == V3_V4
    assert run(str(SEED), "c7fb4e31", "final").output == V3_V4
    r = run(str(SEED), "v1", "-U", "0")
    assert r.exit_code == 2  # v1 has no previous version
    r = run(str(SEED), "v2", "v3", "-U", "0")
    assert "@@ -49 +48,0 @@" in r.output and "kernelbench.distributed_collectives" in r.output


@needs_seed
def test_unknown_version_is_one_clear_line():
    r = CliRunner().invoke(main, ["diff", str(SEED), "v9"])
    assert r.exit_code == 2
    assert "v9: no such kernel version (this trace has: v1, v2, v3, v4)" in r.output


@needs_seed
def test_split_side_by_side():
    r = run(str(SEED), "v3", "v4", "--split")
    assert r.exit_code == 0
    rows = [ln for ln in r.output.splitlines() if "int p = perm[j];" in ln]
    assert rows and "int64_t p = perm[j];" in rows[0]  # old and new on one row


@needs_seed
def test_terminal_rendering_has_colours_and_numbers(tmp_path):
    path = tmp_path / "out.txt"
    with open(path, "w") as f:
        con = Console(file=f, force_terminal=True, width=160, color_system="truecolor")
        assert diff_command(SEED, "v3", "v4", console=con) == 0
    out = path.read_text()
    assert "\x1b[" in out and "v3 → v4" in out and "+3" in out and "-3" in out and "26 26" in out


def test_missing_file_and_no_kernels(tmp_path):
    r = CliRunner().invoke(main, ["diff", str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 2 and "no such file" in r.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    r = run(str(empty))
    assert r.exit_code == 2 and "empty file: no events" in r.output  # not a trace: the line `show` prints
    note = tmp_path / "note.jsonl"
    note.write_text('{"tick": 0, "ts_ms": 1, "actor": null, "payload": {"kind": "system", "note": "hi"}}\n')
    r = run(str(note))
    assert r.exit_code == 0 and "no kernel versions" in r.output


@pytest.mark.parametrize("path", FIXTURES, ids=[Path(p).name for p in FIXTURES])
def test_every_fixture(path):
    r = run(path)
    assert r.exit_code == 0, r.output
    assert r.exception is None


def test_hostile_code_is_shown_literally():
    a = "x = 1\ny = '[bold]a[/]'\n"
    b = "x = 2\ny = '[bold]a[/] \x1b[31mred'\n"
    lines = unified_text_lines(a, b)
    plain = "\n".join(t.plain for t in lines)
    assert "[bold]a[/]" in plain and "␛[31mred" in plain and "\x1b" not in plain
    pairs = split_text_pairs(a, b)
    assert all("\x1b" not in t.plain for pair in pairs for t in pair)
    con = Console(width=100, record=True, force_terminal=True)
    con.print(render_split(a, b, title_a="[red]a", title_b="b"))
    assert "[red]a" in con.export_text()
    assert clean("tab\there") == "tab here"


@needs_seed
def test_split_piped_follows_an_asked_width(monkeypatch):
    """`COLUMNS=100 ktui diff TRACE v3 v4 --split | cat` drew 280 columns (wide enough that nothing
    wraps, whatever COLUMNS said); with COLUMNS set each side folds its long lines instead."""
    monkeypatch.setenv("COLUMNS", "100")
    r = run(str(SEED), "v3", "v4", "--split")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert max(len(x) for x in lines) <= 100, max(lines, key=len)
    assert any("int64_t" in x for x in lines) and any("int p = perm[j];" in x for x in lines)
    monkeypatch.delenv("COLUMNS")
    assert max(len(x) for x in run(str(SEED), "v3", "v4", "--split").output.splitlines()) > 100  # unasked: no fold
