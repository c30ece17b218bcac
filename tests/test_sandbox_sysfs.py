"""A worker's /sys (ktui.engine.sysview, ktui.engine.gpusysfs): CPU workers see only the CPUs and NUMA
nodes (the host's ACPI tables were readable as root, its disks and PCI devices listed); a GPU worker's
minimal /sys (its GPUs' PCI devices, the driver's entry and modules) is opt-in and behind a
self-test that CUDA initializes under it, falling back to the host's /sys and saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ktui.engine import gpusysfs, sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "sandbox"))
from sandbox_corpus import run_code  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
linux_ns = pytest.mark.skipif(not sandbox.detect()["namespaces"] or sys.platform != "linux",
                              reason="needs user namespaces (unshare)")

LOOK = '''
import json, os
def ls(p):
    try:
        return sorted(os.listdir(p))
    except OSError:
        return None
out = {"firmware": ls("/sys/firmware"), "block": ls("/sys/block"), "net": ls("/sys/class/net"),
       "pci": ls("/sys/bus/pci/devices"), "dmi": os.path.exists("/sys/class/dmi/id"),
       "online": open("/sys/devices/system/cpu/online").read().strip()}
try:
    open("/sys/devices/system/cpu/online", "w"); out["writable"] = True
except OSError:
    out["writable"] = False
print("OUT " + json.dumps(out), flush=True)
'''


@linux_ns
def test_a_cpu_worker_sees_only_cpus_and_numa_nodes_of_the_machine():
    """Row 23 of the third pass: as root, a worker read the host's ACPI tables (a sysfs of its own
    network namespace is still the machine's sysfs); it also listed the disks and every PCI device."""
    got, w = run_code(LOOK)
    assert got is not None, w.tail("stderr")[-1500:]
    assert got["firmware"] == [] and not got["block"] and got["net"] == ["lo"] and not got["pci"] and not got["dmi"], got
    assert got["online"] == Path("/sys/devices/system/cpu/online").read_text().strip()
    assert got["writable"] is False


_UNSHARE = shutil.which("unshare")


def _in_mount_namespace(code: str, *args: str) -> dict:
    r = subprocess.run([_UNSHARE, "--user", "--map-root-user", "--mount", "--net", sys.executable, "-c", code, *args],
                       capture_output=True, text=True, timeout=120, cwd=str(REPO))
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("OUT ")]
    assert line or "Traceback" not in r.stderr, r.stderr[-2000:]  # the code failed: not a missing feature
    if not line:
        pytest.skip(f"no mount namespace here: {r.stderr[-300:]}")
    return json.loads(line[-1][4:])


BUILD = '''
import json, os, sys
sys.path.insert(0, ".")
from ktui.engine.oslib import MS_PRIVATE, MS_REC, _mount
from ktui.engine.sysview import minimal_sysfs
_mount(None, "/", None, MS_REC | MS_PRIVATE)
t, vendor, fresh = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
rep = {"errors": []}
ok = minimal_sysfs(t, True, rep, vendors=(vendor,), fresh=fresh)
links = sorted(os.listdir(t + "/bus/pci/devices")) if ok else []
out = {"ok": ok, "errors": rep["errors"], "links": links,
       "vendors": [open(f"{t}/bus/pci/devices/{n}/vendor").read().strip() for n in links],
       "numa": [os.path.exists(f"{t}/bus/pci/devices/{n}/numa_node") for n in links],
       "cpu": os.path.exists(t + "/devices/system/cpu/online"), "firmware": os.listdir(t + "/firmware") if ok else None,
       "net": sorted(os.listdir(t + "/class/net")) if os.path.isdir(t + "/class/net") else [], "block": os.listdir(t + "/block") if ok else None,
       "source": rep.get("sysfs_source")}
print("OUT " + json.dumps(out), flush=True)
'''


@pytest.mark.skipif(_UNSHARE is None or sys.platform != "linux" or not os.path.isdir("/sys/bus/pci/devices"),
                    reason="needs unshare and a PCI bus")
@pytest.mark.parametrize("fresh", [True, False], ids=["own sysfs", "bound from the host's"])
def test_the_gpu_view_keeps_the_devices_of_its_vendor_only(tmp_path, fresh):
    """The GPU worker's minimal /sys, built for a vendor this machine has (no GPU here: the PCI device
    of some other vendor stands for it): exactly that vendor's devices, reached through their
    bus/pci/devices links, their attributes readable, nothing of the firmware or the disks. Built
    from a sysfs of its own network namespace (the loopback listed), or, where the kernel refuses one
    (a container with masked /sys parts), bound from the host's (no network folder at all)."""
    vendors = {}
    for n in sorted(os.listdir("/sys/bus/pci/devices")):
        try:
            vendors.setdefault(Path(f"/sys/bus/pci/devices/{n}/vendor").read_text().strip(), []).append(n)
        except OSError:
            continue
    if not vendors:
        pytest.skip("no PCI device readable here")
    vendor, names = min(vendors.items(), key=lambda kv: len(kv[1]))
    got = _in_mount_namespace(BUILD, str(tmp_path), vendor, "1" if fresh else "0")
    assert got["ok"], got["errors"]
    assert got["links"] == names and set(got["vendors"]) == {vendor} and all(got["numa"]), got
    assert got["cpu"] and got["firmware"] == [] and got["block"] == []
    assert (got["source"], got["net"]) == (("own", ["lo"]) if fresh else ("host", [])), got


def test_a_gpu_worker_keeps_the_hosts_sys_unless_asked(monkeypatch):
    monkeypatch.delenv(gpusysfs.ENV, raising=False)
    spec = sandbox.Spec("/tmp", device="cuda")
    gpusysfs.resolve(spec)
    assert spec.sysfs == "host" and spec.sysfs_note == ""
    cpu = sandbox.Spec("/tmp")
    gpusysfs.resolve(cpu)
    assert cpu.sysfs == "minimal"
    prof = sandbox.Spec("/tmp", device="cuda")
    monkeypatch.setenv(gpusysfs.ENV, "minimal")
    gpusysfs.resolve(prof, prefix=["ncu"])  # the profiler's target: the host's, never tested
    assert prof.sysfs == "host"
    assert "KTUI_GPU_SYSFS=minimal" in gpusysfs.planned_words() or "checked" in gpusysfs.planned_words()


@linux_ns
def test_a_failed_self_test_keeps_the_hosts_sys_and_says_so(monkeypatch, tmp_path):
    """Asked for the minimal GPU /sys on a machine where CUDA does not initialize (this one: no GPU),
    the self-test fails, GPU workers keep the host's /sys, the record is kept in ktui's cache and the
    verdict's words say why."""
    monkeypatch.setenv(gpusysfs.ENV, "minimal")
    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gpusysfs, "_decided", {})
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is here: scripts/gpu/gpu_sysfs.sh checks the passing case")
    except ImportError:
        pass
    spec = sandbox.Spec(str(tmp_path), device="cuda")
    gpusysfs.resolve(spec, (), sandbox.Launched)  # as sandbox.Launched does before it starts a worker
    mode, note = spec.sysfs, spec.sysfs_note
    assert mode == "host" and "self-test failed" in note and "CUDA did not initialize" in note, note
    recs = list((tmp_path / "cache" / "sandbox").glob("gpu-sysfs-*.json"))
    assert len(recs) == 1 and json.loads(recs[0].read_text())["ok"] is False
    assert "self-test failed" in gpusysfs.planned_words()
    words = sandbox.describe({"sysfs": "host", "sysfs_note": note}, True)
    assert any("the host's /sys" in w and "self-test failed" in w for w in words), words
