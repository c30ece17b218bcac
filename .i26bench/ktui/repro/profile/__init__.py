"""``ktui repro --profile``: the run page's hardware counters re-measured with Nsight Compute.

- :mod:`~ktui.repro.profile.metrics`: the ncu metrics collected, and THE table mapping the
  page's SOL / roofline / warp-stall names to them;
- :mod:`~ktui.repro.profile.ncu`: finding ncu, its command lines, reading its log;
- :mod:`~ktui.repro.profile.parse`: ``--csv --page raw`` output -> launches;
- :mod:`~ktui.repro.profile.summary`: per-launch figures and per-forward sums;
- :mod:`~ktui.repro.profile.roofline`: roofs, ridge point, points, what bounds a kernel;
- :mod:`~ktui.repro.profile.chart`: the roofline as Unicode text;
- :mod:`~ktui.repro.profile.compare`: recorded vs reproduced rows and impossible values;
- :mod:`~ktui.repro.profile.run`: running both sides under ncu; :mod:`~ktui.engine.profile_target`:
  the profiled worker process; :mod:`~ktui.report.profile`: the CLI output.

Nothing here imports torch except ``target`` (through the harness, in the worker process).
"""
