"""``ktui verify``: re-execute every (final) kernel of a sweep and check the recorded claims.

- :mod:`~ktui.repro.verify.plan`: discovery (the ``ktui runs`` index), one :class:`Job` per
  distinct kernel (sha1 of code + reference), what the cache already holds;
- :mod:`~ktui.repro.verify.steps`: the two steps an engine runs, ``build`` (compile into the
  shared build cache) and ``judge`` (the full reproduction, on a pinned device), over the same
  worker and judge as ``ktui repro``;
- :mod:`~ktui.repro.verify.engine`: the local engine (build processes + one timing slot per GPU);
- :mod:`~ktui.repro.verify.ray_engine`: the same on Ray (``pip install 'ktui[ray]'``);
- :mod:`~ktui.repro.verify.results`: rows, per-model recorded vs reproduced aggregates, JSON, CSV;
- :mod:`~ktui.report.verify`: the CLI.

Nothing here imports torch or Textual.
"""
