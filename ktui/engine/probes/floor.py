"""The physical floor: no kernel moves its data faster than the GPU's DRAM. The bytes the
reference reads and writes (its inputs and outputs; timing flushes the L2 before every trial)
divided by the GPU's peak DRAM bandwidth is a time no honest kernel beats; one timed at less
than PHYSICAL_FRACTION of it did not do the work it was timed for (or was not timed doing it).
The empty-op timer floor (measured in the reference worker before any trace code loaded) is
judged with the timing (``below_timer_floor``); both are in this probe's detail.

GPU only: the bandwidth comes from a table of known parts by name (said so when the GPU is not
in it); on the CPU the probe says it does not apply (a host timer has no such floor).
"""

from __future__ import annotations

from . import judge_probe

FLOOR_SEED = 7919 + 80
PHYSICAL_FRACTION = 0.5  # a median below half the DRAM floor is impossible (L2 effects stay well inside)
MIN_FLOOR_US = 1.0  # below this the floor is lost in launch latency: not judged

# peak DRAM bandwidth in GB/s by (a substring of) the GPU's name; the longest match wins; where a
# name covers several parts the fastest is used (a lower floor: never a false finding)
PEAK_DRAM_GBS = {
    "H200": 4800.0, "GH200": 4900.0, "H100 PCIe": 2000.0, "H100 NVL": 3900.0, "H100": 3900.0,
    "H800": 3350.0, "H20": 4000.0, "B200": 8000.0, "GB200": 8000.0, "B100": 8000.0,
    "A100-PCIE-40GB": 1555.0, "A100-SXM4-40GB": 1555.0, "A100": 2039.0, "A800": 2039.0, "A30": 933.0,
    "A10G": 600.0, "A10": 600.0, "L40S": 864.0, "L40": 864.0, "L4": 300.0, "V100": 900.0, "T4": 320.0,
    "RTX 4090": 1008.0, "RTX 5090": 1792.0, "RTX 3090": 936.0, "RTX 6000 Ada": 960.0, "MI300X": 5300.0,
}


def peak_dram_gbs(gpu_name):
    """(GB/s, the table key) for a GPU name, or (None, None) when the part is not known."""
    name = str(gpu_name or "")
    for key in sorted(PEAK_DRAM_GBS, key=len, reverse=True):
        if key.lower() in name.lower():
            return PEAK_DRAM_GBS[key], key
    return None, None


def tensor_bytes(obj):
    import torch

    from ..compare import flatten

    return sum(t.numel() * t.element_size() for t in flatten(obj) if isinstance(t, torch.Tensor))


def floor_us(nbytes, gbs):
    return nbytes / (gbs * 1e9) * 1e6


@judge_probe("physical_floor")
def physical_floor(ctx):
    t = ctx.result.get("timing") or {}
    # the kernel's own timer's median (when ktui's clock disagreed, the reported time is ktui's:
    # the claim judged here is still the one the timer made)
    k = (t.get("kernel_own") or t.get("kernel") or {}).get("median_us")
    if t.get("method_used") in (None, "host") or not str(ctx.result.get("device") or "").startswith("cuda") or not k:
        ctx.add_check("physical_floor", None, "needs CUDA timing (the floor is a GPU's DRAM bandwidth)")
        return
    gpu = (ctx.result.get("environment") or {}).get("gpu")
    bw, key = peak_dram_gbs(gpu)
    if bw is None:
        ctx.add_check("physical_floor", None, f"the peak DRAM bandwidth of this GPU ({str(gpu)[:60]}) is not known "
                      "to ktui: no physical floor")
        return
    ctx.trial(1, 1, "physical_floor")
    inputs, outputs = ctx.reference_io(int(ctx.input_seed) + FLOOR_SEED, "p-floor")
    nbytes = tensor_bytes(inputs.decoded()) + tensor_bytes(outputs.decoded())
    fl = floor_us(nbytes, bw)
    t["physical_floor_us"] = round(fl, 3)
    timer = (t.get("floor") or {}).get("busy_queue_us")
    extra = f"; empty-op timer floor {float(timer):.2f} μs" if isinstance(timer, (int, float)) else ""
    detail = (f"median {k:.2f} μs; moving the {nbytes / 2**20:.2f} MiB of inputs and outputs takes at least "
              f"{fl:.2f} μs at {bw:,.0f} GB/s ({key} peak DRAM bandwidth){extra}")
    if fl >= MIN_FLOOR_US and k < PHYSICAL_FRACTION * fl:
        ctx.add_check("physical_floor", False, f"faster than the memory allows: {detail}: impossible, the timed "
                      "call does not do the work")
        ctx.result["checks"][-1]["evidence"] = f"median {k:.3g} μs, DRAM floor {fl:.3g} μs"
    else:
        ctx.add_check("physical_floor", True, detail)
