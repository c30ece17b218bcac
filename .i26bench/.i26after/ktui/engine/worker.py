"""A sandboxed repro worker: ``python -m ktui.engine.worker --role reference|candidate --fd N``.

Started by the judge (:mod:`ktui.engine.pipeline`) inside the sandbox
(:mod:`ktui.engine.sandbox`), one fresh process per role and kernel. It talks to the
judge over the socket at descriptor N only (:mod:`ktui.engine.protocol`); stdin is
/dev/null and stdout/stderr go to pipes the judge reads with a byte cap, so nothing the kernel
prints reaches the protocol or a terminal. See :mod:`ktui.engine.roles` for the ops.
"""

from .roles import main

if __name__ == "__main__":
    main()
