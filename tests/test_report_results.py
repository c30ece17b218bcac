"""``ktui report``: each run's detail holds its final kernel's cached reproduction and kept profile
(drawn from the views of ktui/view/repro.py and profile.py through report/html_results.py), looked
up in the repro cache only (nothing runs, the machine is not probed), "not reproduced yet" when the
cache has none; every string from the result escaped (and inert in Chromium)."""

from __future__ import annotations

import base64
import copy
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from ktui.report.html import build_report
from ktui.report.html_results import NOT_PROFILED, NOT_REPRODUCED, run_results
from ktui.trace import load

FIX = Path(__file__).resolve().parent / "fixtures" / "repro"
EVIL = ('\x1b]0;pwned\x07 \x1b[31m[red]R[/red] \u202egnp.exe \x9b2J </script><script>window.__pwned=1</script>'
        '<img src=x onerror="window.__pwned=2"> &amp;')
RAW = ("\x1b", "\x07", "\u202e", "\x9b")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("KTUI_CACHE_DIR", str(d))
    from ktui import settings

    assert settings.current().repro_cache_dir == d  # the settings object gives the cache path
    return d


@pytest.fixture
def no_running(monkeypatch):
    """Cache lookups only: running a kernel, profiling or probing the machine fails the test."""
    def boom(*a, **k):
        raise AssertionError("ktui report ran or probed something")

    monkeypatch.setattr("ktui.repro.runner.run_request", boom)
    monkeypatch.setattr("ktui.repro.api.run_request", boom)
    monkeypatch.setattr("ktui.repro.profile.run.profile_side", boom)
    monkeypatch.setattr("ktui.repro.cache.env_fingerprint", boom)


def _plant_reproduction() -> None:
    from ktui.repro import cache

    e = json.loads((FIX / "panel_result_cpu_run_v3.json").read_text())
    e = copy.deepcopy(e)
    e["result"]["checks"] = [{"name": "timed_outputs", "ok": False, "detail": "wrong while timed " + EVIL}]
    e["result"]["notes"] = ["note " + EVIL]
    assert cache.store(e) is not None


def _profile(status: str = "completed"):
    from ktui.repro.judging.model import Row
    from ktui.repro.profile.run import ProfileReport, SideProfile

    run = load(str(FIX / "cpu_run.jsonl"))
    kv = run.final_kernel
    return ProfileReport(trace="t", version=kv.label, sha1=kv.sha1, status=status, ncu="/x/ncu",
                         ncu_version="2025.1", sides={"kernel": SideProfile("kernel", status, launches=[
                             {"name": "evil_kernel" + EVIL, "id": 1, "duration_s": 1e-5}], wall_seconds=1.0)},
                         rows=[Row(key="profile.memory.dram", label="DRAM throughput", recorded=50.0,
                                   reproduced=48.0, unit="%", verdict="reproduced", note="")],
                         verdict="reproduced", reason="counters as recorded " + EVIL, environment={"gpu": "H100"})


def _plant_profile(status: str = "completed") -> None:
    from ktui.repro.profile.run import keep
    from ktui.repro.recorded import find_reference

    ref, _ = find_reference(load(str(FIX / "cpu_run.jsonl")))
    keep(_profile(status), ref, "cuda")


def _text(doc) -> str:
    out = []
    for p in doc or []:
        if p[0] == "p":
            out.append("".join(s[0] for s in p[3]))
        else:
            out += [c[0] for c in p[4]] + ["".join(s[0] for s in cell[0]) for row in p[5] for cell in row]
    return "\n".join(out)


def test_a_run_with_nothing_cached_says_so(cache_dir, no_running):
    r = run_results(load(str(FIX / "cpu_run.jsonl")))
    assert r["kernel"] == "v3" and r["repro"] is None and r["profile"] is None and not r["note"]
    assert r["missing"] == [NOT_REPRODUCED, NOT_PROFILED] and NOT_REPRODUCED.startswith("not reproduced yet")


def test_the_cached_reproduction_and_profile(cache_dir, no_running):
    _plant_reproduction()
    _plant_profile()
    run = load(str(FIX / "cpu_run.jsonl"))
    r = run_results(run)
    repro, prof = _text(r["repro"]), _text(r["profile"])
    assert " SUSPICIOUS " in repro and "kernel runtime (mean)" in repro
    assert "(cached result from 2026-12-04 19:00:00" in repro and "timed_outputs" in repro
    assert "Nsight Compute profile" in prof and "DRAM throughput" in prof and "(kept profile from " in prof
    for s in (repro, prof):
        for bad in RAW:
            assert bad not in s
    assert "␛]0;pwned␇" in repro and "<U+202E>" in prof and "[red]R[/red]" in prof  # shown, inert
    # the app's badge and the report agree on which result is the run's
    from ktui.repro.api import history, latest_report

    assert latest_report(run, run.final_kernel).key == history(run, run.final_kernel, same_reference=True)[0].key


def test_only_a_completed_profile_is_kept_and_a_forged_one_is_absent(cache_dir, no_running):
    _plant_profile("failed")
    assert run_results(load(str(FIX / "cpu_run.jsonl")))["profile"] is None
    _plant_profile()
    files = list((cache_dir / "profiles").rglob("*.json"))
    assert len(files) == 1
    data = json.loads(files[0].read_text())
    data["entry"]["profile"]["reason"] = "forged"
    files[0].write_text(json.dumps(data))
    assert run_results(load(str(FIX / "cpu_run.jsonl")))["profile"] is None  # the signature fails
    _plant_profile()
    data = json.loads(files[0].read_text())
    data["entry"]["profile"]["schema"] = 999  # another schema, validly signed: absent too
    from ktui.repro import cache

    cache.store_profile(data["entry"]["kernel_sha1"], data["entry"]["key"], data["entry"]["reference_sha1"],
                        data["entry"]["profile"])
    assert run_results(load(str(FIX / "cpu_run.jsonl")))["profile"] is None


def _sweep(tmp_path) -> Path:
    sw = tmp_path / "sweep" / "m"
    sw.mkdir(parents=True)
    shutil.copy(FIX / "cpu_run.jsonl", sw / "cpu_run.jsonl")
    shutil.copy(FIX / "cpu_noref.jsonl", sw / "cpu_noref.jsonl")
    return sw.parent


def _details(page: str) -> list[dict]:
    blobs = re.findall(r'<script type="application/octet-stream" id="d\d+">([^<]*)</script>', page)
    return [json.loads(gzip.decompress(base64.b64decode(b))) for b in blobs]


def test_the_report_page_holds_them_escaped(cache_dir, tmp_path, no_running):
    _plant_reproduction()
    _plant_profile()
    page, _ = build_report(_sweep(tmp_path), use_cache=False, jobs=1)
    for bad in RAW:
        assert bad not in page
    assert "window.__pwned" not in page.split('<script type="application/json"')[0]  # nothing in the markup
    results = [d["results"] for d in _details(page)]
    assert len(results) == 2
    with_repro = [r for r in results if r["repro"]]
    assert len(with_repro) == 1 and with_repro[0]["profile"]  # cpu_run; cpu_noref has no reference: nothing
    assert any(r["repro"] is None and r["missing"][0] == NOT_REPRODUCED for r in results)


@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="needs /usr/bin/chromium")
def test_the_results_in_chromium(cache_dir, tmp_path, no_running):
    pytest.importorskip("playwright.sync_api")
    from playwright.sync_api import sync_playwright

    _plant_reproduction()
    _plant_profile()
    out = tmp_path / "report.html"
    page_text, _ = build_report(_sweep(tmp_path), use_cache=False, jobs=1)
    out.write_text(page_text)
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=args, headless=True)
        try:
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
            page.goto(out.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=20_000)
            shown = {}
            for i in range(page.eval_on_selector_all("#runs tbody tr", "n => n.length")):
                page.click(f"#runs tbody tr >> nth={i}")
                page.wait_for_selector("#detail[data-state='ready']")
                name = page.inner_text("#detail h2")
                shown[name] = (page.inner_text("#run-repro"), page.inner_text("#run-profile"))
                tags = page.eval_on_selector_all("#run-results *", "n => [...new Set(n.map(e => e.tagName))]")
                assert set(tags) <= {"DIV", "H3", "P", "SPAN", "TABLE", "THEAD", "TBODY", "TR", "TH", "TD", "CAPTION"}
                page.screenshot(path=str(tmp_path / f"detail{i}.png"), full_page=True)
            pwned = page.evaluate("window.__pwned === undefined ? null : String(window.__pwned)")
        finally:
            b.close()
    assert pwned is None and not errors, errors
    repro, prof = next(v for k, v in shown.items() if "cpu_run" in k)
    assert "SUSPICIOUS" in repro and "<script>window.__pwned=1</script>" in repro  # as text
    assert "DRAM throughput" in prof and "evil_kernel" in prof
    noref = next(v for k, v in shown.items() if "cpu_noref" in k)
    assert NOT_REPRODUCED in noref[0] and NOT_PROFILED in noref[1]


def test_a_profile_run_is_kept_for_the_report(cache_dir, monkeypatch):
    """``profile()`` (what ``ktui repro --profile`` and the app's ``p`` run) keeps a completed
    profile in the cache; the report then finds it (a stand-in for ncu and the profiled worker:
    a real profile needs a GPU)."""
    import ktui.repro.profile.ncu as N
    import ktui.repro.profile.run as R
    from ktui.repro.profile.run import ProfileOptions, SideProfile

    monkeypatch.setattr(N, "find_ncu", lambda: "/x/ncu")
    monkeypatch.setattr(N, "ncu_version", lambda ncu: "2025.1")
    monkeypatch.setattr(R, "profile_side", lambda side, *a, **k: SideProfile(
        side, "completed", launches=[{"name": f"{side}_k", "id": 1, "duration_s": 1e-5}],
        forward={"launches": 1, "duration_s": 1e-5}, wall_seconds=0.5))
    run = load(str(FIX / "cpu_run.jsonl"))
    rep = R.profile(run, run.final_kernel, ProfileOptions(device="cuda"))
    assert rep.status == "completed"
    r = run_results(run)
    assert r["profile"] is not None and "kernel_k" in _text(r["profile"]) and r["repro"] is None
    # another kernel's profile, or one against another reference, is not this run's
    from ktui.repro.profile.stored import latest

    assert latest(run, run.kernel("v1")) is None
