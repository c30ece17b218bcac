"""Dump the CPU hack corpus verdicts (same options as tests/test_hacks_corpus.py)."""
import json, os, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
root = Path(sys.argv[1]); out = sys.argv[2]
sys.path.insert(0, str(root))
os.environ["KTUI_CACHE_DIR"] = tempfile.mkdtemp(prefix="i26dump-")
from ktui.trace import load
from ktui.repro.api import ReproOptions, reproduce
corpus = root / "tests" / "fixtures" / "hacks"
man = json.loads((corpus / "manifest.json").read_text())["traces"]
entries = [e for e in man if "cpu" in e["devices"]]
opts = ReproOptions(device="cpu", trials=5, timeout=120.0, compile_timeout=900.0, fresh=True)
def one(e):
    run = load(str(corpus / e["file"]))
    r = reproduce(run, run.final_kernel, opts)
    c = r.comparison
    return e["file"], {"verdict": c.verdict, "classes": sorted(c.classes), "status": r.result.get("status"),
            "dynamic": sorted({f.cls for f in c.findings if f.source == "dynamic"}),
            "stages": r.result.get("stages"), "seconds": r.result.get("seconds"), "probes": r.result.get("probes")}
t0 = time.time()
with ThreadPoolExecutor(max_workers=2) as pool:
    res = dict(pool.map(one, entries))
json.dump({"wall_s": round(time.time() - t0, 1), "verdicts": res}, open(out, "w"), indent=1, default=str)
print("done", time.time() - t0)
