"""The GPU /sys self-test's two ends (:mod:`ktui.engine.gpusysfs`): ``--probe``, run inside a
sandboxed GPU worker (ktui's code and torch only: the prologue, then CUDA as a kernel's worker would
use it, its answer on one ``SYSFS_PROBE`` line), and ``--selftest``, which runs the probe under the
host's /sys and under the minimal one now (no cache) and prints the record.

    python -m ktui.engine.sysfs_selftest        # exit 0 when the minimal /sys passed
MIT license, part of ktui."""
import json
import sys

from . import gpusysfs


def probe_main():
    """Inside the sandboxed worker: the prologue, then CUDA as a kernel's worker would use it."""
    from .confine import enter

    report = enter()
    out = {"sysfs": report.get("sysfs"), "kept": len(report.get("sysfs_kept") or []),
           "errors": [e for e in report.get("errors") or [] if "sys" in e][:5]}
    try:
        import torch

        out["cuda"] = bool(torch.cuda.is_available())
        out["count"] = torch.cuda.device_count()
        devs = []
        for i in range(out["count"]):
            p = torch.cuda.get_device_properties(i)
            devs.append([p.name, int(p.total_memory), int(p.multi_processor_count), [p.major, p.minor],
                         str(getattr(p, "pci_bus_id", "")), str(getattr(p, "uuid", ""))])
        out["devices"] = devs
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float64)
        out["sum"] = float((x * 2).sum().item())
        a = torch.ones(256, 256, device="cuda")
        out["matmul"] = float((a @ a).sum().item())
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        (a @ a).sum()
        e.record()
        torch.cuda.synchronize()
        out["event_positive"] = s.elapsed_time(e) > 0
        try:  # NVML (the worker's driver-version query uses it first): its own reads of /sys
            import pynvml

            pynvml.nvmlInit()
            out["nvml"] = [int(pynvml.nvmlDeviceGetCount()), str(pynvml.nvmlSystemGetDriverVersion())]
        except ImportError:
            out["nvml"] = None
        except Exception as exc:  # noqa: BLE001 - pynvml.NVMLError*: said, and compared
            out["nvml"] = f"{type(exc).__name__}: {exc}"[:120]
        free, total = torch.cuda.mem_get_info()
        out["mem_get_info"] = bool(0 < free <= total)
    except Exception as exc:  # noqa: BLE001 - said in the answer
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    print("SYSFS_PROBE " + json.dumps(out), flush=True)


def main(argv):
    if argv[:1] == ["--probe"]:
        probe_main()
        return 0
    if not argv or argv[:1] == ["--selftest"]:
        from . import sandbox

        rec = gpusysfs.selftest(sandbox.Spec, sandbox.Launched)
        rec["key"] = gpusysfs.machine_key()
        print(json.dumps(rec, indent=1))
        return 0 if rec["ok"] else 1
    sys.stderr.write("usage: python -m ktui.engine.sysfs_selftest [--selftest | --probe]\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
