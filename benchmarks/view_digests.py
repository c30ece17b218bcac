#!/usr/bin/env python3
"""What ktui prints for every fixture trace (the traces of ``tests/test_lazy_equivalence.py``:
the seed trace, tests/fixtures, ../shared/fixtures and ../shared/formats), one digest per
trace: ``show --full``, ``show --json``, ``validate --json`` and ``diff`` (every successive
pair of versions), at ``COLUMNS=160``. Run it under two source trees and compare the JSON: a
change to how a run is kept (issue 25) must leave every digest as it was.

    cd /tmp && PYTHONPATH=<tree> python -P <this checkout>/benchmarks/view_digests.py > a.json
    python benchmarks/view_digests.py --compare a.json b.json
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def digests() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ["COLUMNS"] = "160"
    from test_lazy_equivalence import TRACES

    from ktui.report.diff import diff_command
    from ktui.report.show import show_command
    from ktui.report.validate import validate_command

    out = {}
    for p in TRACES:
        h = hashlib.sha1()
        s = str(p)
        for f in (lambda s=s: show_command(s, full=True), lambda s=s: show_command(s, as_json=True),
                  lambda s=s: validate_command([s], as_json=True), lambda s=s: diff_command(s, None, None)):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
                try:
                    rc = f()
                except SystemExit as e:
                    rc = e.code
                except Exception as e:  # noqa: BLE001 - a raise is part of what is compared
                    rc = f"raised {type(e).__name__}: {e}"
            h.update(buf.getvalue().replace(str(p), "<p>").encode())
            h.update(repr(rc).encode())
        out[str(p.relative_to(p.parents[2]))] = h.hexdigest()
    return out


def main() -> int:
    if sys.argv[1:2] == ["--compare"]:
        a, b = (json.loads(Path(x).read_text()) for x in sys.argv[2:4])
        common = sorted(set(a) & set(b))
        differ = [k for k in common if a[k] != b[k]]
        print(f"{len(common)} traces in both, {len(differ)} differ", *differ, sep="\n")
        return 1 if differ or not common else 0
    print(json.dumps(digests(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
