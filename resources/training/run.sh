#!/usr/bin/env bash
# The model zoo in one command: corpus -> BPE -> train all six -> evaluate -> RESULTS.md.
#
#   resources/training/run.sh [WORK_DIR]          (default WORK_DIR: ./zoo-work, not committed)
#
# Resumable: every stage skips what is already done. The corpus resumes from raw.jsonl, the
# tokenizer is kept once written, a model with final.json is done, one with checkpoint.pt
# continues (--resume), evaluate.py keeps each model's eval.json. Interrupt it at any point and
# run the same command again. With MAX_MINUTES set, each model trains at most that long per
# invocation, checkpoints and the script stops (exit 3) so the next sitting continues it.
#
# Environment knobs (defaults in brackets):
#   CFLOW        cflow CLI                 [build/app/cflow]
#   STORIES      stories to generate       [24000]
#   VOCAB        BPE vocabulary size       [4096]
#   ARCHS        comma-separated archs     [all six]
#   TRAIN_ARGS   extra train.py options, the same for every model, e.g. "--steps 2000 --batch 16"
#   MAX_MINUTES  per-model limit for this invocation (0 = none)   [0]
#   JOBS         models trained at the same time, one thread each  [2]
#   EVAL_ARGS    extra evaluate.py options, e.g. "--max-eval-tokens 32768"
#   RESULTS      where the results document goes  [resources/training/RESULTS.md]
#   SHIP         1 = finally run ship_models.py (resources/default-model.cflow, resources/models/, traces) [0]
# Needs Debian's /usr/bin/python3 with torch (tests/reference/README.md); nothing is installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work="${1:-$PWD/zoo-work}"
py=/usr/bin/python3
stories="${STORIES:-24000}"
vocab="${VOCAB:-4096}"
archs="${ARCHS:-arch1_decoupled_streams,arch2_4_combined,arch2_4_sync,arch3_pipeline_registers,arch4_async_experts,arch5_fixed_point}"
max_minutes="${MAX_MINUTES:-0}"
jobs="${JOBS:-2}"
results="${RESULTS:-$here/RESULTS.md}"
read -r -a train_args <<< "${TRAIN_ARGS:-}"
read -r -a eval_args <<< "${EVAL_ARGS:-}"

cflow="${CFLOW:-$repo/build/app/cflow}"
[[ -n "$cflow" && -x "$cflow" ]] || { echo "run.sh: no cflow CLI (set CFLOW=path/to/cflow)" >&2; exit 1; }
"$py" -c "import torch" 2>/dev/null || { echo "run.sh: $py cannot import torch" >&2; exit 1; }
mkdir -p "$work"
stamp() { date '+%H:%M:%S'; }

echo "[$(stamp)] model.py parity self-check against tests/reference/cflow_reference.py"
"$py" "$here/model.py"

echo "[$(stamp)] corpus: $stories stories -> $work/corpus"
"$py" "$here/make_corpus.py" "$work/corpus" --stories "$stories" --cflow "$cflow"

if [[ ! -f "$work/bpe/tokenizer.json" ]]; then
    echo "[$(stamp)] BPE: vocabulary $vocab -> $work/bpe"
    "$py" "$here/train_bpe.py" "$work/corpus" "$work/bpe" --vocab-size "$vocab" --cflow "$cflow"
fi

IFS=, read -r -a arch_list <<< "$archs"
# One model per job, JOBS at a time (each train.py uses one thread unless TRAIN_ARGS says --threads);
# a job's output goes to RUN/train.out. Exit 3 = some model stopped at MAX_MINUTES with a checkpoint.
train_one() {
    local arch="$1" run="$work/runs/$1" resume=()
    mkdir -p "$run"
    [[ -f "$run/checkpoint.pt" ]] && resume=(--resume)
    echo "[$(stamp)] $arch: training ${resume[*]:-from scratch} (log: $run/train.out)"
    "$py" "$here/train.py" --arch "$arch" --corpus "$work/corpus" --tokenizer "$work/bpe" --run-dir "$run" \
        --max-minutes "$max_minutes" --cflow "$cflow" "${resume[@]}" "${train_args[@]}" >> "$run/train.out" 2>&1
}
declare -A job_arch=()
failed=0 stopped=0
reap() {  # waits for one job; records its outcome
    local pid rc
    set +e
    wait -n -p pid
    rc=$?
    set -e
    local arch="${job_arch[$pid]}"
    unset "job_arch[$pid]"
    if [[ $rc -eq 3 ]]; then
        echo "[$(stamp)] $arch: stopped after MAX_MINUTES=$max_minutes with a checkpoint"
        stopped=1
    elif [[ $rc -ne 0 ]]; then
        echo "run.sh: training $arch failed (rc $rc); see $work/runs/$arch/train.out" >&2
        failed=1
    else
        echo "[$(stamp)] $arch: $(tail -n 1 "$work/runs/$arch/train.out")"
    fi
}
for arch in "${arch_list[@]}"; do
    if [[ -f "$work/runs/$arch/final.json" ]]; then
        echo "[$(stamp)] $arch: trained"
        continue
    fi
    while (( ${#job_arch[@]} >= jobs )); do reap; done
    train_one "$arch" &
    job_arch[$!]="$arch"
done
while (( ${#job_arch[@]} > 0 )); do reap; done
[[ $failed -eq 0 ]] || exit 1
if [[ $stopped -eq 1 ]]; then
    echo "[$(stamp)] some models stopped at MAX_MINUTES; run the same command again to continue"
    exit 3
fi

echo "[$(stamp)] evaluate -> $work/runs/results.json"
"$py" "$here/evaluate.py" --runs "$work/runs" --corpus "$work/corpus" --tokenizer "$work/bpe" --cflow "$cflow" \
    --archs "$archs" "${eval_args[@]}"
"$py" "$here/make_results.py" "$work/runs/results.json" -o "$results"
if [[ "${SHIP:-0}" == 1 ]]; then
    echo "[$(stamp)] ship -> resources/ (default model, zoo, manifest, parity traces)"
    "$py" "$here/ship_models.py" --runs "$work/runs" --cflow "$cflow"
fi
echo "[$(stamp)] done: $results"
