#!/usr/bin/env bash
# `make model MODEL=mpnet` on the whole 12M-word Gutenberg sample (issue 33), on a device machine: hours on two
# cores, minutes on a GPU. MPNet's weights (219 MB in float16) do not fit one carry, so they travel as four parts
# of a split tar, in calls made back to back on one warm machine; each step's output lands in $OUT.
#
#   bash benchmarks/gpu_model.sh carry    # here, once (after make mpnet-weights): .mp/a (wheels, the sample, the
#                                         # STS pairs, the word sets) and .mp/m1 ... .mp/m4 (git-ignored)
#   bash benchmarks/gpu_model.sh setup    # device call 1, carry .mp/a
#   bash benchmarks/gpu_model.sh part K   # device calls 2-5, K = 1 ... 4, carry .mp/mK, each within 30 s of the last
#   bash benchmarks/gpu_model.sh run      # device call 6 (or 5, after part 4 in the same call): the command, its
#                                         # card and scores into $OUT; give it a whole call (600 s): 420 s were
#                                         # too few on an H200 (RESULTS.md)
#   bash benchmarks/gpu_model.sh again    # the next call, where run's ran out: the same command goes on from its
#                                         # checkpoints (the encoding's, the tuning's last epoch saved)
#
# The run is what `make model MODEL=mpnet CORPUS=<the sample's folder>` runs (`distill model --model mpnet
# --teacher-bags 0 --corpus DIR`), on the GPU: the model in bfloat16 (--dtype auto), the table tuned there too.
# MODEL=minilm BAGS=0 LINES=300 runs setup, run and again here on a CPU, with python3 the project's, to check
# the script.
set -uo pipefail
part=${1:?"which part: carry, setup, part K, run or again"}
out=${OUT:-outputs/gpu-model}
root=${WORK:-/tmp/distill-model}
model=${MODEL:-mpnet}
lines=${LINES:-0}
mkdir -p "$root"
[ "$part" = carry ] || mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$root/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export DISTILL_DATA="$root/data" DISTILL_CACHE="$root/cache"

if [ "$part" = carry ]; then  # here: what the device machine needs, none of it in the repository
    data=${DATA:-../shared/data} cache=${CACHE:-$HOME/.cache/distill}  # the Makefile's DATA and CACHE
    python=${PY:-.venv/bin/python}
    rm -rf .mp && mkdir -p .mp/a/whl
    $python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 -d .mp/a/whl gensim==4.4.0 smart_open==9.0.2 faiss-cpu==1.15.1 \
        model2vec==0.10.0 || exit 2
    $python benchmarks/slim_wheel.py .mp/a/whl/gensim-*.whl gensim/test/ .c .cpp .pyx .pxd
    tar -C "$data" -cJf .mp/a/data.tar.xz similarity corpus/sts/sts_2012_2016_pairs.tsv
    xz -T2 -6 -c "$data/corpus/gutenberg/gutenberg_en_sample.txt" > .mp/a/gutenberg_en_sample.txt.xz
    $python -c "import sys, torch; from transformers import AutoModel; \
AutoModel.from_pretrained(sys.argv[1], dtype=torch.float16).save_pretrained(sys.argv[2])" \
        "$cache/all-mpnet-base-v2" "$root/mpnet16" || exit 2
    (cd "$cache/all-mpnet-base-v2" && find . -type f ! -name model.safetensors ! -name desktop.ini \
        ! -path ./config.json -exec cp --parents {} "$root/mpnet16/" \;)
    tar -C "$root" -cf "$root/mpnet16.tar" --transform 's,^mpnet16,all-mpnet-base-v2,' mpnet16
    split -n 4 -d -a 1 "$root/mpnet16.tar" "$root/mpnet16.part"
    for i in 1 2 3 4; do mkdir -p ".mp/m$i" && mv "$root/mpnet16.part$((i - 1))" ".mp/m$i/"; done
    sha256sum "$root/mpnet16.tar" | cut -d' ' -f1 > .mp/a/mpnet16.sha256
    rm -rf "$root/mpnet16" "$root/mpnet16.tar"
    du -sh .mp/*
elif [ "$part" = setup ]; then
    if ls .mp/a/whl/*.whl > /dev/null 2>&1 && [ "${WHEELS:-1}" = 1 ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$root/site" \
            .mp/a/whl/*.whl || exit 2
    fi
    mkdir -p "$DISTILL_DATA/corpus/gutenberg" "$DISTILL_CACHE" "$root/parts"
    tar -C "$DISTILL_DATA" -xJf .mp/a/data.tar.xz || exit 2
    xz -dc .mp/a/gutenberg_en_sample.txt.xz > "$DISTILL_DATA/corpus/gutenberg/gutenberg_en_sample.txt" || exit 2
    if [ "$lines" -gt 0 ]; then
        head -n "$lines" "$DISTILL_DATA/corpus/gutenberg/gutenberg_en_sample.txt" > "$root/head.txt"
        mv "$root/head.txt" "$DISTILL_DATA/corpus/gutenberg/gutenberg_en_sample.txt"
    fi
    cp .mp/a/mpnet16.sha256 "$root/"
    (nvidia-smi --query-gpu=name,memory.total --format=csv || true; nproc; free -g) > "$out/device.log" 2>&1
elif [ "$part" = part ]; then
    k=${2:?"which part: 1 to 4"}
    cp ".mp/m$k/mpnet16.part$((k - 1))" "$root/parts/" || exit 2
    ls -la "$root/parts"
elif [ "$part" = run ] || [ "$part" = again ]; then
    if [ "$model" = mpnet ] && [ "$part" = run ]; then
        cat "$root"/parts/mpnet16.part0 "$root"/parts/mpnet16.part1 "$root"/parts/mpnet16.part2 \
            "$root"/parts/mpnet16.part3 > "$root/mpnet16.tar" || exit 2
        [ "$(sha256sum "$root/mpnet16.tar" | cut -d' ' -f1)" = "$(cat "$root/mpnet16.sha256")" ] \
            || { echo "the weights' parts do not join to what was sent" >&2; exit 2; }
        tar -C "$DISTILL_CACHE" -xf "$root/mpnet16.tar" || exit 2
    fi
    bags=${BAGS:-$([ "$model" = mpnet ] && echo 0 || echo 50000)}  # the Makefile's MODEL_BAGS
    [ "$part" = again ] || rm -rf "$root/model"
    began=$EPOCHREALTIME
    python3 -m distill model --model "$model" --teacher-bags "$bags" --corpus "$DISTILL_DATA/corpus/gutenberg/" \
        --out "$root/model" --no-progress -v 2>&1 | while IFS= read -r line; do  # each line timed: where it stops
        printf '%s %s\n' "$(date +%T)" "$line"
    done | tee "$out/model.log"
    python3 -c "print('wall', round($EPOCHREALTIME - $began, 1))" | tee -a "$out/model.log"
    cp "$root/model/model2vec/README.md" "$out/card.md" 2>/dev/null
    cp "$root/model/model2vec/scores.json" "$out/scores.json" 2>/dev/null
    python3 -c "import json, sys; m = json.load(open(sys.argv[1])); \
print(json.dumps({k: m.get(k) for k in ('timings_seconds', 'encoding', 'vocabulary', 'best', 'model')}, indent=1)); \
print(json.dumps({k: {i: v.get(i) for i in ('sentences', 'bags', 'best_epoch', 'history')} \
for k, v in m.get('derived', {}).items()}, indent=1))" "$root/model/manifest.json" > "$out/manifest.log" 2>&1
else
    echo "part must be carry, setup, part K, run or again" >&2
    exit 2
fi
