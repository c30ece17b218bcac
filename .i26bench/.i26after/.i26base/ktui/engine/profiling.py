# ---- ktui repro harness: memory peak and launches of one forward (CUDA, inside a worker) -----
# torch imported lazily. MIT license, part of ktui.
from .errors import guarded, round_


class DeviceProfile:
    """One profiled region with CPU + CUDA activities.

    Uses torch.autograd.profiler.profile(use_kineto=True) directly: torch.profiler.profile's
    first start() evaluates hasattr(torch, "_inductor"), which imports Inductor (seconds);
    the lower-level profiler records the same Kineto events. Falls back to torch.profiler."""

    def __enter__(self):
        self._p = None
        try:
            import torch.autograd.profiler as ap

            self._p = ap.profile(use_kineto=True, use_cpu=True, use_device="cuda")
            self._p.__enter__()
            self.kind = "autograd.profiler"
        except Exception:
            from torch.profiler import ProfilerActivity, profile

            self._p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            self._p.__enter__()
            self.kind = "torch.profiler"
        return self

    def __exit__(self, *exc):
        return self._p.__exit__(*exc)

    def events(self):
        """(name, device type, duration us, stream) for every recorded event."""
        p = self._p
        kr = getattr(p, "kineto_results", None)
        if kr is None and hasattr(p, "profiler"):
            kr = getattr(p.profiler, "kineto_results", None)
        out = []
        if kr is not None:
            try:
                for e in kr.events():
                    stream = None
                    try:
                        stream = e.device_resource_id()
                    except (AttributeError, RuntimeError, TypeError):
                        stream = None  # this torch's kineto events do not say their stream
                    out.append((e.name(), str(e.device_type()).lower(), e.duration_ns() / 1000.0, stream))
                return out
            except (AttributeError, RuntimeError, TypeError, ValueError):
                out = []  # kineto's API differs across torch versions: the profiler's own events below
        for evt in p.events():
            try:
                dur = float(evt.time_range.elapsed_us())
            except (AttributeError, TypeError, ValueError):
                dur = 0.0  # an event without a time range
            out.append((evt.name or "", str(getattr(evt, "device_type", "")).lower(), dur, None))
        return out



def memory_peak(fn, inputs, device, sync):
    """torch.cuda.max_memory_allocated during one forward, in MiB."""
    import torch

    sync(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    with torch.no_grad():
        out = guarded("memory", fn, *inputs)
    sync(device)
    top = torch.cuda.max_memory_allocated(device)
    reserved = torch.cuda.max_memory_reserved(device)
    del out
    mib = 2**20
    return {"peak_mb": round_(top / mib, 3), "delta_mb": round_((top - base) / mib, 3),
            "reserved_mb": round_(reserved / mib, 3)}


def launches(fn, inputs, device, sync):
    """Device activities (kernels, memcpy, memset) in one profiled forward."""
    import torch

    with torch.no_grad():
        guarded("launches", fn, *inputs)
        sync(device)
        with DeviceProfile() as prof:
            guarded("launches", fn, *inputs)
            sync(device)
    kernels = memcpy = memset = 0
    cuda_us = 0.0
    names, streams = {}, set()
    memcpy_us = 0.0
    for nm, dt, dur_us, stream in prof.events():
        if "cuda" not in dt:
            continue
        low = nm.lower()
        if low.startswith("memcpy"):
            memcpy += 1
            memcpy_us += dur_us
        elif low.startswith("memset"):
            memset += 1
        else:
            kernels += 1
        names[nm[:60]] = names.get(nm[:60], 0) + 1
        cuda_us += dur_us
        if stream is not None:
            streams.add(stream)
    return {"launches": kernels + memcpy + memset, "kernels": kernels, "memcpy": memcpy,
            "memset": memset, "cuda_time_us": round_(cuda_us, 3), "memcpy_time_us": round_(memcpy_us, 3),
            "streams": len(streams), "names": names, "profiler": prof.kind}
