"""The verify report, typed and versioned (ktui/repro/verify/record.py): ``--json`` round-trips
through ``VerifyReport.from_dict``, and a hostile or malformed dict raises the results' own
``ResultError`` naming the field -- never another exception, never a report that lies."""

from __future__ import annotations

import copy
import json
import math

import pytest

from ktui.report.verify import write_json
from ktui.repro.results import VERIFY_SCHEMA, ResultError
from ktui.repro.verify.plan import RunRow
from ktui.repro.verify.record import VerifyReport, read_report
from ktui.repro.verify.results import build_report


def _report():
    rows = [RunRow(path=f"s/m{i % 2}/p{i}.jsonl", real=f"/x{i}", model=f"m{i % 2}", problem="P", version="v1",
                   final=True, recorded_outcome="passed", recorded_speedup=1.5 + i,
                   note="no reference source in the trace" if i == 2 else "") for i in range(3)]
    return build_report(rows, {}, stats={"runs": 3, "kernels": 0, "wall_s": 0.5, "engine": "local",
                                         "interrupted": False})


def _dict():
    import io

    buf = io.StringIO()
    write_json(_report(), buf)
    return json.loads(buf.getvalue())


def test_round_trip():
    d = _dict()
    rep = VerifyReport.from_dict(d)
    assert rep.to_dict() == d and rep.schema == VERIFY_SCHEMA == d["schema"]
    assert [r.path for r in rep.runs] == ["s/m0/p0.jsonl", "s/m1/p1.jsonl", "s/m0/p2.jsonl"]
    assert rep.runs[0].recorded_speedup == 1.5 and rep.runs[0].reproduced_outcome == "incomplete"
    assert rep.not_judged == 3 and rep.judged == 0
    assert {m.model for m in rep.models} == {"m0", "m1", "all runs"}
    m0 = next(m for m in rep.models if m.model == "m0")
    assert m0.recorded is not None and m0.recorded.pass_rate == 1.0 and m0.recorded.fast_p(1.0) == 1.0
    assert _report().record() == rep  # the live report's own typed form is the same


def test_read_report_from_a_file(tmp_path):
    p = tmp_path / "v.json"
    p.write_text(json.dumps(_dict()))
    assert len(read_report(str(p)).runs) == 3
    p.write_text("{not json")
    with pytest.raises(ResultError, match="not JSON"):
        read_report(str(p))
    p.write_text("[" * 100_000 + "]" * 100_000)  # deeper than the JSON parser goes
    with pytest.raises(ResultError):
        read_report(str(p))
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ResultError):
        read_report(str(p))


def _set(d, path, value):
    cur = d
    for k in path[:-1]:
        cur = cur[k]
    if value is DELETE:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value


DELETE = object()
# (where in the dict, what to put there, the field the error must name)
BAD = [
    ((), [], "report"),
    (("schema",), 2, "schema"),
    (("schema",), "1", "schema"),
    (("schema",), DELETE, "schema"),
    (("runs",), {"0": {}}, "report.runs"),
    (("runs",), None, "report.runs"),
    (("runs", 0), "a run", "runs[0]"),
    (("runs", 0, "path"), None, "runs[0].path"),
    (("runs", 0, "path"), ["x"], "runs[0].path"),
    (("runs", 0, "final"), "yes", "runs[0].final"),
    (("runs", 0, "final"), 1, "runs[0].final"),
    (("runs", 0, "cached"), DELETE, "runs[0].cached"),
    (("runs", 0, "recorded_speedup"), "fast", "runs[0].recorded_speedup"),
    (("runs", 0, "recorded_speedup"), True, "runs[0].recorded_speedup"),
    (("runs", 0, "recorded_speedup"), math.inf, "runs[0].recorded_speedup"),
    (("runs", 0, "reproduced_speedup"), math.nan, "runs[0].reproduced_speedup"),
    (("runs", 0, "kernel_us"), {"mean": 1}, "runs[0].kernel_us"),
    (("runs", 0, "classes"), "ptr_cache", "runs[0].classes"),
    (("runs", 0, "classes"), [1, 2], "runs[0].classes"),
    (("runs", 0, "slot"), {"gpu": 0}, "runs[0].slot"),
    (("runs", 0, "model"), 7, "runs[0].model"),
    (("runs", 0, "verdict"), None, "runs[0].verdict"),
    (("models", 0, "runs"), -1, "models[0].runs"),
    (("models", 0, "runs"), 1.5, "models[0].runs"),
    (("models", 0, "runs"), False, "models[0].runs"),
    (("models", 0, "recorded"), [], "models[0].recorded"),
    (("models", 0, "recorded", "pass_rate"), 7.0, "models[0].recorded.pass_rate"),
    (("models", 0, "recorded", "fast_1"), -0.5, "models[0].recorded.fast_1"),
    (("models", 0, "recorded", "passed"), "2", "models[0].recorded.passed"),
    (("claims_not_holding",), "none", "report.claims_not_holding"),
    (("claims_not_holding",), [{"path": "x"}], "claims_not_holding[0]"),
    (("stats",), [], "stats"),
    (("stats", "nested"), {"a": {"b": 1}}, "stats.nested"),
    (("stats", "wall_s"), math.nan, "stats.wall_s"),
    (("stats", "judged"), -3, "stats.judged"),
    (("stats", "not_judged"), "many", "stats.not_judged"),
]


@pytest.mark.parametrize("path,value,where", BAD, ids=[".".join(map(str, b[0])) + f"={b[1]!r}"[:30] for b in BAD])
def test_bad_shapes_raise_result_error_naming_the_field(path, value, where):
    d = _dict()
    if path:
        _set(d, path, value)
    else:
        d = value
    with pytest.raises(ResultError) as exc:
        VerifyReport.from_dict(d)
    assert exc.value.where.startswith(where), (exc.value.where, where)


@pytest.mark.parametrize("value", [None, 0, "report", b"x", 1.5, [1], True])
def test_not_an_object(value):
    with pytest.raises(ResultError):
        VerifyReport.from_dict(value)


def test_hostile_strings_are_kept_as_data_and_cleaned_by_the_view():
    """The record keeps what the file says (it is data); the view cleans it once."""
    from ktui.view.doc import Para
    from ktui.view.verify import verify_view

    d = _dict()
    evil = "\x1b]0;pwned\x07[bold]x[/bold]<script>alert(1)</script>\x1b[2J\u202e"
    for r in d["runs"] + d["claims_not_holding"]:
        r["path"] = r["model"] = r["reason"] = r["verdict"] = evil
    d["claims_not_holding"] = copy.deepcopy(d["runs"])
    d["models"][0]["model"] = evil
    d["stats"]["engine"] = evil
    rep = VerifyReport.from_dict(d)
    assert rep.runs[0].path == evil
    v = verify_view(rep)
    texts = [s.text for p in v.parts if isinstance(p, Para) for s in p.spans]
    texts += [s.text for t in (v.runs_table, v.models_table) for row in t.rows for c in row for s in c.spans]
    assert any("␛]0;pwned␇" in t for t in texts)
    for t in texts:
        assert "\x1b" not in t and "\x07" not in t and "\u202e" not in t


def test_extra_fields_pass_through_and_huge_values_do_not_break_it():
    d = _dict()
    d["runs"][0]["future_field"] = {"deep": [1, 2, 3]}
    d["stats"]["runs"] = 10**30
    d["runs"][0]["path"] = "p" * 1_000_000
    rep = VerifyReport.from_dict(copy.deepcopy(d))
    assert rep.to_dict()["runs"][0]["future_field"] == {"deep": [1, 2, 3]}
    assert len(rep.runs[0].path) == 1_000_000
