# ---- ktui repro harness: timing (one loop) ---------------------------------------------------
# `Primitives` binds every clock, event and synchronize the loop uses when the worker starts,
# before any trace code is loaded: a kernel that later patches time.perf_counter,
# torch.cuda.Event.elapsed_time, torch.cuda.synchronize or Tensor.zero_ changes what it calls,
# not what the harness calls. (A kernel can still reach the harness's objects in its own
# process; the judge therefore also times N forwards with its own clock and compares.)
#
# `loop` is the only timed loop. Per trial: (CUDA) flush L2 by writing 256 MiB, record a start
# event, call, record an end event, and synchronize (or, for do_bench, queue every trial and
# synchronize once); (host) synchronize, read the clock, call, synchronize, read the clock.
# `measure` repeats batches until the relative standard error of the median is below
# TARGET_RSE or TIME_CAP_S has passed.
# torch imported lazily. MIT license, part of ktui.
import gc

from .defaults import L2_FLUSH_MIB, MAX_SAMPLES, TARGET_RSE, TIME_CAP_S
from .errors import StageFailure, exception_text, guarded, one_line, stats_us


class Primitives:
    """Clocks, events and synchronize, bound once (call `bind` before trace code loads)."""

    def __init__(self):
        import time

        import torch

        self.perf = time.perf_counter
        self.torch = torch
        self.cuda = bool(torch.cuda.is_available())
        self.gc_disable, self.gc_enable, self.gc_isenabled = gc.disable, gc.enable, gc.isenabled
        self.zero_ = torch._C.TensorBase.zero_
        self.no_grad = torch.no_grad
        if self.cuda:
            base = torch._C._CudaEventBase
            self._event_new = base
            self.ev_record = base.record
            self.ev_elapsed = base.elapsed_time
            self.ev_sync = base.synchronize
            self.sync_all = torch._C._cuda_synchronize
            self.stream = None
            # for the stream-order probe: a GPU-side delay and the stream context, bound here too
            self.gpu_sleep = getattr(torch.cuda, "_sleep", None)
            self.stream_ctx = torch.cuda.stream

    def bind_device(self, device):
        """After the CUDA context exists: the stream events are recorded on."""
        if device.type == "cuda":
            self.stream = self.torch.cuda.current_stream(device)

    def event(self):
        return self._event_new(enable_timing=True)

    def record(self, ev):
        self.ev_record(ev, self.stream)

    def synchronize(self, device):
        if device.type == "cuda":
            self.sync_all()


class Quiet:
    """No garbage collection pause inside a timed batch."""

    def __init__(self, prims):
        self.p = prims

    def __enter__(self):
        self._on = self.p.gc_isenabled()
        self.p.gc_disable()
        return self

    def __exit__(self, *exc):
        if self._on:
            self.p.gc_enable()
        return False


class Timer:
    """The one timed loop, for every method (results in microseconds)."""

    def __init__(self, prims, device, progress=None):
        self.p = prims
        self.device = device
        self.progress = progress or (lambda what, i, n: None)
        self._flush = None

    def flush_buffer(self):
        if self._flush is None and self.device.type == "cuda":
            self._flush = self.p.torch.empty(L2_FLUSH_MIB * 2**20 // 4, dtype=self.p.torch.int32, device=self.device)
        return self._flush

    def release(self):
        self._flush = None

    def loop(self, call, n, *, method, label, start=0):
        """Time `call(i)` for i in start..start+n-1; one sample per call."""
        p, dev = self.p, self.device
        out = []
        if dev.type == "cuda" and method != "host":
            buf = self.flush_buffer()
            queued = method == "do_bench"
            pairs = []
            for i in range(start, start + n):
                self.progress(label, i + 1, None)
                s, e = p.event(), p.event()
                p.zero_(buf)
                p.record(s)
                guarded("timing", call, i, trial=i + 1, what=label)
                p.record(e)
                if queued:
                    pairs.append((s, e))
                else:
                    p.sync_all()
                    out.append(p.ev_elapsed(s, e) * 1000.0)
            if queued:
                p.sync_all()
                out = [p.ev_elapsed(s, e) * 1000.0 for s, e in pairs]
            return out
        for i in range(start, start + n):
            self.progress(label, i + 1, None)
            p.synchronize(dev)
            t0 = p.perf()
            guarded("timing", call, i, trial=i + 1, what=label)
            p.synchronize(dev)
            out.append((p.perf() - t0) * 1e6)
        return out

    def measure(self, call, *, method, trials, warmup, label, target_rse=TARGET_RSE, cap_s=TIME_CAP_S,
                max_samples=MAX_SAMPLES, adaptive=True):
        """Warm up, then batches of `trials` until the median is stable (or the cap)."""
        p, dev = self.p, self.device
        with p.no_grad():
            for i in range(max(0, warmup)):
                guarded("timing", call, i, what=label)
            p.synchronize(dev)
            samples, batches = [], 0
            t0 = p.perf()
            stopped = "trials"
            while True:
                with Quiet(p):
                    samples += self.loop(call, trials, method=method, label=label, start=len(samples))
                batches += 1
                if not adaptive:
                    break
                st = stats_us(samples)
                if st["rse"] < target_rse:
                    stopped = "stable"
                    break
                if p.perf() - t0 > cap_s:
                    stopped = "time cap"
                    break
                if len(samples) + trials > max_samples:
                    stopped = "sample cap"
                    break
        return samples, batches, stopped, p.perf() - t0

    def graph_call(self, fn, args, label):
        """`fn(*args)` captured once in a CUDA graph; returns a call(i) that replays it."""
        torch = self.p.torch
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            guarded("timing", fn, *args, what=label)
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.p.sync_all()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                fn(*args)
        except Exception as exc:
            why = f"{label} cannot be captured in a CUDA graph: {one_line(exception_text(exc), 200)}"
            try:
                self.p.sync_all()
                torch.zeros(1, device=self.device).add_(1)
                self.p.sync_all()
            except Exception:
                raise StageFailure("timing", "method_unsupported",
                                   why + "; the CUDA context is unusable afterwards", fatal=True) from None
            raise StageFailure("timing", "method_unsupported", why) from None
        return lambda i: graph.replay()

    def floor(self, trials=50):
        """The empty-op floor of this timer (CUDA): medians, in microseconds."""
        torch, p = self.p.torch, self.p
        if self.device.type != "cuda":
            return None
        tiny = torch.empty(1, device=self.device)
        buf = self.flush_buffer()
        empty, busy, naive, host = [], [], [], []
        for _ in range(3):
            tiny.fill_(0)
        p.sync_all()
        for _ in range(trials):
            s, e = p.event(), p.event()
            p.zero_(buf)
            p.record(s)
            p.record(e)
            p.sync_all()
            empty.append(p.ev_elapsed(s, e) * 1000.0)
            p.zero_(buf)
            p.record(s)
            tiny.fill_(1)
            p.record(e)
            p.sync_all()
            busy.append(p.ev_elapsed(s, e) * 1000.0)
            p.record(s)
            tiny.fill_(2)
            p.record(e)
            p.sync_all()
            naive.append(p.ev_elapsed(s, e) * 1000.0)
            t0 = p.perf()
            tiny.fill_(3)
            p.sync_all()
            host.append((p.perf() - t0) * 1e6)
        med = {k: stats_us(v)["median_us"] for k, v in
               (("empty_busy_us", empty), ("fill_busy_us", busy), ("fill_events_naive_us", naive),
                ("fill_host_naive_us", host))}
        med["trials"] = trials
        med["busy_queue_us"] = med["empty_busy_us"]
        med["naive_us"] = med["fill_host_naive_us"]
        return med
