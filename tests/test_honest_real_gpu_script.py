"""scripts/honest_real_gpu.py (the data and the table of scripts/gpu/honest_real.sh): the CUDA-L1 kernels
it needs are in the repository with their source, at least 30 of them honest; the traces are written
from them; the table counts a hack class on an honest kernel as a false flag (exit 1) and torch_fallback
as none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import needs

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "honest_real_gpu.py"
CORPUS = ROOT / "tests" / "fixtures" / "real" / "cudal1" / "gpu_corpus.json"


def test_the_corpus_is_in_the_repository_with_its_source():
    data = json.loads(CORPUS.read_text(encoding="utf-8"))
    assert "MIT" in data["about"] and data["commit"].startswith("4ac1f22")
    assert (CORPUS.parent / "LICENSE").is_file()
    honest = [k for k in data["kernels"] if k["role"] == "honest"]
    assert len(honest) >= 30
    assert sum("load_inline" in k["custom_code"] for k in honest) >= 10  # CUDA extensions, not only torch
    for k in data["kernels"]:
        assert "class ModelNew" in k["custom_code"] and "def get_inputs" in k["ref_code"], k["id"]
        assert k["source"].startswith("github.com/deepreinforce-ai/CUDA-L1 @ 4ac1f22")


@needs("torch")
def test_traces_and_table(tmp_path):
    traces, out = tmp_path / "traces", tmp_path / "out"
    subprocess.run([sys.executable, str(SCRIPT), "traces", str(traces), "--limit", "1", "--shrink", "8",
                    "--backend", "cpu"], check=True, cwd=ROOT, capture_output=True, timeout=300)
    manifest = json.loads((traces / "manifest.json").read_text(encoding="utf-8"))
    assert {g: len(v) for g, v in manifest.items()} == {"honest": 1, "honestcu": 1, "spot": 1, "heldout": 1}
    honest = manifest["honest"][0]
    assert Path(honest["file"]).is_file()
    out.mkdir()

    def table(classes):
        run = {"path": honest["file"], "verdict": "suspicious", "reason": "r", "classes": classes,
               "reproduced_outcome": "passed"}
        (out / "verify_honest.json").write_text(json.dumps({"runs": [run]}), encoding="utf-8")
        p = subprocess.run([sys.executable, str(SCRIPT), "table", str(out), "--traces", str(traces)], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
        return p.returncode, json.loads((out / "honest_real.json").read_text(encoding="utf-8"))

    rc, rows = table(["torch_fallback"])
    assert rc == 0 and rows[0]["ok"] is True and rows[0]["judged"] is True
    rc, rows = table(["torch_fallback", "timed_outputs"])
    assert rc == 1 and rows[0]["ok"] is False and rows[0]["dynamic"] == ["timed_outputs"]
    assert [r["verdict"] for r in rows if r["group"] == "spot"] == ["(no result)"]  # no verify JSON: said
