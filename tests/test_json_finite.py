"""Every JSON ktui writes is valid, strict JSON: an inf or nan (a runtime in milliseconds past
1.8e305 read as microseconds, a judge's infinite standard error) is ``null`` with a field beside it,
``<name>_nonfinite``, saying which; never ``Infinity`` (which Python's json writes and no other
parser reads) nor the string ``"inf"`` where a number belongs (which ``show --json`` wrote)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, SEED_TRACE

WORDS = {"inf", "-inf", "nan", "infinity", "-infinity"}


def _refuse(const: str) -> Any:
    raise ValueError(f"not JSON: {const}")


def strict(text: str) -> Any:
    """``json.loads`` refusing NaN and Infinity; also refuses a non-finite number written as a
    string outside a ``_nonfinite`` field."""
    data = json.loads(text, parse_constant=_refuse)

    def walk(x: Any, key: str = "") -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if not k.endswith("_nonfinite"):
                    walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
        elif isinstance(x, str):
            assert x.lower() not in WORDS, f"{key}: {x!r} (a number as a string)"
        elif isinstance(x, float):
            assert math.isfinite(x)

    walk(data)
    return data


def _inf_trace(tmp_path: Path) -> Path:
    """The seed run with its recorded runtime at 1.5e308 "us" (really ms: x1000 reads as inf)."""
    d = tmp_path / "sweep"
    d.mkdir()
    text = SEED_TRACE.read_text(encoding="utf-8")
    assert text.count('"runtime_us":0.0312') == 2
    p = d / "inf.jsonl"
    p.write_text(text.replace('"runtime_us":0.0312', '"runtime_us":1.5e308'), encoding="utf-8")
    return p


def _ktui(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KTUI_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "100",
           "XDG_DATA_HOME": str(tmp_path / "data")}
    return subprocess.run([sys.executable, "-m", "ktui", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)


def test_show_and_runs_json_write_null_and_the_reason(tmp_path):
    p = _inf_trace(tmp_path)
    r = _ktui(tmp_path, "show", str(p), "--json")
    assert r.returncode == 0, r.stderr
    m = strict(r.stdout)["metrics"]
    assert m["runtime_us"] is None and m["runtime_us_nonfinite"] == "inf"
    timing = next(x for x in m["groups"]["timing"] if x["key"] == "timing.runtime")
    assert timing["value"] is None and timing["value_nonfinite"] == "inf"
    r = _ktui(tmp_path, "runs", str(p.parent), "--format", "json")
    assert r.returncode == 0, r.stderr
    run = strict(r.stdout)["runs"][0]
    assert run["runtime_us"] is None and run["runtime_us_nonfinite"] == "inf"


def test_every_json_output_parses_strictly(tmp_path):
    p = _inf_trace(tmp_path)
    d = str(p.parent)
    assert _ktui(tmp_path, "label", str(p), "suspicious", "--note", "runtime past 1e308").returncode == 0
    outs = {
        "show": _ktui(tmp_path, "show", str(p), "--json"),
        "show --turn": _ktui(tmp_path, "show", str(p), "--turn", "8", "--json"),
        "runs": _ktui(tmp_path, "runs", d, "--format", "json"),
        "validate": _ktui(tmp_path, "validate", str(p), "--json"),
        "repro": _ktui(tmp_path, "repro", str(p), "--final", "--json"),
        "verify": _ktui(tmp_path, "verify", d, "--json"),
    }
    for name, r in outs.items():
        assert "Traceback" not in r.stderr, (name, r.stderr)
        assert r.stdout.strip(), (name, r.stderr)
        strict(r.stdout)
    for name, args in {"search": ("search", str(p), "permute", "--json"),
                       "labels export": ("labels", "export", d, "--format", "jsonl")}.items():
        r = _ktui(tmp_path, *args)
        assert r.returncode == 0, (name, r.stderr)
        lines = r.stdout.splitlines()
        assert lines, name
        for line in lines:
            strict(line)


def test_json_text_and_finite_data():
    from ktui.view.text import finite_data, json_text

    data = {"a": math.inf, "b": [1.0, math.nan, [2.0, -math.inf]], "c": {"d": -math.inf}, "e": 1.5,
            "f": math.nan, "f_nonfinite": "kept", 3: math.inf}
    got = strict(json_text(data))
    assert got == {"a": None, "a_nonfinite": "inf", "b": [1.0, None, [2.0, None]],
                   "b_nonfinite": {"1": "nan", "2/1": "-inf"}, "c": {"d": None, "d_nonfinite": "-inf"},
                   "e": 1.5, "f": None, "f_nonfinite": "kept", "3": None, "3_nonfinite": "inf"}
    assert finite_data(math.inf) is None and finite_data([math.nan]) == [None]
    assert list(finite_data({"x": math.inf, "y": 1})) == ["x", "x_nonfinite", "y"]  # the reason right after


def test_verify_report_json_reads_back(tmp_path):
    """``verify --json`` is read back by ``VerifyReport.from_dict``, which refuses a non-finite
    number: the null (with its reason field beside it) reads back, and writes strict JSON again."""
    import io

    from ktui.report.verify import write_json
    from ktui.repro.verify.record import VerifyReport
    from ktui.view.text import json_text

    p = _inf_trace(tmp_path)
    d = strict(_ktui(tmp_path, "verify", str(p.parent), "--json").stdout)
    d["runs"][0]["recorded_speedup"] = math.inf
    back = strict(json_text(d))
    assert back["runs"][0]["recorded_speedup_nonfinite"] == "inf"
    rep = VerifyReport.from_dict(back)
    assert rep.runs[0].recorded_speedup is None
    out = io.StringIO()
    write_json(rep, out)
    strict(out.getvalue())


def test_exported_script_json_is_strict(tmp_path):
    """The script ``ktui export`` writes prints its ``--json`` through ``_finite``."""
    from ktui.repro.export import export_script
    from ktui.trace import load

    run = load(SEED_TRACE)
    kv = run.final_kernel
    assert kv is not None
    src = export_script(run, kv, "class Model: pass\n", "test")
    assert "_json.dumps(_finite(" in src and "allow_nan=False" in src
    f = tmp_path / "repro_script.py"
    f.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("repro_script_under_test", f)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod._finite({"timing": {"rse": math.inf, "median_us": 3.0, "se": math.nan, "ks": [math.inf]}})
    got = strict(json.dumps(out, allow_nan=False))
    assert got == {"timing": {"rse": None, "rse_nonfinite": "inf", "median_us": 3.0, "se": None,
                              "se_nonfinite": "nan", "ks": [None]}}


def test_no_json_writer_skips_the_finite_pass():
    """Every ``json.dumps`` / ``orjson.dumps`` of a command's output in ktui/report goes through
    ``json_text`` / ``json_data`` / ``finite_data``."""
    bad = []
    for f in sorted((ROOT / "ktui" / "report").glob("*.py")):
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if ("json.dumps(" in line and "finite_data(" not in line and "_json_text" not in f.name
                    and "def _json_text" not in line):
                bad.append(f"{f.name}:{i}: {line.strip()}")
    # runs.py's _json_text writes what json_data made; html.py embeds the page's data (orjson: null)
    allowed = ("runs.py", "html.py")
    assert [b for b in bad if not b.startswith(allowed)] == []
