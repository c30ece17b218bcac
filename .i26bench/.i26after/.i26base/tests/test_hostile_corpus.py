"""A hostile trace: every field of every event kind filled with escapes, markup, control and bidi
characters, huge numbers, deep nesting and odd timestamps. Every command reads it, in every output
form, and prints no escape byte, no traceback, and exits 0 or 1."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from conftest import ROOT, SEED_TRACE

EVIL = "\x1b]0;pwned\x07\x1b[2J\x1b[31m[bold red]x[/][link=file:///etc]y[/link]\x9b31m\u202eevil\u2066\r\x00\x08"
HUGE_INT = 10**40
HUGE = 1e308


DEEP = "@@DEEP@@"  # replaced in the written line by JSON nested 1,000 deep (json.dumps cannot write it)
DEEP_JSON = '{"k": ' * 500 + "[" * 500 + json.dumps(EVIL) + "]" * 500 + "}" * 500


def deep(n: int):
    if n >= 500:
        return DEEP
    v: object = EVIL
    for _ in range(n):
        v = {"k": [v]}
    return v


def _kernel(tag: str) -> str:
    return (f"# {EVIL}\nimport torch\nfrom torch.utils.cpp_extension import load_inline\n"
            f"src = '''__global__ void k_{tag}(float* x) {{ x[0] = 1; }} // {EVIL}'''\n"
            "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n")


def events(ts):
    e = []

    def ev(actor, payload, t=None):
        e.append({"tick": len(e), "ts_ms": ts[len(e) % len(ts)] if t is None else t, "actor": actor,
                  "message_id": EVIL, "payload": payload})

    ev(None, {"kind": "system", "note": f"ensemble: backend={EVIL} key=sk-abcdefghijklmnop"})
    ev(None, {"kind": "system", "note": f"agent_spawned: {EVIL} model={EVIL}"})
    ev(EVIL, {"kind": "user_message", "text": EVIL * 3})
    ev("harness", {"kind": "user_message", "text": "Begin. " + EVIL * 100})
    ev(EVIL, {"kind": "cost", "unit": "tokens_in", "amount": HUGE, "running_total": HUGE_INT})
    ev(EVIL, {"kind": "cost", "unit": "usd", "amount": HUGE_INT, "running_total": -HUGE})
    ev(EVIL, {"kind": "agent_message", "text": EVIL + "\n<think>" + EVIL + "</think>"})
    ev(EVIL, {"kind": "tool_call", "id": "c0", "name": "fetch_problem", "args": {EVIL: deep(1000)}})
    ev(EVIL, {"kind": "tool_result", "id": "c0", "name": "fetch_problem", "is_error": False,
              "result": {"ok": True, "tool": "fetch_problem", "summary": EVIL,
                         "problem": {"level": HUGE_INT, "problem_id": EVIL, "name": EVIL, "backend": EVIL,
                                     "precision": EVIL, "dataset_variant": EVIL},
                         "ref_arch_src": _kernel("ref"), "details": {EVIL: deep(600)}}})
    for i, name in enumerate(["compile_kernel", "run_correctness", "submit_kernel"]):
        ev(EVIL, {"kind": "tool_call", "id": f"c{i + 1}", "name": name,
                  "args": {"kernel_code": _kernel(str(i)), EVIL: [HUGE, HUGE_INT, deep(50)]}})
        ev(EVIL, {"kind": "tool_result", "id": f"c{i + 1}", "name": name, "is_error": i == 1,
                  "result": {"ok": i != 1, "tool": name, "summary": f"{name} {'FAILED' if i == 1 else 'PASSED'} {EVIL}\n[meta] {{\"error\": \"{EVIL[:5]}\"}}",
                             "error": EVIL, "details": {"runtime_error": EVIL, "x": deep(30)},
                             "runtime_us": HUGE, "ref_runtime_us": HUGE_INT, "speedup": HUGE,
                             "correct": True, "timing": {"mean": HUGE, "median": -HUGE, EVIL: HUGE_INT},
                             "extended_metrics": {EVIL: {EVIL: HUGE_INT}}}})
        ev(EVIL, {"kind": "state_diff", "diff": {EVIL: deep(40)}})
    ev(EVIL, {"kind": "tool_call", "id": EVIL, "name": EVIL, "args": {"kernel_code": _kernel("evil"), EVIL: EVIL}})
    ev(EVIL, {"kind": "tool_result", "id": EVIL, "name": EVIL, "is_error": True,
              "result": {"ok": False, "tool": EVIL, "summary": EVIL, EVIL: deep(20)}})
    ev("assistant", {"kind": "assistant_message", "text": "```python\n" + _kernel("final") + "```\n" + EVIL})
    ev(EVIL, {"kind": "message", "role": "assistant", "content": [{"text": EVIL}, EVIL]})
    ev(EVIL, {"kind": "message", "role": EVIL, "content": EVIL})
    ev(None, {"kind": "grader", "scenario": EVIL, "scores": {EVIL: HUGE, "submitted": HUGE_INT}})
    ev(None, {"kind": "system", "note": json.dumps({"kind": "score", "value": HUGE, "explanation": EVIL})})
    ev(None, {"kind": EVIL, EVIL: EVIL})
    return e


TIMESTAMPS = {
    "year10000": [253402300800000 + 1000 * i for i in range(7)],
    "negative": [-5, -10**12, 0, 3],
    "huge": [2**70, 10**30, -(2**70)],
    "mixed": [1000, 253402300800000 * 10, -1, 2000, 10**19],
}


def write_corpus(dirpath):
    paths = []
    for name, ts in TIMESTAMPS.items():
        p = dirpath / f"hostile_{name}.jsonl"
        with open(p, "w", encoding="utf-8") as f:
            for e in events(ts):
                f.write(json.dumps(e, ensure_ascii=name != "mixed").replace(json.dumps(DEEP), DEEP_JSON) + "\n")
        paths.append(p)
    return paths


BAD_OUTPUT = re.compile("[\x1b\x07\x00\x08\r\x80-\x9f\u202a-\u202e\u2066-\u2069]")


def check(args, timeout=120):
    r = subprocess.run([sys.executable, "-m", "ktui", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL, encoding="utf-8", errors="replace")
    out = r.stdout + r.stderr
    assert "Traceback" not in out, (args, out[-3000:])
    assert r.returncode in (0, 1), (args, r.returncode, out[-2000:])
    bad = BAD_OUTPUT.search(out)
    assert bad is None, (args, repr(out[max(0, bad.start() - 80): bad.end() + 40]))
    return r


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    return write_corpus(d)


def test_corpus_is_hostile(corpus):
    from ktui.trace import load

    for p in corpus:
        run = load(p)
        assert run.turns and run.calls and run.kernels, p  # it reaches every part of the model


@pytest.mark.parametrize("form", [[], ["--json"], ["--full"], ["--turn", "0"]])
def test_show(corpus, form):
    for p in corpus:
        check(["show", p, *form])


def test_validate_diff_replay(corpus):
    check(["validate", *corpus])
    check(["validate", "--json", *corpus])
    check(["validate", corpus[0].parent])
    for p in corpus:
        check(["diff", p])
        check(["diff", p, "--split"])
        check(["replay", p])  # not a terminal: prints


def test_compare_and_runs(corpus, tmp_path):
    check(["compare", *corpus, "--print"])
    check(["compare", corpus[0], SEED_TRACE])
    d = corpus[0].parent
    for form in (["--print"], ["--format", "csv"], ["--format", "json"]):
        check(["runs", d, "--no-cache", *form])
    cache = tmp_path / "cache"
    env_args = ["runs", d, "--print"]
    import os

    os.environ["KTUI_CACHE_DIR"] = str(cache)
    try:
        check(env_args)  # writes the index cache
        check(env_args)  # reads it back
    finally:
        del os.environ["KTUI_CACHE_DIR"]


def test_json_output_is_json(corpus):
    r = check(["show", corpus[0], "--json"])
    d = json.loads(r.stdout)
    assert d["counts"]["tool_calls"] >= 4
    r = check(["runs", corpus[0].parent, "--no-cache", "--format", "json"])
    assert len(json.loads(r.stdout)["runs"]) == len(corpus)


def test_the_app_reads_it(corpus):
    import asyncio

    from ktui.tui.app import replay_app

    async def go(path):
        app = replay_app(path)
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(100):
                await pilot.pause(0.05)
                if getattr(app.screen, "run", None) is not None:
                    break
            assert app.screen.run is not None
            seen = []
            for key in ["j", "j", "j", "G", "2", "3", "4", "5", "1", "e", "slash", "e", "v", "i", "l", "enter"]:
                await pilot.press(key)
                await pilot.pause(0.05)
                strips = app.screen._compositor.render_strips()
                seen.append("\n".join("".join(seg.text for seg in st) for st in strips))
            text = "\n".join(seen)
            bad = BAD_OUTPUT.search(text)
            assert bad is None, repr(text[max(0, bad.start() - 60): bad.end() + 20])
            assert "[bold red]x[/]" in text  # markup shown literally
            assert app.return_code is None

    asyncio.run(go(corpus[0]))
    asyncio.run(go(corpus[2]))
