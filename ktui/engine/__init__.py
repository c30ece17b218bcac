# ---- ktui repro harness ---------------------------------------------------------------------
# The re-execution engine, in seams:
#
#   defaults.py   the one set of defaults (timeouts, trials, tolerances, limits)
#   sandbox.py    the sandbox around trace code (the launcher), in words; re-exports the rest:
#   confine.py    the in-worker prologue (own root, read-only mounts, minimal /dev, caps dropped)
#   toolchain.py  what a worker's own root holds (of the home: a prefix's toolchain parts only)
#   proctree.py   the worker tree seen from /proc (memory with memfds, threads, stop, kill)
#   oslib.py      prctl / mount primitives
#   protocol.py   judge <-> worker messages: typed, validated, size- and depth-limited
#   shm.py        tensors between processes as sealed memfds
#   roles.py      the reference and candidate workers (the only place trace code runs)
#   build.py      harness shims, device, environment, keyed load_inline builds (in the worker)
#   compare.py    inputs (seeding) and the judge's comparison
#   timing.py     the one timed loop, with primitives bound before trace code loads
#   profiling.py  memory peak and launches (CUDA, in the worker)
#   gpu.py        GPU state (judge side, nvidia-smi); the device lock is devicelock.py
#   job.py        one kernel to judge (plain data)
#   workers.py    the judge's handle on a sandboxed worker; held values (memfds)
#   pipeline.py   the judge: build(job), judge(job, build)
#   correctness.py, clockcheck.py   the judge's correctness and timing stages (ktui's own clock)
#   checkedpass.py                  the checked wall-clock pass (every output kept, checked calls named after)
#   probectx.py   what a judge-side probe sees
#   report.py     a plain-text summary of a result (exported scripts)
#
# Self-contained (stdlib + torch, torch imported lazily, relative imports only): `ktui export`
# embeds this package (and ktui/engine/probes) in a standalone script. MIT license, part of ktui.
from .buildcache import _clear_stale_lock  # noqa: F401  (torch-free: the app process loads this package)
from .defaults import HARNESS_VERSION, STAGES  # noqa: F401
from .errors import StageFailure, default_cache_root, sha1_text, stats_us  # noqa: F401
