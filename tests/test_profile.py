"""`ktui repro --profile` without a GPU: parsing, mapping, roofline maths and rendering, from real
ncu output captured on an H200 (tests/fixtures/ncu, see its README for the commands)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BUILD_TIMEOUT_S

from ktui.repro.profile import metrics as M
from ktui.repro.profile.chart import roofline_chart, si
from ktui.repro.profile.compare import compare_profile
from ktui.repro.profile.ncu import (
    NOT_FOUND,
    PERMISSION,
    explain_log,
    find_ncu,
    import_command,
    profile_command,
    unknown_metrics,
)
from ktui.repro.profile.parse import NcuParseError, parse_passes, parse_raw_csv, to_number, unit_factor
from ktui.repro.profile.roofline import classify, roofline
from ktui.repro.profile.run import ProfileOptions, SideProfile, build_report
from ktui.repro.profile.summary import forward_summary, kernel_summary, summarize, top_stalls
from ktui.repro.verdict import DIFFERS, NOT_RECORDED, REPRODUCED

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "ncu"
SEED = REPO / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"
MODES = ("seed_v4", "seed_ref", "mem_scale", "mm_fp32", "mm_bf16")
GEMM_FLOP = 2 * 4096**3


def launches(mode: str, full: bool = False):
    name = f"raw_{mode}.full.csv" if full else f"raw_{mode}.csv"
    return parse_raw_csv((FIX / name).read_text(encoding="utf-8"))


def fwd(mode: str) -> dict:
    return summarize(launches(mode))["forward"]


def details(mode: str) -> dict[tuple[str, str], tuple[str, float | None]]:
    out = {}
    for r in csv.DictReader(io.StringIO((FIX / f"details_{mode}.csv").read_text(encoding="utf-8"))):
        if r.get("Metric Name"):
            out[(r["Section Name"], r["Metric Name"])] = (r["Metric Unit"], to_number(r["Metric Value"]))
    return out


@pytest.fixture(scope="module")
def seed_recorded():
    from ktui.repro.recorded import recorded_for
    from ktui.trace import load

    run = load(str(SEED))
    return recorded_for(run, run.kernel("v4"))


# ---- parsing ----------------------------------------------------------------------------------

def test_units_and_numbers():
    assert unit_factor("us") == 1e-6 and unit_factor("msecond") == 1e-3 and unit_factor("nsecond") == 1e-9
    assert unit_factor("Kbyte") == 1e3 and unit_factor("Mbyte") == 1e6 and unit_factor("byte") == 1.0
    assert unit_factor("Gbyte/s") == pytest.approx(1e9) and unit_factor("Tbyte/second") == pytest.approx(1e12)
    assert unit_factor("Ghz") == 1e9 and unit_factor("cycle/nsecond") == pytest.approx(1e9)
    assert unit_factor("Kbyte/cycle") == 1e3 and unit_factor("Kbyte/block") == 1e3
    assert unit_factor("%") == 1.0 and unit_factor("register/thread") == 1.0
    assert unit_factor("furlong/fortnight") is None
    assert to_number("16,384") == 16384 and to_number("1,980,000") == 1980000 and to_number("0.037367") == 0.037367
    assert to_number("n/a") is None and to_number("") is None and to_number("inf") is None and to_number("12,34") is None


@pytest.mark.parametrize("mode", MODES)
def test_parse_real_raw_pages(mode):
    ls = launches(mode)
    assert len(ls) == 1
    ln = ls[0]
    assert ln.id == 0 and ln.name and ln.block.startswith("(") and ln.grid.startswith("(")
    assert ln.units[M.DURATION] in ("us", "ms")
    assert ln.num(M.DURATION) > 0
    assert ln.text("device__attribute_display_name") is None or isinstance(ln.metrics.get(M.SM_COUNT), float)


def test_trimmed_fixture_parses_like_the_full_page():
    full, trimmed = launches("seed_v4", full=True)[0], launches("seed_v4")[0]
    assert len(full.metrics) > 2000 > len(trimmed.metrics)
    for name, v in trimmed.metrics.items():
        assert full.metrics[name] == v, name
    assert kernel_summary(full) == kernel_summary(trimmed)


def test_values_are_base_units():
    ln = launches("mem_scale")[0]
    assert ln.num(M.DURATION) == pytest.approx(31.104e-6)
    assert ln.num(M.DRAM_READ) == pytest.approx(67.11936e6)
    assert ln.num(M.DRAM_HZ) == pytest.approx(3.194444e9)
    assert ln.num(M.DRAM_PEAK_PER_CYCLE) == pytest.approx(1504.0)
    assert ln.num(M.GRID) == 16384 and ln.num(M.BLOCK) == 128
    assert ln.num(M.SMEM) == 1024.0
    assert launches("mm_fp32")[0].num(M.DURATION) == pytest.approx(2.69248e-3)


def test_not_a_table_and_junk():
    with pytest.raises(NcuParseError):
        parse_raw_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")
    with pytest.raises(NcuParseError):
        parse_raw_csv("")
    # ncu messages around the table (CSV printed to stdout) are skipped
    text = "==PROF== Connected\n" + (FIX / "raw_seed_v4.csv").read_text(encoding="utf-8") + "==PROF== Disconnected\n"
    assert parse_raw_csv(text)[0].num(M.DURATION) == pytest.approx(2.72e-6)


def test_missing_metrics_stay_missing():
    """A page without most metrics: figures are None ("n/a"), never guessed."""
    text = '"ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum","launch__block_size"\n' \
           '"","","","","usecond",""\n"0","k","(32, 1, 1)","(1, 1, 1)","5.0","n/a"\n'
    f = summarize(parse_raw_csv(text))["forward"]
    assert f["duration_s"] == pytest.approx(5e-6)
    for k in ("sm_pct", "dram_pct", "dram_gbs", "fp32_tflops", "occupancy_pct", "l2_hit_pct", "block_size",
              "peak_dram_gbs", "ridge_fp32", "ld_sectors_per_req", "sol_score", "dominant_pipe"):
        assert f[k] is None, k
    assert f["stalls_top"] == []
    assert classify(f)["bound"] is None
    roof = roofline(f, None)
    assert roofline_chart(roof)[0].startswith("(no roofline")


def test_hostile_csv_cannot_blow_up(monkeypatch):
    import ktui.repro.profile.parse as P

    monkeypatch.setattr(P, "MAX_ROWS", 50)
    header = '"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n'
    rows = "".join(f'"{i}","\x1b[31mk{i}[/bold]","{i},000"\n' for i in range(500))
    ls = parse_raw_csv(header + rows + '"bad","row"\n')
    assert len(ls) == 50
    assert ls[3].num("gpu__time_duration.sum") == pytest.approx(3e-6)


def test_passes_and_errors_from_logs():
    for mode in MODES:
        p = parse_passes((FIX / f"log_{mode}.txt").read_text(encoding="utf-8"))
        assert list(p) == ["0"] and p["0"] in (37, 38)
    log = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    assert explain_log(log) == PERMISSION
    assert explain_log("==ERROR== Failed to find metric foo__bar.sum") == "ncu: Failed to find metric foo__bar.sum"
    assert explain_log("==PROF== fine") is None
    assert unknown_metrics("==ERROR== Failed to find metric sm__nope.sum", ["sm__nope.sum", M.DURATION]) == \
        ["sm__nope.sum"]


def test_counter_permission_words_need_the_judges_reading_once_trace_code_ran(tmp_path):
    """ncu's log lies in the profiled process's temp dir: after trace code ran, ERR_NVGPUCTRPERM in it is
    believed only where the judge reads RmProfilingAdminOnly: 1 from the driver itself."""
    from ktui.repro.profile.ncu import NOT_CONFIRMED, counters_admin_only

    log = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
    assert explain_log(log, trace_code_ran=False) == PERMISSION  # before any trace code: ncu's own words
    assert explain_log(log, trace_code_ran=True, admin_only=True) == PERMISSION
    for admin in (False, None):
        why = explain_log(log, trace_code_ran=True, admin_only=admin)
        assert why != PERMISSION and why.startswith(NOT_CONFIRMED.split("{")[0]), why
    assert "not confirmed" in explain_log("==ERROR== Failed to find metric x", trace_code_ran=True)
    # the driver's file (real shape: "Key: value" lines of /proc/driver/nvidia/params)
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\nEnableMSI: 1\n")
    assert counters_admin_only(params) is True
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n")
    assert counters_admin_only(params) is False
    params.write_text("EnableMSI: 1\n")
    assert counters_admin_only(params) is None
    assert counters_admin_only(tmp_path / "absent") is None



def test_passes_with_launch_count_and_library_kernel_names():
    # what `ktui repro --profile` really writes (--launch-count N adds " (K/N)" after the ID; H200 run 1)
    real = (FIX / "log_seed_v4_launch_count.txt").read_text(encoding="utf-8")
    assert parse_passes(real) == {"0": 22}
    log = "\n".join([
        "==PROF== Connected to process 77 (/usr/bin/python3.12)",
        '==PROF== Profiling "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_'
        'alignc4_execute_kernel__5x_cublas" - 0 (1/64): 0%....50%....100% - 31 passes',
        '==PROF== Profiling "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNN" - 1 (2/64): 0%....50%....100% - 27 passes',
        '==PROF== Profiling "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, '
        'float, at::native::binary_internal::MulFunctor<float>>, std::array<char*, 2>>(int, T2, T3)" - 2 (3/64): '
        '0%....50%....100% - 22 passes',
        '==PROF== Profiling "weird \\"quoted\\" name: - 9 passes" - 3 (4/64): 0%....50%....100% - 1 pass',
        '==PROF== Profiling "split_progress" - 4 (5/64): 0%....50%....',
        "100% - 18 passes",
        '==PROF== Profiling "no_id": 0%....50%....100% - 5 passes',
        '==PROF== Profiling "failed_kernel" - 6 (7/64): 0%....',
        "==ERROR== Failed to profile \"failed_kernel\" in process 77",
        "==PROF== Disconnected from process 77",
    ])
    p = parse_passes(log)
    assert p == {"0": 31, "1": 27, "2": 22, "3": 1, "4": 18, "5": 5}
    assert parse_passes("") == {} and parse_passes('==PROF== Profiling "k" - 0 (1/1): 0%....') == {}

# ---- figures against ncu's own details page -------------------------------------------------------------

@pytest.mark.parametrize("mode", ("seed_v4", "mem_scale", "mm_fp32", "mm_bf16"))
def test_figures_match_ncu_details_page(mode):
    d, f = details(mode), fwd(mode)
    sol = "GPU Speed Of Light Throughput"
    unit, dur = d[(sol, "Duration")]
    assert f["duration_s"] == pytest.approx(dur * unit_factor(unit), rel=0.01)
    assert f["dram_pct"] == pytest.approx(d[(sol, "DRAM Throughput")][1], abs=0.01)
    assert f["mem_pct"] == pytest.approx(d[(sol, "Memory Throughput")][1], abs=0.01)
    assert f["sm_pct"] == pytest.approx(d[(sol, "Compute (SM) Throughput")][1], abs=0.01)
    assert f["occupancy_pct"] == pytest.approx(d[("Occupancy", "Achieved Occupancy")][1], abs=0.01)
    assert f["regs_per_thread"] == d[("Launch Statistics", "Registers Per Thread")][1]
    assert f["block_size"] == d[("Launch Statistics", "Block Size")][1]
    assert f["grid_size"] == d[("Launch Statistics", "Grid Size")][1]
    assert f["l2_hit_pct"] == pytest.approx(d[("Memory Workload Analysis", "L2 Hit Rate")][1], abs=0.01)
    assert f["l1_hit_pct"] == pytest.approx(d[("Memory Workload Analysis", "L1/TEX Hit Rate")][1], abs=0.01)
    unit, bw = d[("Memory Workload Analysis", "Memory Throughput")]
    assert f["dram_bps"] == pytest.approx(bw * unit_factor(unit), rel=0.01)


def test_flop_counts_from_sass_and_tensor_counters():
    # 4096^3 fp32 cuBLAS: FFMA only, 2 x 4096^3 FLOP (from the per-cycle rate x elapsed cycles)
    f = fwd("mm_fp32")
    assert f["flop"]["fp32"] == pytest.approx(GEMM_FLOP, rel=1e-3)
    assert f["fp32_tflops"] == pytest.approx(GEMM_FLOP / 2.69248e-3 / 1e12, rel=1e-3)
    # bf16 on tensor cores: the op counter is exactly 2 x 4096^3
    b = fwd("mm_bf16")
    assert b["flop"]["tensor"] == GEMM_FLOP and b["fp32_tflops"] == 0.0
    assert b["tensor_tflops"] == pytest.approx(788.6, rel=1e-3)
    # x * 2.0 on 16 M floats: one FMUL per element
    m = fwd("mem_scale")
    assert m["flop"]["fp32"] == pytest.approx(16 * 2**20, rel=1e-3)
    assert m["ai_fp32"] == pytest.approx(16 * 2**20 / (67.11936e6 + 42.765824e6), rel=1e-3)


def test_peaks_and_ridge_come_from_the_device_counters():
    ln = launches("mem_scale")[0]
    f = fwd("mem_scale")
    bw = 1504.0 * ln.num(M.DRAM_HZ)  # bytes/cycle x DRAM cycles/s
    assert f["peak_dram_bps"] == pytest.approx(bw)
    assert f["peak_dram_gbs"] == pytest.approx(4804.4, rel=1e-3)  # H200 HBM3e ~4.8 TB/s
    p32 = 2 * 16896 * ln.num(M.SM_HZ)  # 2 FLOP x FFMA/cycle over 132 SMs x SM clock
    assert f["peak_flops"]["fp32"] == pytest.approx(p32)
    assert f["peak_fp16_tflops"] == pytest.approx(2 * f["peak_fp32_tflops"])  # HFMA2
    assert f["ridge_fp32"] == pytest.approx(p32 / bw)
    assert 10 < f["ridge_fp32"] < 20
    assert f["peak_flops"]["tensor"] == pytest.approx(540672 * ln.num(M.SM_HZ))


def test_sectors_per_request_and_launch_config():
    f = fwd("seed_v4")
    assert f["ld_sectors_per_req"] == pytest.approx(7.5)  # the page's 7.50 reproduces
    assert f["st_sectors_per_req"] == pytest.approx(45 / 12)
    assert (f["block_size"], f["grid_size"], f["regs_per_thread"], f["smem_per_block_bytes"]) == (256, 2, 16, 1024)
    assert fwd("mem_scale")["ld_sectors_per_req"] == 16.0


def test_stall_shares_are_shares():
    for mode in MODES:
        top = fwd(mode)["stalls_top"]
        assert top and len(top) <= 5
        assert sum(s["share_pct"] for s in top) <= 100.0 + 1e-9
        assert [s["share_pct"] for s in top] == sorted((s["share_pct"] for s in top), reverse=True)
        assert not any(s["reason"] in ("selected", "not_selected") or s["reason"].endswith("_not_issued")
                       for s in top)
    m = fwd("mem_scale")
    assert m["stalls_top"][0]["reason"] == "long_scoreboard"
    assert m["stalls_top"][0]["share_pct"] == pytest.approx(100 * 2997 / sum(m["stall_counts"].values()))
    assert top_stalls({"a": 3.0, "b": 1.0, "c": 0.0}) == [
        {"reason": "a", "share_pct": 75.0, "samples": 3.0}, {"reason": "b", "share_pct": 25.0, "samples": 1.0}]
    assert top_stalls({}) == []


def test_forward_sums_several_launches():
    a, b = kernel_summary(launches("mem_scale")[0]), kernel_summary(launches("mm_fp32")[0])
    f = forward_summary([a, b])
    assert f["launches"] == 2
    assert f["duration_s"] == pytest.approx(a["duration_s"] + b["duration_s"])
    assert f["dram_bytes"] == pytest.approx(a["dram_bytes"] + b["dram_bytes"])
    w = (a["sm_pct"] * a["duration_s"] + b["sm_pct"] * b["duration_s"]) / f["duration_s"]
    assert f["sm_pct"] == pytest.approx(w)  # duration-weighted
    assert f["block_size"] == b["block_size"]  # launch configuration of the longest launch
    assert f["flop"]["fp32"] == pytest.approx(a["flop"]["fp32"] + b["flop"]["fp32"])
    assert forward_summary([]) == {"launches": 0}


# ---- what bounds it --------------------------------------------------------------------------------

def test_classification_words():
    m = classify(fwd("mem_scale"))
    assert m == {"bound": "memory", "words": "memory-bound at 74 % of DRAM peak"}
    c = classify(fwd("mm_fp32"))
    assert c["bound"] == "compute" and c["words"].startswith("compute-bound at 87 % of SM peak") and "fma" in c["words"]
    t = classify(fwd("mm_bf16"))
    assert t["bound"] == "compute" and "tensor pipe" in t["words"]
    s = classify(fwd("seed_v4"))
    assert s["bound"] == "latency"
    assert "occupancy 9.9 %" in s["words"] and "2 blocks for 132 SMs" in s["words"]
    assert classify({"dram_pct": 3.0, "mem_pct": 3.2, "sm_pct": 3.0, "occupancy_pct": 10.0})["words"] == \
        "latency-bound: 3 % of both peaks, occupancy 10 %"
    assert classify({})["bound"] is None


def test_roofline_points():
    roof = roofline(fwd("mm_fp32"), fwd("mem_scale"))
    k, r = roof["points"]
    assert (k["name"], r["name"]) == ("kernel", "reference")
    assert k["side"] == "compute" and r["side"] == "memory"
    assert k["ai"] == pytest.approx(346.7, rel=1e-3)
    assert k["roof_at_ai"] == roof["peak_flops"]["fp32"]
    assert r["roof_at_ai"] == pytest.approx(r["ai"] * roof["peak_dram_bps"])
    assert r["pct_of_roof"] == pytest.approx(74, abs=1.5)  # x*2 runs at ~74 % of its (bandwidth) roof
    b = roofline(fwd("mm_bf16"), None)["points"][0]
    assert b["precision"] == "tensor" and b["pct_of_roof"] == pytest.approx(90, abs=1.5)


# ---- the chart ------------------------------------------------------------------------------------------

def test_chart_draws_roof_points_and_legend():
    lines = roofline_chart(roofline(fwd("mm_fp32"), fwd("mem_scale")), width=60, height=14)
    text = "\n".join(lines)
    assert lines[0] == "FLOP/s"
    assert "K" in text and "R" in text and "┊" in text
    assert any(ch in text for ch in "⠁⠂⠄⡀⠈⠐⠠⢀")  # braille roof
    assert "FLOP/byte" in text and "ridge" in text
    assert text.count("\n") == len(lines) - 1
    plot = lines[1:15]
    assert all(len(ln.split("│", 1)[1]) == 60 for ln in plot)
    # the kernel (compute-bound) sits above the reference (memory-bound), and to its right
    ky = next(i for i, ln in enumerate(plot) if "K" in ln.split("│", 1)[1])
    ry = next(i for i, ln in enumerate(plot) if "R" in ln.split("│", 1)[1])
    assert ky < ry
    assert plot[ky].split("│", 1)[1].index("K") > plot[ry].split("│", 1)[1].index("R")
    assert "K kernel: AI 347 FLOP/B" in text and "compute-bound" in text
    assert "R reference:" in text and "memory-bound at 74 % of DRAM peak" in text


def test_chart_no_flop_point_on_the_floor():
    f = fwd("seed_v4")
    f = dict(f, flop={p: 0.0 for p in f["flop"]})
    lines = roofline_chart(roofline(f, None), width=40, height=8)
    assert "K" in lines[8].split("│", 1)[1]
    assert any("no FLOP (drawn on the floor)" in ln for ln in lines)


def test_si():
    assert si(4.8e12, "B/s") == "4.8TB/s" and si(None) == "n/a" and si(0) == "0" and si(123e9) == "123G"


# ---- the ncu command line -----------------------------------------------------------------------------------

def test_profile_command_line(tmp_path):
    cmd = profile_command("/x/ncu", tmp_path, ["python", "-m", "w"])
    s = " ".join(cmd)
    assert cmd[0] == "/x/ncu" and cmd[-3:] == ["python", "-m", "w"]
    assert "--clock-control none" in s and "--cache-control all" in s and "--profile-from-start off" in s
    assert "--replay-mode kernel" in s and f"--log-file {tmp_path}/ncu.log" in s
    assert cmd[cmd.index("--metrics") + 1].split(",") == M.NCU_METRICS
    assert "--clock-control base" in " ".join(profile_command("ncu", tmp_path, [], clock_control="base"))
    with pytest.raises(ValueError):
        profile_command("ncu", tmp_path, [], clock_control="turbo")
    assert import_command("ncu", "r.ncu-rep") == ["ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw",
                                                 "--print-units", "base"]


def test_find_ncu_honours_env(tmp_path, monkeypatch):
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\necho Version 2099.1.0\n")
    exe.chmod(0o755)
    monkeypatch.setenv("KTUI_NCU", str(exe))
    assert find_ncu() == str(exe)
    from ktui.repro.profile.ncu import ncu_version

    assert ncu_version(str(exe)) == "2099.1.0"


def test_metric_table_is_consistent():
    keys = set(forward_summary([kernel_summary(launches("mem_scale")[0])])) | {"bound"}
    for pm in M.PAGE_METRICS:
        assert pm.value in keys, pm
        assert pm.compare in ("rel", "pct", "exact", "text", "peak")
        assert pm.ncu
    assert len({(pm.group, pm.field) for pm in M.PAGE_METRICS}) == len(M.PAGE_METRICS)
    assert len(set(M.NCU_METRICS)) == len(M.NCU_METRICS)


# ---- recorded vs reproduced against the seed page --------------------------------------------------------

def _row(rows, key):
    return next(r for r in rows if r.key == key)


def test_seed_rows_recorded_vs_reproduced(seed_recorded):
    rows, callouts = compare_profile(seed_recorded, fwd("seed_v4"))
    recorded = [m.key for m in seed_recorded.metrics if m.key.split(".")[0] in ("sol", "roofline", "warp_stalls")]
    assert len(recorded) == 29
    keys = [r.key for r in rows]
    for k in recorded:  # every row the page has, in its order
        assert f"profile.{k}" in keys
    assert _row(rows, "profile.roofline.ld_sectors_per_req").verdict == REPRODUCED  # 7.50 vs 7.5
    assert _row(rows, "profile.roofline.block_size").verdict == REPRODUCED
    assert _row(rows, "profile.roofline.smem_per_block_bytes").verdict == REPRODUCED  # 1024 B
    occ = _row(rows, "profile.roofline.occupancy_pct")
    assert occ.verdict == REPRODUCED and occ.recorded == 10.6 and occ.reproduced == pytest.approx(9.91, abs=0.01)
    l2 = _row(rows, "profile.roofline.l2_hit_pct")
    assert l2.verdict == DIFFERS and l2.recorded_text == "99.3 %"
    assert _row(rows, "profile.roofline.peak_bw_gbs").verdict == DIFFERS  # H100 spec sheet vs the H200
    assert _row(rows, "profile.sol.ridge_point").verdict == DIFFERS
    regs = _row(rows, "profile.roofline.regs_per_thread")
    assert regs.verdict == NOT_RECORDED and regs.reproduced == 16 and regs.recorded_text == "—"
    bott = _row(rows, "profile.sol.bottleneck")
    assert bott.verdict == NOT_RECORDED and bott.reproduced == "latency" and "unknown" in bott.note
    ai = _row(rows, "profile.sol.arithmetic_intensity")
    assert ai.verdict == NOT_RECORDED  # the page has "—"
    # the impossible stall values, with the measured value beside them
    ls = _row(rows, "profile.warp_stalls.long_scoreboard")
    assert ls.recorded == 2856.6 and ls.reproduced == 100.0 and ls.verdict == DIFFERS
    assert "impossible" in ls.note and "100.0 %" in ls.note
    assert any("2856.6" in c and "measured here 29.09 -> 2,909 %" in c for c in callouts)
    assert any("add up to 4,560.4 %" in c for c in callouts)
    ss = _row(rows, "profile.warp_stalls.short_scoreboard")
    assert ss.recorded == 1703.8 and ss.reproduced == 0.0 and "impossible" in ss.note
    # a tiny kernel really is at ~0 % of DRAM: no "implausible" call on the SOL here
    assert not any("implausible" in c for c in callouts)


def test_sol_of_4e_4_for_a_kernel_that_reaches_bandwidth(seed_recorded):
    rows, callouts = compare_profile(seed_recorded, fwd("mem_scale"))
    sol = _row(rows, "profile.sol.sol_score")
    assert sol.verdict == DIFFERS and "implausible" in sol.note and "73.5 %" in sol.note
    dram = _row(rows, "profile.sol.dram_util_pct")
    assert "implausible" in dram.note
    assert any(c.startswith("SOL score") for c in callouts)
    bw = _row(rows, "profile.roofline.dram_bandwidth_gbs")
    assert "implausible" in bw.note and "3,533 GB/s" in bw.note


def test_no_recorded_counters_still_shows_the_measured_page():
    rows, callouts = compare_profile(None, fwd("mm_fp32"))
    assert {r.verdict for r in rows} <= {NOT_RECORDED}
    assert len(rows) >= len(M.PAGE_METRICS)
    assert _row(rows, "profile.sol.bottleneck").reproduced == "compute"
    assert callouts == []


def _report(seed_recorded, kmode="seed_v4", rmode="seed_ref"):
    def side(name, mode):
        s = summarize(launches(mode))
        return SideProfile(side=name, status="completed", launches=s["kernels"], forward=s["forward"],
                           passes=parse_passes((FIX / f"log_{mode}.txt").read_text()), wall_seconds=12.5,
                           worker={"environment": {"gpu": "NVIDIA H200"}})

    return build_report(str(SEED), "v4", "3cc3c4f9ad60aa", {"kernel": side("kernel", kmode),
                                                           "reference": side("reference", rmode)},
                        seed_recorded, ncu="/usr/local/cuda/bin/ncu", ncu_version="2025.3.1.0",
                        options=ProfileOptions())


def test_report_render_and_json(seed_recorded):
    from rich.console import Console

    from ktui.report.profile import render_profile

    rep = _report(seed_recorded)
    assert rep.status == "completed" and rep.verdict == DIFFERS
    buf = io.StringIO()
    render_profile(Console(file=buf, width=130, color_system=None), rep)
    out = buf.getvalue()
    for label in ("SOL score (0–1)", "dram util %", "compute util %", "bottleneck", "dominant pipe",
                  "arithmetic intensity", "ridge point", "dram bandwidth", "fp32 tflops", "occupancy %",
                  "L1 hit %", "L2 hit %", "ld sectors / req", "st sectors / req", "regs / thread", "smem / block",
                  "block size", "peak bw", "peak fp32 tflops", "peak fp16 tflops", "long scoreboard",
                  "short scoreboard"):
        assert label in out, label
    assert "--clock-control none" in out and "ncu 2025.3.1.0" in out and "38 ncu passes" in out
    assert "values the page cannot have" in out and "impossible" in out
    assert "roofline" in out and "FLOP/byte" in out and "K kernel" in out and "R reference" in out
    assert "latency-bound" in out
    assert "measured warp stalls (share of 2 stall samples — too few samples to mean much): long_scoreboard 100.0 %" \
        in " ".join(out.split())
    assert "recorded on NVIDIA H100 80GB HBM3, profiled on NVIDIA H200" in out
    d = json.loads(json.dumps(rep.to_dict(), default=str))
    assert d["clock_control"] == "none" and d["roofline"]["chart"] and d["roofline"]["points"][0]["name"] == "kernel"
    assert d["roofline"]["ridge"]["fp32"] == pytest.approx(fwd("seed_v4")["ridge_fp32"])
    assert {r["key"] for r in d["rows"]} >= {"profile.sol.sol_score", "profile.warp_stalls.long_scoreboard"}
    assert d["callouts"]


def test_several_launches_are_listed_one_per_line(seed_recorded):
    from rich.console import Console

    from ktui.report.profile import render_profile

    rep = _report(seed_recorded)
    k = rep.sides["kernel"]
    k.launches = [kernel_summary(launches("mem_scale")[0]), kernel_summary(launches("mm_fp32")[0])]
    k.forward = forward_summary(k.launches)
    buf = io.StringIO()
    render_profile(Console(file=buf, width=150, color_system=None), rep)
    out = buf.getvalue()
    assert "kernel: 2 launches" in out
    assert "#0 vectorized_elementwise_kernel<…>: 31.10 μs, SM 6.6 %, DRAM 73.5 %, occupancy 81.8 %, grid 16384 x " \
           "block 128" in out
    assert "#0 sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize2…: 2,692.48 μs" in \
        " ".join(out.split())


def test_untrusted_kernel_names_are_sanitized(seed_recorded):
    from rich.console import Console

    from ktui.report.profile import render_profile

    rep = _report(seed_recorded)
    rep.sides["kernel"].launches[0]["name"] = "evil\x1b]0;pwned\x07[bold red]x[/]\x1b[2J"
    buf = io.StringIO()
    render_profile(Console(file=buf, width=130, force_terminal=True, color_system="truecolor"), rep)
    out = buf.getvalue()
    assert "\x1b]0;" not in out and "\x1b[2J" not in out and "\x07" not in out
    assert "[bold red]x[/]" in out  # shown as text, not markup


def test_failed_kernel_side_is_not_a_profile(seed_recorded):
    sides = {"kernel": SideProfile(side="kernel", status="failed", message="compile_error: boom")}
    rep = build_report("t", "v4", "ab", sides, seed_recorded, ncu="ncu", ncu_version=None, options=ProfileOptions())
    assert rep.status == "failed" and rep.verdict == "not reproducible" and "boom" in rep.message
    assert rep.rows == []


# ---- the command without ncu ---------------------------------------------------------------------------

def test_cli_without_ncu_says_so_in_one_line(tmp_path):
    from ktui.repro.profile.ncu import candidates

    if any(os.path.exists(c) for c in candidates() if not c.startswith(str(tmp_path))):
        pytest.skip("this machine has ncu")
    env = {k: v for k, v in os.environ.items() if k not in ("KTUI_NCU", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    env["PYTHONPATH"] = str(REPO)
    env["KTUI_CACHE_DIR"] = str(tmp_path / "cache")
    if any(os.path.exists(os.path.join(p, "ncu")) for p in env["PATH"].split(os.pathsep)):
        pytest.skip("ncu on PATH")
    out = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and NOT_FOUND in lines[0]


# ncu and the profiled worker get the repro runner's allow-listed environment (runner.judge_env):
# the stand-in's switches are KTUI_ variables because any other name is dropped on the way to it.
FAKE_NCU = r'''#!{python}
"""A stand-in for ncu (tests only): runs the application like ncu does, writes ncu's log lines."""
import os, subprocess, sys
a = sys.argv[1:]
if a == ["--version"]:
    print("Version 2099.1.0"); sys.exit(0)
if "--import" in a:
    print(open(a[a.index("--import") + 1]).read()); sys.exit(0)
vals = {{"--target-processes", "--profile-from-start", "--clock-control", "--cache-control", "--replay-mode",
        "--launch-count", "--metrics", "--export", "--log-file"}}
i, opts = 0, {{}}
while i < len(a) and a[i].startswith("--"):
    if a[i] in vals:
        opts[a[i]] = a[i + 1]; i += 2
    else:
        i += 1
if os.environ.get("KTUI_TEST_FAKE_NCU_MODE") == "report":
    # stand in for ncu AND a GPU: answer as the profiled worker would, and write a real captured report
    import json, shutil
    req = json.load(open(a[-1]))
    side = req["profile"]["side"]
    print(json.dumps({{"event": "ready"}}), flush=True)
    print(json.dumps({{"event": "stage", "stage": "profile", "state": "start"}}), flush=True)
    print(json.dumps({{"event": "result", "status": "completed", "environment": {{"gpu": "NVIDIA H200"}},
                      "profile": {{"side": side, "warmup": req["profile"]["warmup"], "forwards_profiled": 1}}}}),
          flush=True)
    src = os.path.join(os.environ["KTUI_TEST_FAKE_NCU_FIXTURES"],
                       "raw_seed_v4.csv" if side == "kernel" else "raw_seed_ref.csv")
    shutil.copy(src, opts["--export"] + ".ncu-rep")
    # the real line's shape under --launch-count N (H200 run 1)
    open(opts["--log-file"], "w").write('==PROF== Profiling "k" - 0 (1/' + opts["--launch-count"] +
                                        '): 0%....50%....100% - 12 passes\n')
    sys.exit(0)
if os.environ.get("KTUI_TEST_FAKE_NCU_MODE") == "hang":
    open(os.environ["KTUI_TEST_FAKE_NCU_PIDFILE"], "w").write(str(os.getpid()))
    print('{{"event": "ready"}}', flush=True)
    import time
    time.sleep(300)
if os.environ.get("KTUI_TEST_FAKE_NCU_MODE") == "kernel_says_perm":
    # the profiled worker starts the kernel's build; the kernel prints ncu's permission words and writes
    # them into ncu's log (a file in its own temp dir), then the worker fails
    import json
    print(json.dumps({{"event": "ready"}}), flush=True)
    print(json.dumps({{"event": "stage", "stage": "build", "state": "start"}}), flush=True)
    words = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
             "Counters on the target device 0.")
    print(words, flush=True)
    open(opts["--log-file"], "a").write(words + "\n")
    print(json.dumps({{"event": "result", "status": "failed", "failure": {{"stage": "build", "kind": "environment",
                      "message": words}}}}), flush=True)
    sys.exit(1)
if os.environ.get("KTUI_TEST_FAKE_NCU_MODE") == "perm":
    open(opts["--log-file"], "w").write("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
                                        "NVIDIA GPU Performance Counters on the target device 0.\n")
    sys.exit(1)
# real ncu starts helper processes before the application (on the H200 the profiled worker was
# PID 7 or so in the sandbox's PID namespace, not 1 or 2): do the same
for _ in range(4):
    subprocess.call(["true"])
rc = subprocess.call(a[i:])
open(opts["--log-file"], "w").write("==PROF== Connected to process 1\n")
sys.exit(rc)
'''


def _fake_ncu(tmp_path):
    exe = tmp_path / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable))
    exe.chmod(0o755)
    return exe


def _no_gpu() -> bool:
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                         capture_output=True, text=True, timeout=120)
    return out.returncode == 0 and out.stdout.strip() == "False"


@pytest.mark.skipif(not _no_gpu(), reason="needs torch and no CUDA GPU")
@pytest.mark.parametrize("mode, needle", [("run", "no CUDA GPU here"), ("perm", "ERR_NVGPUCTRPERM")])
def test_cli_with_ncu_but_no_gpu_or_no_counters(tmp_path, mode, needle):
    """The real worker under a stand-in ncu: no GPU (or no counter access) is one line and exit 1."""
    env = dict(os.environ, KTUI_NCU=str(_fake_ncu(tmp_path)), KTUI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO), KTUI_TEST_FAKE_NCU_MODE=mode)
    out = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile"],
                         capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ktui: cannot profile: ") and needle in lines[0]
    # --json carries the same status
    out = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile", "--json"],
                         capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode == 1
    d = json.loads(out.stdout)
    assert d["status"] == "unavailable" and needle in d["message"]


@pytest.mark.skipif(not _no_gpu(), reason="needs torch and no CUDA GPU")
def test_a_kernel_printing_ncus_permission_words_is_not_believed(tmp_path):
    """The kernel (its build stage started) prints ERR_NVGPUCTRPERM and writes it into ncu's log: no
    "cannot profile" (unavailable) on its word; this machine's driver says nothing (no NVIDIA driver)."""
    from ktui.repro.profile.ncu import counters_admin_only

    if counters_admin_only() is not None:
        pytest.skip("this machine has an NVIDIA driver: its own reading would decide")
    env = dict(os.environ, KTUI_NCU=str(_fake_ncu(tmp_path)), KTUI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO), KTUI_TEST_FAKE_NCU_MODE="kernel_says_perm")
    out = subprocess.run([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile", "--json"],
                         capture_output=True, text=True, env=env, timeout=180)
    d = json.loads(out.stdout)
    assert d["status"] != "unavailable", d
    sides = [s for s in (d.get("kernel"), d.get("reference"), *(d.get("sides") or [])) if isinstance(s, dict)]
    text = json.dumps(d)
    assert "not taken as ncu's" in text, text[:2000]
    assert not any(s.get("status") == "unavailable" for s in sides), sides


# ---- the profiled worker's process handling (no ncu needed) ----------------------------------------

def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_run_target_environment_is_the_allow_list(tmp_path, monkeypatch):
    """ncu and the profiled worker (which runs trace code) see an allow-listed environment: a
    credential or an unlisted variable does not reach them; ktui's own settings and PATH do."""
    from ktui.repro.profile.run import run_target

    monkeypatch.setenv("KTUI_PROFILE_ENV_PROBE", "kept")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leak")
    monkeypatch.setenv("FAKE_NCU_MODE", "unlisted")
    show = ("import json, os, sys; print(json.dumps({'event': 'result', 'status': 'completed', "
            "'env': sorted(os.environ)}), flush=True)")
    res = run_target(_py(show), {}, cwd=tmp_path, compile_timeout=60, run_timeout=60)
    assert res["status"] == "completed", res
    assert "KTUI_PROFILE_ENV_PROBE" in res["env"] and "PATH" in res["env"]
    assert "AWS_SECRET_ACCESS_KEY" not in res["env"] and "FAKE_NCU_MODE" not in res["env"]


def test_run_target_deadline_cancel_crash_and_junk(tmp_path):
    import threading
    import time

    from ktui.repro.profile.run import run_target

    hang = "import sys; print('{\"event\": \"ready\"}', flush=True); sys.stdin.read(); import time; time.sleep(120)"
    t0 = time.monotonic()
    res = run_target(_py(hang), {}, cwd=tmp_path, compile_timeout=1.5, run_timeout=1.5)
    assert res["failure"]["kind"] == "timeout" and "during startup" in res["failure"]["message"]
    assert time.monotonic() - t0 < 30
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    res = run_target(_py(hang), {}, cwd=tmp_path, compile_timeout=60, run_timeout=60, cancel=cancel, label="kernel")
    assert res["status"] == "cancelled" and "kernel startup" in res["failure"]["message"]
    # a real fault (the worker may be its PID namespace's init, which ignores signals sent by kill())
    res = run_target(_py("import ctypes; ctypes.string_at(0)"), {}, cwd=tmp_path,
                     compile_timeout=30, run_timeout=30)
    assert res["failure"]["kind"] == "crash" and "SIGSEGV" in res["failure"]["message"]
    junk = ("import json, sys; sys.stdin.read(); print('not json'); print('[1, 2]'); "
            "print(json.dumps({'event': 'stage', 'stage': 'profile', 'state': 'start'})); "
            "print(json.dumps({'event': 'result', 'status': 'completed', 'profile': {'side': 'kernel'}}))")
    seen = []
    res = run_target(_py(junk), {"x": 1}, cwd=tmp_path, compile_timeout=30, run_timeout=30,
                     on_progress=lambda p: seen.append(p.message))
    assert res["status"] == "completed" and res["profile"] == {"side": "kernel"}
    assert seen == ["profile…"]
    res = run_target(_py("import sys; sys.exit(3)"), {}, cwd=tmp_path, compile_timeout=30, run_timeout=30)
    assert res["failure"]["kind"] == "exit" and "status 3" in res["failure"]["message"]


def test_target_output_cannot_forge_events(tmp_path):
    """After the target takes its protocol stream, whatever runs in that process (print, C stdio,
    a child process) writes to stderr: only the target's own events reach stdout."""
    code = ("import os, sys\n"
            "from ktui.engine.profile_target import _protocol_stream\n"
            "proto = _protocol_stream()\n"
            "print('{\"event\": \"result\", \"status\": \"completed\"}', flush=True)\n"
            "os.system('echo forged-by-child')\n"
            "os.write(1, b'forged-by-fd1\\n')\n"
            "proto.write('{\"event\": \"ready\"}\\n'); proto.flush()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert out.returncode == 0, out.stderr
    assert out.stdout == '{"event": "ready"}\n'
    assert "forged-by-child" in out.stderr and "forged-by-fd1" in out.stderr and '"completed"' in out.stderr


def test_run_target_waits_for_the_profiler_to_write_its_report(tmp_path):
    """Like ncu: the wrapper writes its report after the worker has exited; run_target waits for it."""
    from ktui.repro.profile.run import run_target

    wrapper = tmp_path / "wrap.py"
    wrapper.write_text("import subprocess, sys, time\n"
                       "rc = subprocess.call(sys.argv[1:])\n"
                       "time.sleep(1.5)\n"
                       f"open({str(tmp_path / 'report')!r}, 'w').write('done')\n"
                       "sys.exit(rc)\n")
    worker = "import json, sys; print(json.dumps({'event': 'result', 'status': 'completed', 'argv': sys.argv[1:]}))"
    work = tmp_path / "work"
    work.mkdir()
    res = run_target([sys.executable, str(wrapper), sys.executable, "-c", worker], {"a": 1}, cwd=work,
                     compile_timeout=30, run_timeout=30)
    assert res["status"] == "completed" and res["returncode"] == 0
    assert (tmp_path / "report").read_text() == "done"
    req = json.loads(Path(res["argv"][0]).read_text())
    assert req["a"] == 1 and req["work_dir"] == str(work)
    # a worker that closes its output but keeps running is killed at the stage deadline
    sneaky = "import os, time; os.close(1); time.sleep(60)"
    res = run_target([sys.executable, "-c", sneaky], {}, cwd=work, compile_timeout=1.5, run_timeout=1.5)
    assert res["failure"]["kind"] == "timeout"


def test_cli_profile_end_to_end_with_a_stand_in_ncu(tmp_path):
    """The whole command (both sides, read-back, rows, roofline, text and --json) with a stand-in
    for ncu + GPU that answers with the real captured H200 reports."""
    env = dict(os.environ, KTUI_NCU=str(_fake_ncu(tmp_path)), KTUI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO), KTUI_TEST_FAKE_NCU_MODE="report", KTUI_TEST_FAKE_NCU_FIXTURES=str(FIX))
    cmd = [sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
    assert out.returncode == 1, out.stderr  # rows differ from the page
    text = out.stdout
    assert "Nsight Compute profile" in text and "DIFFERS" in text and "ncu 2099.1.0" in text
    assert "kernel: 1 launch (permute_kernel), 2.72 μs in one forward, 12 ncu passes" in text
    assert "reference: 1 launch (index_elementwise_kernel<…>)" in text
    assert "ld sectors / req" in text and "impossible" in text and "FLOP/byte" in text
    assert "latency-bound" in text and "--clock-control none" in text
    # the stand-in never ran the worker: no protections are claimed for it, and it says so
    assert "sandbox (kernel, ncu and the worker): the profiled worker did not report its sandbox" in text
    out = subprocess.run(cmd + ["--json", "--clock-control", "base"], capture_output=True, text=True, env=env,
                         timeout=180)
    d = json.loads(out.stdout)
    assert d["status"] == "completed" and d["clock_control"] == "base" and d["verdict"] == "differs"
    assert d["sides"]["kernel"]["passes"] == {"0": 12}
    assert "--clock-control" in d["sides"]["kernel"]["command"]
    assert d["sides"]["kernel"]["command"][d["sides"]["kernel"]["command"].index("--clock-control") + 1] == "base"
    assert [p["name"] for p in d["roofline"]["points"]] == ["kernel", "reference"]
    row = {r["key"]: r for r in d["rows"]}
    assert row["profile.roofline.ld_sectors_per_req"]["verdict"] == "reproduced"


def test_sigterm_ends_ncu_and_the_worker(tmp_path):
    import signal
    import time

    pidfile = tmp_path / "pid"
    env = dict(os.environ, KTUI_NCU=str(_fake_ncu(tmp_path)), KTUI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=str(REPO), KTUI_TEST_FAKE_NCU_MODE="hang", KTUI_TEST_FAKE_NCU_PIDFILE=str(pidfile))
    proc = subprocess.Popen([sys.executable, "-m", "ktui", "repro", str(SEED), "--version", "v4", "--profile"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    end = time.monotonic() + 60
    while not pidfile.exists() and time.monotonic() < end:
        time.sleep(0.1)
    assert pidfile.exists()
    # the pid it wrote is its PID namespace's: find it by its command line in this namespace's /proc
    children = _pids_running(str(tmp_path / "ncu"))
    assert children, "the stand-in ncu is not running"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "profile cancelled" in err
    end = time.monotonic() + 10
    while _pids_running(str(tmp_path / "ncu")) and time.monotonic() < end:
        time.sleep(0.1)
    assert not _pids_running(str(tmp_path / "ncu")), "the stand-in ncu outlived ktui"


def _pids_running(needle: str) -> list[int]:
    out = []
    for n in os.listdir("/proc"):
        if not n.isdigit():
            continue
        try:
            with open(f"/proc/{n}/cmdline", "rb") as fh:
                args = fh.read().decode("utf-8", "replace").split("\0")
            with open(f"/proc/{n}/stat") as fh:
                zombie = fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if needle in args and not zombie:
            out.append(int(n))
    return out


def test_profiled_target_is_sandboxed(tmp_path, monkeypatch):
    """ncu and the profiled target run in the repro workers' sandbox: the target (the real one's
    main, with hostile code in place of the GPU work, under the stand-in ncu that runs it) cannot
    read a secret from the environment, read a credential folder or write into the user's home;
    ncu still writes its log into the sandbox's temp dir, which ktui reads back."""
    from ktui.engine import sandbox
    from ktui.repro.profile import ncu as N
    from ktui.repro.profile.run import run_target

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MY_API_TOKEN", "s3cret-token")
    monkeypatch.setenv("KTUI_TEST_FAKE_NCU_MODE", "run")
    hostile = ("import os\n"
               "import ktui.engine.profile_target as T\n"
               "def hostile(self, h):\n"
               "    p = self.result['probe'] = {'env': {k: v for k, v in os.environ.items() if 's3cret' in v}}\n"
               f"    home = {str(home)!r}\n"
               "    try:\n"
               "        open(os.path.join(home, 'pwned'), 'w').write('x'); p['wrote_home'] = True\n"
               "    except OSError as exc:\n"
               "        p['wrote_home'] = str(exc)\n"
               "    try:\n"
               "        p['key'] = open(os.path.join(home, '.ssh', 'id_rsa')).read()\n"
               "    except OSError as exc:\n"
               "        p['key'] = 'unreadable: ' + str(exc)\n"
               "    open(os.path.join(self.work_dir, 'mine'), 'w').write('ok')\n"
               "T.Target._run = hostile\n"
               "T.main()\n")
    work = tmp_path / "work"
    (work / "ncu").mkdir(parents=True)
    argv = N.profile_command(str(_fake_ncu(tmp_path)), work / "ncu", [sys.executable, "-c", hostile])
    res = run_target(argv, {}, cwd=work, compile_timeout=BUILD_TIMEOUT_S, run_timeout=120)
    assert res["status"] == "completed", res
    assert res["probe"]["env"] == {}
    assert (work / "mine").read_text() == "ok"
    assert (work / "ncu" / "ncu.log").read_text().startswith("==PROF==")  # ncu wrote after the target
    assert "allow-listed env" in res["sandbox"]
    if not sandbox.detect()["namespaces"]:
        pytest.skip("no user namespaces here: " + sandbox.detect()["why"])
    assert res["probe"]["wrote_home"] is not True and not (home / "pwned").exists()
    assert "PRIVATE-KEY" not in res["probe"]["key"]
    assert "PID namespace" in res["sandbox"] and "read-only filesystem except its temp dir" in res["sandbox"]
    assert any(w.startswith("a minimal /dev (") for w in res["sandbox"]), res["sandbox"]  # not the host's /dev
    assert any("hidden" in w for w in res["sandbox"]) and "capabilities dropped" in res["sandbox"]
    # a worker's report of the wrong shape cannot break the words
    from ktui.repro.profile.run import sandbox_words

    assert "allow-listed env" in sandbox_words({"sandbox_report": {"masked": 5, "mounts": "yes"}}, True)
