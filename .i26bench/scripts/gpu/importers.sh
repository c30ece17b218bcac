#!/usr/bin/env bash
# GPU check for imported formats (issue 13), run from the repo root on an H200 with CUDA torch,
# triton and ninja (no network). Writes under $OUT:
#   harbor_repro.json   `ktui repro` of the Harbor ATIF run's @triton.jit ModelNew (recovered from a
#                       cat > solution.py heredoc) against the reference.py the agent cat'ed (taken
#                       from the trajectory's own terminal output), on cuda
#   wafer_repro.txt     `ktui repro` of the Wafer HIP kernel: must refuse clearly (HIP on NVIDIA)
#   env.txt             versions
set -u
OUT="${OUT:-out}"; mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
S=../shared/formats
H="$S/swe-agent/harbor_atif_terminus2_opus48_fused_silu_fp8_triton.trajectory.json"
W="$S/chat-messages/wafer_glm47_kernelbench_l1_tall_skinny_matmul_hip.jsonl"
python - <<'PY' > "$OUT/env.txt" 2>&1
import torch, sys
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
try:
    import triton; print("triton", triton.__version__)
except Exception as e:  # noqa: BLE001
    print("triton missing:", e)
PY
# the reference the agent read: the text between "# cat reference.py" and the next prompt
REF="$(mktemp -d)/reference.py"
python - "$H" "$REF" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = d["steps"][1]["observation"]["results"][0]["content"]
body = out.split("# cat reference.py\n", 1)[1].split("root@modal:/app# ", 1)[0]
open(sys.argv[2], "w").write(body)
PY
timeout 420 python -m ktui repro "$H" --reference "$REF" --device cuda --json > "$OUT/harbor_repro.json" 2> "$OUT/harbor_repro.stderr.txt"
echo "rc=$?" >> "$OUT/harbor_repro.stderr.txt"
timeout 60 python -m ktui repro "$W" --version v2 > "$OUT/wafer_repro.txt" 2>&1
echo "rc=$?" >> "$OUT/wafer_repro.txt"
ls -la "$OUT"
