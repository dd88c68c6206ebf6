#!/usr/bin/env bash
# GPU check for the search engine: the CUDA tests and the GPU search benchmark, in one run.
#
# Meant for the lent GPU machine (torch + CUDA preinstalled, no faiss, no network):
#   bash benchmarks/gpu_check.sh            # output under "$OUT", or ./gpu_out when OUT is unset
# Needs only python3 with torch, numpy, tqdm and pytest.  Missing pure-python packages are installed
# from wheels carried in ./.whl (tqdm, pytest and its deps iniconfig, pluggy, packaging), if present.
# Budget: about 8 minutes (tests ~2 min, search benchmark ~2-4 min, encoders ~2 min when open_clip is there).
set -u
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python3}"
LOG="$OUT/gpu_check.log"
: > "$LOG"
say() { echo "== $*" | tee -a "$LOG"; }

"$PY" - <<'PYEOF' 2>&1 | tee -a "$LOG"
import importlib.util, sys
for mod in ("torch", "numpy", "tqdm", "pytest"):
    print(mod, "ok" if importlib.util.find_spec(mod) else "MISSING")
PYEOF
if [ -d .whl ]; then
  say "installing carried wheels from .whl"
  "$PY" -m pip install --no-index --find-links .whl tqdm pytest >>"$LOG" 2>&1 || say "wheel install failed (see log)"
fi
# sibscan.kernels / sibscan.calibration live at the top level (mapped by the install); without an
# install, build a shadow package of symlinks that puts them where Python looks.
SHADOW="$(mktemp -d)"
mkdir -p "$SHADOW/sibscan"
for f in "$PWD"/sibscan/*; do ln -s "$f" "$SHADOW/sibscan/$(basename "$f")"; done
ln -s "$PWD/kernels" "$SHADOW/sibscan/kernels"
ln -s "$PWD/calibration" "$SHADOW/sibscan/calibration"
export PYTHONPATH="$SHADOW:$PYTHONPATH"
"$PY" -c "import sibscan.kernels.topk, sibscan.search; print('sibscan from', sibscan.search.__file__)" 2>&1 | tee -a "$LOG"

say "nvidia-smi"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >>"$LOG" 2>&1 || true
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" 2>&1 | tee -a "$LOG"

say "CUDA tests (pytest -m cuda)"
timeout 150 "$PY" -m pytest -q -m cuda -p no:cacheprovider tests/test_search_cuda.py \
  --junitxml="$OUT/cuda_tests.xml" 2>&1 | tee "$OUT/cuda_tests.txt" | tail -n 30 | tee -a "$LOG"

say "GPU search benchmark (10,000 x 1,000,000 x 512)"
timeout 240 "$PY" -m benchmarks.search --device cuda 2>&1 | tee "$OUT/search_cuda.txt" | tail -n 30 | tee -a "$LOG"
cp benchmarks/results/search_cuda*.json "$OUT/" 2>/dev/null || true
say "CUDA tests of verification and the neural encoders (skipped where their packages are missing)"
timeout 120 "$PY" -m pytest -q -m cuda -p no:cacheprovider --continue-on-collection-errors \
  tests/test_verify.py tests/test_encoders_neural.py 2>&1 | tee "$OUT/cuda_tests_more.txt" | tail -n 20 | tee -a "$LOG"

if "$PY" -c "import open_clip" >/dev/null 2>&1; then
  say "CLIP ViT-B/32 image embedding from decoded tensors (target >= 20,000 img/s)"
  timeout 150 "$PY" -m benchmarks.encoders --device cuda --decoded 2>&1 | tee "$OUT/encoders_cuda.txt" | tail -n 20 | tee -a "$LOG"
  cp benchmarks/results/encoders_cuda*.json "$OUT/" 2>/dev/null || true
else
  say "open_clip not installed here: CLIP throughput not measured (carry its wheels in .whl to measure it)"
fi
say "done; results in $OUT"
