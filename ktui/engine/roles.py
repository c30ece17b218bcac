# ---- ktui repro harness: the worker roles -----------------------------------------------------
# `python -m ktui.engine.worker --role reference|candidate --fd N` (or an exported script with
# --ktui-worker). One process per role and kernel, inside the sandbox; the judge drives it with
# one request at a time over the protocol socket and never trusts what comes back.
#
#   reference: setup, floor, load_reference, init, make_inputs, put_inputs, forward, time, wall,
#              wall_outputs, memory, launches, probe (reference probes: float64, other sizes)
#   candidate: setup, build, init, put_inputs, refill, forward, time, wall, wall_outputs, memory,
#              launches, probe
#
# The sandbox prologue and the timing primitives come first, before torch loads trace code.
# Whatever the kernel prints goes to stdout/stderr (pipes the judge reads with a cap); the
# protocol socket is separate. torch imported lazily. MIT license, part of ktui.
import faulthandler
import os
import socket
import sys
import time

from . import protocol, sandbox, shm
from .build import (
    CPU_NEEDS_CUDA,
    NO_MODEL,
    BuildPatch,
    _dir_has_binary,
    arch_list_for,
    candidate_class,
    environment,
    install_shims,
    load_source,
    needs_cuda,
    resolve_device,
)
from .compare import flatten, set_seed, to_device
from .defaults import FP32_DIRECTIVE, MAX_LIST
from .errors import (
    StageFailure,
    classify_exception,
    exception_text,
    guarded,
    now,
    round_,
    sha1_text,
    stats_us,
)
from .slots import SlotOps
from .values import clone as _clone
from .values import plain as _plain

REQUEST = ("dict", {"id": int, "op": str, "args": ("map", "any")})
OPS = {
    "reference": {"hello", "ping", "setup", "floor", "load_reference", "init", "make_inputs", "put_inputs",
                  "forward", "time", "wall", "wall_outputs", "memory", "launches", "probe", "drop", "bye"},
    "candidate": {"hello", "ping", "setup", "build", "init", "put_inputs", "refill", "forward", "time", "wall",
                  "wall_outputs", "memory", "launches", "probe", "drop", "bye"},
}

# candidate ops whose loops call the kernel directly (what the kernel raises there is its own)
KERNEL_LOOPS = {"time": "timed", "wall": "timed by ktui's clock", "memory": "its memory was measured",
                "launches": "its launches were counted"}


def _tree_nbytes(v):
    """Bytes of the tensors in a value (a copy the checked pass keeps)."""
    import torch

    if isinstance(v, torch.Tensor):
        return v.numel() * v.element_size()
    if isinstance(v, (list, tuple)):
        return sum(_tree_nbytes(x) for x in v)
    if isinstance(v, dict):
        return sum(_tree_nbytes(x) for x in v.values())
    return 0



#: an output tree the protocol can carry (protocol.check_value: 8 levels) and ktui can walk: a kernel's
#: tuple holding itself three times 40 levels deep is 3**40 leaves to a walk, and its worker spent the
#: judge's whole time budget in ktui's own code ("not judged here")
OUTPUT_TREE_DEPTH = 8
OUTPUT_TREE_NODES = MAX_LIST  # (the protocol's longest list)


def bounded_tree(v, stage="correctness"):
    """Raise the kernel's failure when the value tree ``v`` nests containers deeper than
    OUTPUT_TREE_DEPTH or holds more than OUTPUT_TREE_NODES values (a shared subtree counted each time it
    is reached: the walk stops there, whatever the tree's size)."""
    stack, nodes = [(v, 0)], 0
    while stack:
        o, d = stack.pop()
        nodes += 1
        if nodes > OUTPUT_TREE_NODES:
            raise StageFailure(stage, "runtime_error", f"the kernel's output holds more than {OUTPUT_TREE_NODES:,} "
                                                       "values (tensors, numbers, containers)")
        if isinstance(o, (list, tuple, dict)):
            if d >= OUTPUT_TREE_DEPTH:
                raise StageFailure(stage, "runtime_error", f"the kernel's output nests containers deeper than "
                                                           f"{OUTPUT_TREE_DEPTH} levels")
            stack.extend((x, d + 1) for x in (o.values() if isinstance(o, dict) else o))


class Context:
    """What worker-side probes (ktui.engine.probes) can use."""

    def __init__(self, server):
        self.server = server

    @property
    def model(self):
        return self.server.model

    @property
    def module(self):
        return self.server.module

    @property
    def device(self):
        return self.server.device

    @property
    def slots(self):
        return self.server.slots

    @property
    def prims(self):
        return self.server.prims

    @property
    def build_info(self):
        return self.server.build_info

    @property
    def ext_modules(self):
        return self.server.ext_modules


class Server(SlotOps):
    def __init__(self, role, sock, report):
        self.role = role
        self.sock = sock
        self.report = report
        self.device = None
        self.prims = None
        self.timer = None
        self.shims = {}
        self.module = None
        self.model = None
        self.slots = {}
        self.wall_out = []
        self.wall_fp = None
        self.build_info = None
        self.ext_modules = []
        self.flags_before_build = None
        self.req_id = 0
        self._last_progress = 0.0
        self.import_error = None
        self.import_s = 0.0

    def preload(self):
        """torch and the timing primitives, before any request (and before any trace code)."""
        t0 = now()
        try:
            import torch  # noqa: F401

            from .timing import Primitives

            self.prims = Primitives()
        except ImportError as exc:
            self.import_error = str(exc)
        self.import_s = now() - t0

    # ---- plumbing ---------------------------------------------------------------------------------
    def progress(self, what, trial=None, of=None):
        t = time.monotonic()
        if t - self._last_progress < 0.2 and trial not in (None, 1):
            return
        self._last_progress = t
        try:
            protocol.send(self.sock, {"id": self.req_id, "progress": {"what": str(what)[:60], "trial": trial,
                                                                        "of": of}})
        except OSError:
            pass

    def serve(self):
        while True:
            try:
                msg, fds = protocol.recv(self.sock)
            except protocol.ChannelClosed:
                return
            try:
                protocol.check(REQUEST, msg, len(fds), "request")
            except protocol.ProtocolError as exc:
                shm.close_fds(fds)
                self._send_error(0, "worker_error", f"bad request: {exc}", fatal=True)
                return
            self.req_id = msg["id"]
            op = msg["op"]
            if op not in OPS[self.role]:
                shm.close_fds(fds)
                self._send_error(self.req_id, "worker_error", f"op {op!r} is not allowed for the {self.role}", True)
                continue
            out_fds = []
            try:
                data = getattr(self, "op_" + op)(msg["args"], fds, out_fds)
                protocol.send(self.sock, {"id": self.req_id, "ok": True, "data": data}, out_fds)
            except StageFailure as f:
                self._send_error(self.req_id, f.kind, f.message, f.fatal, f.detail, f.trial)
            except protocol.ProtocolError as exc:
                self._send_error(self.req_id, "harness_error", f"reply too large or malformed: {exc}", True)
            except BaseException as exc:  # noqa: B036 - anything trace code raises comes back as data
                kind = classify_exception(exc)[0] if not isinstance(exc, (SystemExit, KeyboardInterrupt)) else "exit"
                import traceback

                text = exception_text(exc)
                if kind == "runtime_error" and self.role == "candidate" and op in KERNEL_LOOPS:
                    # these ops call the kernel in their loops (unguarded, to time it): what it raised
                    # there is the kernel's failure, never a harness error it could hide behind
                    text = f"the kernel raised while {KERNEL_LOOPS[op]}: {text}"
                elif kind not in ("cuda_error", "oom", "exit"):
                    kind = "harness_error"
                self._send_error(self.req_id, kind, text, True, traceback.format_exc()[-6000:])
            finally:
                shm.close_fds(fds)
                shm.close_fds(out_fds)
            if op == "bye":
                return

    def _send_error(self, rid, kind, message, fatal, detail=None, trial=None):
        err = {"kind": str(kind), "message": str(message)[:20000], "detail": None if detail is None else str(detail)[-6000:],
               "trial": trial if isinstance(trial, int) else None, "fatal": bool(fatal)}
        try:
            protocol.send(self.sock, {"id": rid, "ok": False, "error": err})
        except (OSError, protocol.ProtocolError):
            pass

    def _dev(self):
        if self.device is None:
            raise StageFailure("startup", "worker_error", "setup has not run")
        return self.device

    def _sync(self, device=None):
        self.prims.synchronize(device or self.device)

    def _value(self, v, fds):
        return to_device(_clone(shm.decode_value(v, fds)), self._dev())

    # ---- ops -------------------------------------------------------------------------------
    def op_hello(self, args, fds, out):
        return {"pid": os.getpid(), "python": sys.version.split()[0], "role": self.role, "sandbox": self.report}

    def op_ping(self, args, fds, out):
        return {}

    def op_bye(self, args, fds, out):
        return {}

    def op_setup(self, args, fds, out):
        if self.import_error:
            raise StageFailure("startup", "environment",
                               "torch is not installed here (pip install 'ktui[repro]')")
        import torch

        from .timing import Timer

        t_import = self.import_s
        self.device = dev = resolve_device(args.get("device"))
        t1 = now()
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
            torch.zeros(1, device=dev)
        self.prims.bind_device(dev)
        self.timer = Timer(self.prims, dev, progress=lambda what, i, n: self.progress(what, i, n))
        self.shims = install_shims(str(dev))
        return {"environment": environment(dev), "device": str(dev), "import_torch_s": round_(t_import, 3),
                "device_init_s": round_(now() - t1, 3)}

    def op_floor(self, args, fds, out):
        self._dev()
        fl = self.timer.floor()
        return fl or {}

    def op_load_reference(self, args, fds, out):
        src = args.get("source")
        if not isinstance(src, str) or not src.strip():
            raise StageFailure("reference", "no_reference", "the trace has no reference source; pass --reference FILE")
        sha = sha1_text(src)
        mod = guarded("reference", load_source, f"ktui_reference_{sha[:12]}", src,
                      os.path.join(os.getcwd(), "reference.py"), self.shims, what="reference")
        # get_init_inputs is optional: without it Model() and ModelNew() take no arguments (the
        # convention of Harbor-style tasks: "ModelNew() must construct with no arguments")
        for attr in ("Model", "get_inputs"):
            if not hasattr(mod, attr):
                raise StageFailure("reference", "reference_error", f"the reference source defines no {attr}")
        self.module = mod
        # the task's convention: outputs judged against Model on float32 copies of the inputs
        self.fp32_truth = FP32_DIRECTIVE in src
        return {"sha1": sha}

    def op_build(self, args, fds, out):
        dev = self._dev()
        code = args.get("source") or ""
        if not isinstance(code, str) or not code.strip():
            raise StageFailure("build", "no_code", "the snapshot has no kernel code (attachment stub?)")
        if dev.type == "cpu" and needs_cuda(code):
            raise StageFailure("build", "unsupported", CPU_NEEDS_CUDA)
        key, ext_root = str(args["key"]), str(args["build_dir"])
        os.makedirs(ext_root, exist_ok=True)
        cached_before = _dir_has_binary(ext_root)
        os.environ["TORCH_EXTENSIONS_DIR"] = ext_root
        os.environ["TRITON_CACHE_DIR"] = os.path.join(ext_root, "triton")  # buildcache.JIT_CACHE: kept per kernel
        # @triton.autotune's timings kept in that cache too (Triton 3.6: knobs.autotuning.cache, read as
        # the kernel's module defines it): its next worker life picks its configs without benchmarking
        # each one again
        os.environ["TRITON_CACHE_AUTOTUNING"] = "1"
        arch = arch_list_for(dev)
        if arch:
            os.environ["TORCH_CUDA_ARCH_LIST"] = arch
        sha = sha1_text(code)
        t0 = now()
        from .probes.flags import precision_flags
        from .probes.threads import install_start_hook

        self.flags_before_build = precision_flags()
        install_start_hook()  # where each thread is started from, and the threads alive before the kernel
        ref_src = args.get("reference_source")
        if isinstance(ref_src, str) and ref_src.strip():
            # the task's reference, importable as module `reference` (harnesses place reference.py
            # beside solution.py; solutions import its constants), read-only, in this sandbox only
            ref_path = os.path.join(os.getcwd(), "reference.py")
            guarded("build", load_source, "reference", ref_src, ref_path, self.shims, what="reference")
            try:
                os.chmod(ref_path, 0o444)
            except OSError:
                pass
        with BuildPatch(ext_root, key, progress=self.progress) as patch:
            mod = guarded("build", load_source, f"ktui_kernel_{sha[:12]}", code,
                          os.path.join(os.getcwd(), f"kernel_{sha[:12]}.py"), self.shims)
        self.module = mod
        self.ext_modules = [m for m in patch.modules if m is not None]
        self.build_info = {"key": key, "dir": ext_root, "seconds": round_(now() - t0, 3),
                           "cached": bool(cached_before and patch.built),
                           "extensions": [dict({"name": str(b["name"]), "unique_name": str(b["unique_name"]),
                                                "seconds": float(b["seconds"] or 0.0)},
                                               **({"steps": b["steps"]} if b.get("steps") else {}))
                                          for b in patch.built],
                           "arch_list": arch or None, "has_model": candidate_class(mod) is not None,
                           "failed_builds": [{"name": str(b["name"]), "error": str(b["error"])[:300]}
                                             for b in patch.failed][:16]}
        return self.build_info

    def op_init(self, args, fds, out):
        import torch

        dev = self._dev()
        seed = int(args.get("seed", 42))
        if self.role == "reference":
            set_seed(seed)
            get_init = getattr(self.module, "get_init_inputs", None)
            init = guarded("correctness", get_init, what="reference") if get_init is not None else []
            init_dev = to_device(init, dev)
            set_seed(seed)
            with torch.no_grad():
                self.model = guarded("correctness", lambda: self.module.Model(*init_dev).to(dev), what="reference")
            if hasattr(self.model, "eval"):
                guarded("correctness", self.model.eval, what="reference")
            return {"init_inputs": shm.encode_value(list(init) if isinstance(init, (list, tuple)) else [init], out)}
        cls = candidate_class(self.module)
        if cls is None:
            raise StageFailure("build", "no_model", NO_MODEL)
        init = self._value(args.get("init_inputs", []), fds)
        set_seed(seed)
        with torch.no_grad():
            self.model = guarded("correctness", lambda: cls(*init).to(dev), what="kernel")
        if hasattr(self.model, "eval"):
            guarded("correctness", self.model.eval)
        return {"init_inputs": []}

    def _truth_call(self, slot, stage, trial=None):
        """The reference's output on a slot, by the task's ground-truth rule: on float32 copies of
        the floating inputs where the task says "fp32 ground truth". Every output the judge compares
        a kernel against comes from here: the correctness trials' and every probe's (a probe that
        compared an fp16 kernel against the reference computed in fp16 called honest kernels "stale"
        on a real Harbor sweep)."""
        if not getattr(self, "fp32_truth", False):
            return self._call(slot, stage, "reference", trial)
        import torch

        self.slots[slot + "#fp32"] = [x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                      for x in self.slots[str(slot)]]
        try:
            return self._call(slot + "#fp32", stage, "reference", trial)
        finally:
            self.slots.pop(slot + "#fp32", None)

    def _call(self, slot, stage, what, trial=None):
        import torch

        inputs = self.slots[str(slot)]
        with torch.no_grad():
            out = guarded(stage, self.model, *inputs, trial=trial, what=what)
        self._sync()
        return out

    def _outputs(self, outv, out, inputs=None):
        import torch

        bounded_tree(outv)
        leaves = flatten(outv)
        types = [type(x).__module__ + "." + type(x).__qualname__ for x in [outv] + leaves]
        overrides = []
        for obj in [outv] + leaves:
            t = type(obj)
            for base in (torch.Tensor, tuple, list, dict):
                if isinstance(obj, base) and t is not base:
                    if t.__eq__ is not base.__eq__:
                        overrides.append(f"{t.__name__} overrides __eq__")
                    if base is torch.Tensor and getattr(t, "__torch_function__", None) is not \
                            torch.Tensor.__torch_function__:
                        overrides.append(f"{t.__name__} overrides __torch_function__")
        with torch._C.DisableTorchFunctionSubclass():
            enc = shm.encode_value(_plain(outv), out)
            inp = shm.encode_value(inputs, out) if inputs is not None else None
        return {"outputs": enc, "types": types[:64], "overrides": sorted(set(overrides))[:16], "inputs_after": inp}

    def op_forward(self, args, fds, out):
        what = "reference" if self.role == "reference" else "kernel"
        if args.get("inputs") is not None:  # new inputs for the slot, in the same round trip
            v = self._value(args["inputs"], fds)
            self.slots[str(args["slot"])] = list(v) if isinstance(v, (list, tuple)) else [v]
        if self.role == "reference":
            outv = self._truth_call(str(args["slot"]), str(args.get("stage", "correctness")), args.get("trial"))
        else:
            outv = self._call(args["slot"], str(args.get("stage", "correctness")), what, args.get("trial"))
        inputs = self.slots[str(args["slot"])] if args.get("return_inputs") else None
        return self._outputs(outv, out, inputs)

    def op_time(self, args, fds, out):
        import torch

        dev = self._dev()
        slots = [self.slots[str(s)] for s in args["slots"]]
        method = str(args.get("method", "cuda_event"))
        method_used = method if dev.type == "cuda" else "host"
        label = "reference" if self.role == "reference" else "kernel"
        model = self.model
        if method_used == "cuda_graph":
            call = self.timer.graph_call(model, slots[0], label)
        else:
            k = len(slots)

            def call(i):
                return model(*slots[i % k])
        samples, batches, stopped, secs = self.timer.measure(
            call, method=method_used, trials=int(args.get("trials", 100)), warmup=int(args.get("warmup", 3)),
            label=label, target_rse=float(args.get("target_rse", 0.005)), cap_s=float(args.get("cap_s", 5.0)),
            adaptive=bool(args.get("adaptive", True)), max_samples=int(args.get("max_samples", 20000)))
        self.timer.release()
        t = torch.tensor(samples, dtype=torch.float64)
        return {"samples": shm.export_tensor(t, out), "stats": stats_us(samples), "method_used": method_used,
                "batches": batches, "stopped": stopped, "seconds": round_(secs, 3)}

    def op_wall(self, args, fds, out):
        """`forwards` calls cycling over the slots, then a device-wide synchronize (the judge
        times this request with its own clock); the last output of each slot is kept.

        ``retain`` makes it the judge's checked pass: the output of EVERY call is kept, as a copy
        made when it is returned ("copies": a kernel writing every call into one buffer must not
        pass on its last call's result; up to ``budget`` bytes in all, later calls keep nothing),
        or as a fingerprint ("fingerprints": float64 sum, absolute sum and element count, from
        :func:`ktui.engine.compare.fingerprint`), when copies of all would not fit. The request
        does not say which calls will be checked: the judge picks them once this loop has ended
        and names them in ``wall_outputs``. The kernel runs in this process and can read all of
        it; what it can learn here is only that this pass is the checked one, so it cannot
        compute the checked calls alone."""
        import torch

        slots = [self.slots[str(s)] for s in args["slots"]]
        n = max(len(slots), int(args.get("forwards", len(slots))))
        model = self.model
        self.wall_out, self.wall_fp = [], None
        retain = args.get("retain")
        if isinstance(retain, dict):
            k = len(slots)
            if retain.get("mode") == "fingerprints":
                from .compare import fingerprint

                fp = torch.full((n, 2), float("nan"), dtype=torch.float64, device=self.device)
                counts = [0] * n
                plain_only = torch._C.DisableTorchFunctionSubclass
                with torch.no_grad():
                    for i in range(n):
                        o = model(*slots[i % k])
                        with plain_only():  # a subclass's own sum never runs
                            _row, counts[i] = fingerprint(_plain(o), fp[i])
                    self.prims.synchronize(self.device)
                self.wall_fp = (fp, counts)
                return {"forwards": n}
            budget, used, kept = int(retain.get("budget") or 0), 0, []
            with torch.no_grad():
                for i in range(n):
                    o = model(*slots[i % k])
                    if used <= budget:
                        c = _clone(_plain(o))
                        used += _tree_nbytes(c)
                        kept.append(c)
                    else:
                        kept.append(None)
                self.prims.synchronize(self.device)
            self.wall_out = kept
            return {"forwards": n}
        outs = [None] * len(slots)
        with torch.no_grad():
            for i in range(n):
                k = i % len(slots)
                outs[k] = model(*slots[k])
            self.prims.synchronize(self.device)
        self.wall_out = outs
        return {"forwards": n}

    def op_wall_outputs(self, args, fds, out):
        """After the checked pass: the outputs of the calls the judge names now (``calls``), or
        every call's fingerprint ([sum, absolute sum, element count] per call, float64)."""
        import torch

        try:
            if self.wall_fp is not None:
                fp, counts = self.wall_fp
                rows = torch.cat((fp.cpu(), torch.tensor(counts, dtype=torch.float64).reshape(-1, 1)), 1)
                return {"outputs": [], "fingerprints": shm.export_tensor(rows.contiguous(), out)}
            calls = args.get("calls")
            if calls is None:  # a pass that kept the last output of each slot
                return {"outputs": [self._outputs(o, out) for o in self.wall_out]}
            picks = [int(i) for i in calls[:16] if isinstance(i, int) and 0 <= i < len(self.wall_out)]
            return {"outputs": [self._outputs(self.wall_out[i], out) for i in picks]}
        finally:
            self.wall_out, self.wall_fp = [], None

    def op_memory(self, args, fds, out):
        from .profiling import memory_peak

        dev = self._dev()
        if dev.type != "cuda":
            raise StageFailure("memory", "unsupported", "memory peak needs CUDA")
        return memory_peak(self.model, self.slots[str(args["slot"])], dev, self.prims.synchronize)

    def op_launches(self, args, fds, out):
        from .profiling import launches

        dev = self._dev()
        if dev.type != "cuda":
            raise StageFailure("launches", "unsupported", "launch counting needs CUDA")
        return launches(self.model, self.slots[str(args["slot"])], dev, self.prims.synchronize)

    def op_probe(self, args, fds, out):
        from .probes import REFERENCE_PROBES, WORKER_PROBES

        name = str(args.get("name"))
        fn = (REFERENCE_PROBES if self.role == "reference" else WORKER_PROBES).get(name)
        if fn is None:
            raise StageFailure("checks", "worker_error", f"no worker probe {name!r}")
        res = fn(Context(self), args.get("args") or {}, fds, out)
        return {"findings": list(res.get("findings") or []), "data": dict(res.get("data") or {})}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    role = argv[argv.index("--role") + 1] if "--role" in argv else "candidate"
    fd = int(argv[argv.index("--fd") + 1]) if "--fd" in argv else protocol.WORKER_FD
    report = sandbox.enter()
    try:
        faulthandler.enable(file=sys.stderr, all_threads=False)
    except (OSError, ValueError, AttributeError):
        pass
    sock = socket.socket(fileno=fd)
    if role not in OPS:
        os._exit(2)
    nice = os.environ.get("KTUI_WORKER_NICE", "")
    if nice.isdigit():  # a build worker (ktui verify): compilers yield the CPU to timing workers
        try:
            os.nice(int(nice))
        except OSError:
            report["errors"].append("could not lower the priority")
    srv = Server(role, sock, report)
    srv.preload()
    srv.serve()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(0)
