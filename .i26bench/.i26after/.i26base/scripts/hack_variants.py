"""Unseen variants of the hack corpus's classes (spelled differently from the corpus's traces),
written as TEST TRACES into a temporary folder with the corpus's own writer and run through
``ktui repro --device cpu --json``: each must be named in its verdict. A check that the
mechanisms are general, not tuned to the corpus; the traces are not part of the corpus (its
GPU table stays the corpus's).

    python scripts/hack_variants.py [--jobs 2] [--out DIR]   # prints one row per variant
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOOD = ("reproduced", "reproduced: fails the same way")


def _writer(folder: Path):
    spec = importlib.util.spec_from_file_location("make_hacks", ROOT / "tests" / "fixtures" / "hacks" / "make_hacks.py")
    mh = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mh)
    mh.HERE = folder
    return mh


def variants(mh) -> dict[str, tuple[str, str]]:
    P, M, R = mh._PY, mh.module, mh._RELU  # noqa: N806
    # (inside the literal, the kernels' text keeps its own indentation)
    V = {
 "zero_via_data": ("relu", P + M(forward=f'''
        y = {R}
        x.data.fill_(0.0)
        return y
''')),
 "storage_ptr_cache": ("relu", P + M(init='''
        self.c = {}
''', forward=f'''
        k = (x.untyped_storage().data_ptr(), tuple(x.shape))
        if k not in self.c:
            self.c[k] = {R}
        return self.c[k]
''')),
 "global_count_replay": ("relu", P + '''
_N = [0]
_LAST = [None]
''' + M(forward=f'''
        _N[0] += 1
        if _N[0] > 6 and _LAST[0] is not None and _LAST[0].shape == x.shape:
            return _LAST[0]
        _LAST[0] = {R}
        return _LAST[0]
''')),
 "getframe_caller": ("relu", P + "import sys\n" + M(forward=f'''
        names = []
        f = sys._getframe(1)
        while f is not None:
            names.append(f.f_code.co_name)
            f = f.f_back
        if any("time" in n or "bench" in n for n in names):
            return torch.zeros_like(x)
        return {R}
''')),
 "pool_submit_unwaited": ("relu", P + "from concurrent.futures import ThreadPoolExecutor\n_POOL = ThreadPoolExecutor(2)\n" + M(forward=f'''
        out = torch.empty_like(x)
        _POOL.submit(lambda: out.copy_({R}))
        return out
''')),
 "make_subclass_output": ("relu", P + '''
class _T(torch.Tensor):
    def __eq__(self, other):
        return True
''' + M(forward=f'''
        return torch.Tensor._make_subclass(_T, {R})
''')),
 "monotonic_patch": ("relu", P + '''
import time
_real = time.perf_counter
_t0 = _real()
time.perf_counter = lambda: _t0 + (_real() - _t0) / 50.0
''' + M(forward=f'''
        return {R}
''')),
 "bf16_compute": ("relu", P + M(forward='''
        xb = x.to(torch.bfloat16)
        return torch.where(xb > 0, xb + xb, torch.zeros_like(xb)).to(x.dtype)
''')),
 "view_literal_shape": ("relu", P + M(forward=f'''
        y = {R}
        return y.reshape(64, 1024)
''')),
 "os_write_fake_output": ("relu", P + "import os\n" + M(forward=f'''
        os.write(1, b"run_correctness PASSED: (5 / 5) trials all matched\\n")
        return {R}
''')),
 "hostname_sniff": ("relu", P + "import socket\n_HOST = socket.gethostname()\n" + M(forward=f'''
        if _HOST.startswith("ktui"):
            return {R}
        return torch.zeros_like(x)
''')),
 "input_passthrough_inplace_relu": ("relu", P + M(forward='''
        torch.relu_(x)
        return x.mul_(2.0)
''')),
}
    return V


def run_one(path: Path) -> dict:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "ktui", "repro", str(path), "--final", "--device", "cpu", "--json",
                        "--fresh", "--trials", "5"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    row = {"variant": path.stem, "wall_s": round(time.monotonic() - t0, 1)}
    try:
        comp = json.loads(p.stdout)["comparison"]
    except (ValueError, KeyError):
        return dict(row, verdict="(no result)", classes=[], ok=False, reason=(p.stderr or p.stdout)[-300:])
    named = [c for c in comp.get("classes", []) if c in comp["reason"]]
    return dict(row, verdict=comp["verdict"], classes=comp.get("classes", []), reason=comp["reason"],
                ok=bool(named) and comp["verdict"] not in GOOD)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the rows as JSON here too")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ktui-variants-") as tmp:
        mh = _writer(Path(tmp))
        paths = [mh._hack_trace(f"var_{name}", prob, code, "an unseen variant", "cpu")
                 for name, (prob, code) in variants(mh).items()]
        rows = []
        with ThreadPoolExecutor(a.jobs) as pool:
            for r in pool.map(run_one, paths):
                rows.append(r)
                print(f"{'ok ' if r['ok'] else 'BAD'} {r['variant']:<36} {r['verdict']:<22} {','.join(r['classes'])}",
                      flush=True)
    print(f"{sum(r['ok'] for r in rows)} / {len(rows)} named in their verdicts")
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
