"""A sandboxed repro worker: ``python -m ktui.repro.worker --role reference|candidate --fd N``.

Started by the judge (:mod:`ktui.repro.harness.pipeline`) inside the sandbox
(:mod:`ktui.repro.harness.sandbox`), one fresh process per role and kernel. It talks to the
judge over the socket at descriptor N only (:mod:`ktui.repro.harness.protocol`); stdin is
/dev/null and stdout/stderr go to pipes the judge reads with a byte cap, so nothing the kernel
prints reaches the protocol or a terminal. See :mod:`ktui.repro.harness.roles` for the ops.
"""

from ktui.repro.harness.roles import main

if __name__ == "__main__":
    main()
