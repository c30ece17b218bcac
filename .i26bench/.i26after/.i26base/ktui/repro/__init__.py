"""Re-execution of kernel snapshots that model-written code cannot subvert.

Three roles, three processes per kernel:

- the **judge** (:mod:`ktui.engine.pipeline`, ktui's own code only): asks the reference
  for seeded inputs and outputs, hands the same sealed input tensors to the candidate, compares
  the candidate's outputs itself (float64, on the CPU), times both sides and cross-checks the
  times with its own clock, runs the probes (:mod:`ktui.engine.probes`) and decides. It never
  imports or executes trace code, and it is the only writer of the cache (signed entries).
- the **reference worker** and the **candidate worker** (:mod:`ktui.engine.roles`): fresh
  sandboxed processes (:mod:`ktui.engine.sandbox`), one per kernel, that run the
  trace's reference source and the kernel. Tensors cross as sealed memfds
  (:mod:`ktui.engine.shm`); the protocol (:mod:`ktui.engine.protocol`) carries
  data, never verdicts, and every message is validated.

API (usable from any process, e.g. Ray tasks; the job is plain data)::

    from ktui.engine.pipeline import Job, build, judge
    job = Job(kernel_code=..., reference_source=..., device="cuda:0", trials=100,
              build_root=str(ktui.repro.cache.build_root()))      # see Job.FIELDS for the rest
    b = build(job)            # BuildResult dict: {"ok", "build", "failure", "build_dir", "seconds", ...}
                              # (compiles the load_inline extensions into the kernel's own build dir,
                              #  in a sandboxed candidate worker)
    if b["ok"]:
        result = judge(job, b)   # result dict: status, failure, correctness, timing, checks, findings,
                                 # sandbox (the protections in force, in words), environment, ...

    # a wrapper in front of the candidate worker, inside the same sandbox (e.g. Nsight Compute):
    job = Job(..., prefix=["ncu", "--target-processes", "all", "-o", "/path/report"])
    # the worker command on its own: ktui.engine.sandbox.command(spec, argv, prefix)

    from ktui.repro import cache
    key = cache.result_key(kernel_sha1=..., reference_sha1=..., device=..., method=..., trials=...)
    cache.load(kernel_sha1, key) / cache.store(entry) / cache.entries_for(kernel_sha1)

The CLI and the app go through :func:`ktui.repro.api.reproduce`, which runs the judge in its
own process (:mod:`ktui.repro.runner`: the front end never imports torch) and caches the result.
"""
