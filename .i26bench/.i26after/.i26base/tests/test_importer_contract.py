"""The importer contract (ktui/trace/importers/contract.py): every registered importer fits it,
one that does not is refused by name, and the registry dispatches through the typed entries."""

from __future__ import annotations

import types

import pytest

from ktui.trace import importers
from ktui.trace.importers import registry
from ktui.trace.importers.contract import Importer


def test_every_registered_importer_fits():
    assert [i.name for i in importers.IMPORTERS] == importers.names()
    for imp in importers.IMPORTERS:
        assert (imp.detect_line is not None and (imp.load_lines is not None or imp.streamed)) or \
               (imp.detect_object is not None and imp.load_object is not None), imp.name
        assert imp.line_based == (imp.load_lines is not None or imp.streamed)
        assert importers.BY_NAME[imp.name] is imp.module


def _mod(**attrs):
    m = types.ModuleType("fake_importer")
    for k, v in attrs.items():
        setattr(m, k, v)
    return m


@pytest.mark.parametrize(("attrs", "missing"), [
    ({"LABEL": "x", "LINE_BASED": True, "detect_line": bool, "load": bool}, "NAME"),
    ({"NAME": "x", "LABEL": "x", "LINE_BASED": True, "load": bool}, "detect_line"),
    ({"NAME": "x", "LABEL": "x", "detect_object": bool}, "load_object"),
    ({"NAME": "x", "LABEL": "x"}, "detect_object"),
    ({"NAME": "x", "LABEL": "x", "LINE_BASED": True, "detect_line": bool, "load": bool, "load_object": bool},
     "detect_object"),
])
def test_a_module_that_does_not_fit_is_refused_by_name(attrs, missing):
    with pytest.raises(TypeError, match=f"fake_importer.*{missing}"):
        Importer.of(_mod(**attrs))


def test_the_registry_dispatches_through_the_entries(monkeypatch, tmp_path):
    """An importer's detect and load, replaced on its entry, are what the registry calls."""
    seen = []
    imp = next(i for i in importers.IMPORTERS if i.name == "swe-agent")

    def detect(obj):
        seen.append("detect")
        return obj.get("__fake__") is True

    def load(obj, path):
        seen.append("load")
        from ktui.trace.model import Run

        run = Run(path=path)
        run.format = "swe-agent"
        return run

    fake = Importer(name=imp.name, label=imp.label, line_based=False, detect_object=detect, load_object=load,
                    module=imp.module)
    monkeypatch.setattr(registry, "IMPORTERS", [fake if i is imp else i for i in importers.IMPORTERS])
    p = tmp_path / "t.json"
    p.write_text('{"__fake__": true}')
    run = importers.load(str(p))
    assert run.format == "swe-agent" and seen[:1] == ["detect"] and "load" in seen


def test_only_the_readers_own_format_is_streamed(tmp_path):
    """Ensemble is read by the reader (the registry, which the reader uses, cannot read it); a
    streamed module needs no load, and a line-based module that is not streamed still does."""
    assert [i.name for i in importers.IMPORTERS if i.streamed] == ["ensemble"]
    assert Importer.of(_mod(NAME="x", LABEL="x", LINE_BASED=True, STREAMED=True, detect_line=bool)).streamed
    with pytest.raises(TypeError, match="load"):
        Importer.of(_mod(NAME="x", LABEL="x", LINE_BASED=True, STREAMED="yes", detect_line=bool))
    p = tmp_path / "t.jsonl"
    p.write_text('{"tick": 0, "ts_ms": 0, "actor": "a", "payload": {"kind": "x"}}\n')
    with pytest.raises(ValueError, match="reader"):
        registry.load_as(str(p), registry.Detection("ensemble"))
    run = importers.load(str(p))
    assert run.format == "ensemble" and run.path == str(p)
