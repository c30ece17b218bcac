# ---- ktui repro harness: one kernel to judge (the job) --------------------------------------------
# MIT license, part of ktui.
import os
import sys

from .defaults import (
    COMPILE_TIMEOUT_S,
    CORRECTNESS_TRIALS,
    METHOD,
    SEED,
    STAGE_TIMEOUT_S,
    TARGET_RSE,
    TIME_CAP_S,
    TRIALS,
    WARMUP,
)
from .errors import default_cache_root, sha1_text
from .words import plural


class Job:
    """One kernel to judge (everything the judge needs; plain data, picklable)."""

    FIELDS = {
        "kernel_code": "", "kernel_sha1": None, "kernel_label": None, "reference_source": None,
        "reference_origin": None, "device": None, "method": METHOD, "trials": TRIALS, "warmup": WARMUP,
        "correctness_trials": CORRECTNESS_TRIALS, "seed": SEED, "input_seed": None, "held_out_seed": None,
        "build_root": None, "build_key": None, "checks": True, "measure_memory": True,
        "measure_launches": True, "compile_timeout": COMPILE_TIMEOUT_S, "run_timeout": STAGE_TIMEOUT_S,
        "target_rse": TARGET_RSE, "time_cap_s": TIME_CAP_S, "adaptive": True,
        "worker_argv": None, "python_path": None, "prefix": None, "masks": None, "lock_dir": None,
        "tmp_root": None, "memory_limit": None, "output_cap": None, "judge_memory": None,
        "ref_cache": None,  # the reference cache's root (refcache.py; with a given input_seed only)
        # the checked wall-clock pass's copies (bytes; defaults.WALL_RETAIN_BYTES): above, fingerprints
        "wall_retain_bytes": None,
    }

    def __init__(self, **kw):
        for k, v in self.FIELDS.items():
            setattr(self, k, kw.get(k, v) if kw.get(k) is not None else v)
        unknown = set(kw) - set(self.FIELDS) - {"keep_alive", "work_dir", "request_id"}
        if unknown:
            raise ValueError(f"unknown job {plural(len(unknown), 'field')}: {', '.join(sorted(unknown))}")
        if not self.kernel_sha1:
            self.kernel_sha1 = sha1_text(self.kernel_code)
        if not self.build_root:
            self.build_root = os.path.join(default_cache_root(), "build")
        if not self.worker_argv:
            self.worker_argv = [sys.executable, "-m", "ktui.engine.worker"]
        if self.python_path is None:
            self.python_path = default_python_path()
        if not self.build_key:
            self.build_key = default_build_key(self.kernel_sha1, self.device)
        # both sides' repeated batches must fit in the timing stage's deadline
        self.time_cap_s = max(0.2, min(float(self.time_cap_s), float(self.run_timeout) / 8))

    @classmethod
    def from_request(cls, req):
        return cls(**{k: v for k, v in dict(req).items() if k in cls.FIELDS})

    def to_dict(self):
        return {k: getattr(self, k) for k in self.FIELDS}

    @property
    def build_dir(self):
        return os.path.join(self.build_root, self.build_key)


def default_python_path():
    """sys.path entries a worker needs to import ktui's harness and torch (nothing else)."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds ktui/
    pp = [here]
    for p in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if p and p not in pp:
            pp.append(p)
    return pp


def default_build_key(code_sha1, device):
    """sha1(code) + torch + Python ABI + device + GPU (found without a CUDA context): one
    build directory per key; the candidate's build step is the only writer of its own."""
    import hashlib
    import platform

    try:
        from importlib.metadata import version

        tv = version("torch")
    except Exception:  # noqa: BLE001 - no torch metadata: the key still separates kernels
        tv = "?"
    from .gpu import state

    gpu = state(device) if (device or "cuda") != "cpu" else None
    parts = [code_sha1, f"torch={tv}", f"py={platform.python_version()}{getattr(sys, 'abiflags', '')}",
             f"device={device or 'auto'}", f"gpu={(gpu or {}).get('name')}",
             f"archlist={os.environ.get('TORCH_CUDA_ARCH_LIST', '')}", f"machine={platform.machine()}"]
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:20]
