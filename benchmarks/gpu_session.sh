#!/usr/bin/env bash
# Issue 19's GPU figures in two device calls made back to back: the second reuses what the first installed
# and built on the still-warm machine. Each step's output lands in $OUT/<step>.log.
#
#   make gpu-carry                          # here, once: fills .whl/, .gpu/ and .gpu2/ (git-ignored)
#   bash benchmarks/gpu_session.sh 1        # device call 1, carry .whl and .gpu (about 50 MB)
#   bash benchmarks/gpu_session.sh 2        # device call 2 within 30 s of the first, carry .gpu2 (about 65 MB)
#   bash benchmarks/gpu_session.sh host     # one device call, carry .whl and .gpu: where the host's time goes
#   bash benchmarks/gpu_session.sh all      # one device call, carry .whl, .gpu, .gpu2/gutenberg_en_sample.txt.xz
#   bash benchmarks/gpu_session.sh bin      # one device call, the same carry: --formats bin, .gpu/old against this one
#   bash benchmarks/gpu_session.sh spy      # one device call, the same carry: the sample with --formats bin under py-spy
#   bash benchmarks/gpu_session.sh base     # one device call, the same carry: the tuned bare forward beside the
#                                           # pipeline on STS and on the sample (the ratio on this card), GPU vectors
#   bash benchmarks/gpu_session.sh knobs    # one device call, the same carry: ways to add the piece sums timed
#                                           # (benchmarks/piece_sums.py), then the sample with --formats bin at token
#                                           # budgets 16,384/32,768/65,536, without piece sums, with 8 workers
#   bash benchmarks/gpu_session.sh text     # one device call, carry .whl, .gpu, .gpu2/gutenberg_en_sample.txt.xz: 13
#                                           # sets' text files by writer threads and by processes
#                                           # (benchmarks/write_speed.py --sets 13), each module's import time, then
#                                           # the sample with the default formats by this checkout and by .gpu/old
#   bash benchmarks/gpu_session.sh prep     # device call 1, the same carry: wheels, model, corpora set up
#   bash benchmarks/gpu_session.sh minilm   # device call 2 within 30 s of it, carry .gpu2/minilm (MiniLM's weights
#                                           # and the sample do not fit one carry): MiniLM's bare forward beside its
#                                           # pipeline on STS and the sample, then the sample end to end with MiniLM
#                                           # (twice) and with the random BERT-base, --formats bin
#
# Part all is a whole session in one call (a lease of 15 minutes allows one): the 12M-word Gutenberg run of every
# layer with the code in .gpu/old (the commit to compare: `mkdir -p .gpu/old && git archive COMMIT distill | tar -x
# -C .gpu/old`), with this checkout, and with this checkout and --formats bin (each run's stage times appended to
# $OUT/manifests.log: a call returns at most 8 files); STS throughput of the random BERT-base, GPU against CPU
# vectors, STS throughput of a random MiniLM-shaped model (.gpu/minilm-config.json), where the run waits for the
# device (benchmarks/sync_check.py), then the first 2M words under py-spy when .whl holds it ($OUT/gutenberg-2m-spy.txt).
#
# Part 1: a random BERT-base (12 layers x 768, MiniLM's tokenizer) built from a seeded config, CPU vs GPU
# vectors, throughput of all layers (three token budgets) and of layer 1 against the tuned bare forward, where
# the time goes (benchmarks/gpu_profile.py), the host ceiling with the cores as workers. Part 2: MiniLM (float16
# copy) throughput, then the 12M-word Gutenberg sample distilled on the GPU with the random BERT-base, all
# layers (manifest: tokens, tokens/s, stage times, peak memory). Part host: the tokenizing pool's start and
# throughput by number of workers (benchmarks/pool_check.py), then whole runs' stage times with no workers and
# with the default pool (benchmarks/stage_times.py), on STS and on the first 2M words of the Gutenberg sample.
# DEVICE=cpu LINES=200 WHEELS=0 runs the same steps on a CPU (with python3 the project's), to check the script.
set -uo pipefail
part=${1:?"which part: 1, 2, host, all, bin, spy, text, base, knobs, prep or minilm"}
out=${OUT:-outputs/gpu-session}
device=${DEVICE:-cuda}
lines=${LINES:-0}
site=${SITE:-/tmp/site}
work=${WORK:-/tmp/distill-gpu}
mkdir -p "$out" "$work"
out=$(cd "$out" && pwd)  # absolute: part all runs the Gutenberg runs from $work
export PYTHONUNBUFFERED=1 PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"

step() {  # step NAME COMMAND...: run it under a time limit, its output to the screen and $out/NAME.log
    local name=$1
    shift
    echo "== $name: $*" | tee "$out/$name.log"
    timeout "${STEP_SECONDS:-240}" "$@" 2>&1 | tee -a "$out/$name.log"
}

setup() {  # the wheels, the STS corpus and the random BERT-base, from what part 1 and host carry
    if [ "${WHEELS:-1}" = 1 ] && ls .whl/*.whl >/dev/null 2>&1; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl || exit 2
    fi
    cp .gpu/sts_2012_2016_sentences.txt "$work/sts.txt"
    [ "$lines" -gt 0 ] && head -n "$lines" .gpu/sts_2012_2016_sentences.txt > "$work/sts.txt"
    (nvidia-smi || true; python3 -c "import torch; print(torch.__version__, torch.cuda.is_available())") > "$out/device.log" 2>&1
    step build python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; \
from gpu_check import build_model; build_model('.gpu/tokenizer', Path('$work/bert-base-random'))"
}

sample() {  # the 12M-word Gutenberg sample into $work, and what the machine has
    python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.gpu2/gutenberg_en_sample.txt.xz'), \
    open('$work/gutenberg.txt', 'wb'))" || exit 2
    [ "$lines" -gt 0 ] && head -n "$lines" "$work/gutenberg.txt" > "$work/g.txt" && mv "$work/g.txt" "$work/gutenberg.txt"
    (free -g; df -h "$work"; cat /proc/sys/vm/dirty_ratio /proc/sys/vm/dirty_background_ratio; nproc) >> "$out/device.log" 2>&1
}

gutenberg() {  # gutenberg NAME PYTHONPATH CORPUS [OPTION...]: the run of every layer on CORPUS, its manifest kept;
    local name=$1 path=$2 corpus=$3  # $prefix (py-spy) goes before the command when set
    shift 3
    rm -rf "$work/run" && sync
    pushd "$work" > /dev/null || exit 2  # not the checkout: python -m puts the working folder first on the path
    PYTHONPATH="$site:$path" python3 -c "import distill; print('$name: distill from', distill.__file__)" >> "$out/device.log"
    local began=$EPOCHREALTIME
    PYTHONPATH="$site:$path" step "$name" ${prefix[@]+"${prefix[@]}"} python3 -m distill run \
        --model "${model:-$work/bert-base-random}" --corpus "$corpus" --sampling greedy --max-occurrences 25 --min-count 3 \
        --layers all --pooling mean --device "$device" --no-progress --out "$work/run" -v "$@"
    local wall
    wall=$(python3 -c "print(round($EPOCHREALTIME - $began, 2))")  # the process's whole life, imports included
    popd > /dev/null || exit 2
    python3 -c "import json; m = json.load(open('$work/run/manifest.json')); \
print('$name', 'wall $wall', json.dumps(m['timings_seconds']), json.dumps(m['encoding']))" >> "$out/manifests.log" 2>&1
}

if [ "$part" = host ]; then
    setup
    xz -dc .gpu/gutenberg-2m.txt.xz > "$work/g2m.txt" || exit 2
    [ "$lines" -gt 0 ] && head -n "$lines" "$work/g2m.txt" > "$work/g.txt" && mv "$work/g.txt" "$work/g2m.txt"
    for corpus in sts g2m; do
        step "pool-$corpus" python3 benchmarks/pool_check.py --model "$work/bert-base-random" --corpus "$work/$corpus.txt"
        for workers in 0 ${HOST_WORKERS:-14}; do
            step "stages-$corpus-$workers" python3 benchmarks/stage_times.py --model "$work/bert-base-random" \
                --corpus "$work/$corpus.txt" --device "$device" --workers "$workers" --chunk-size 4096
        done
    done
elif [ "$part" = 1 ]; then
    setup
    if [ "$device" = cuda ]; then
        step check python3 benchmarks/gpu_check.py --tokenizer .gpu/tokenizer --corpus "$work/sts.txt" --lines 2000 \
            --model-dir "$work/bert-base-random"
    fi
    step bert-all python3 benchmarks/throughput.py --model "$work/bert-base-random" --layers all --device "$device" \
        --corpus "$work/sts.txt" --chunk-size 65536
    for budget in 65536 131072; do  # the tuned forward: which token budget per batch is fastest
        step "bert-all-$budget" python3 benchmarks/throughput.py --model "$work/bert-base-random" --layers all \
            --device "$device" --corpus "$work/sts.txt" --chunk-size 65536 --batch-tokens "$budget"
    done
    step profile python3 benchmarks/gpu_profile.py --model "$work/bert-base-random" --corpus "$work/sts.txt" \
        --device "$device"
    step bert-layer1 python3 benchmarks/throughput.py --model "$work/bert-base-random" --layers 1 --device "$device" \
        --corpus "$work/sts.txt" --chunk-size 65536
    step host python3 benchmarks/host_ceiling.py --model "$work/bert-base-random" --corpus "$work/sts.txt" --stages
elif [ "$part" = 2 ]; then
    python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('.gpu2/gutenberg_en_sample.txt.xz'), \
open('$work/gutenberg.txt', 'wb'))" || exit 2
    [ "$lines" -gt 0 ] && head -n "$lines" "$work/gutenberg.txt" > "$work/g.txt" && mv "$work/g.txt" "$work/gutenberg.txt"
    step minilm-all python3 benchmarks/throughput.py --model .gpu2/minilm --layers all --device "$device" \
        --corpus "$work/sts.txt" --chunk-size 65536
    rm -rf "$work/gutenberg-run"
    step gutenberg python3 -m distill run --model "$work/bert-base-random" --corpus "$work/gutenberg.txt" \
        --sampling greedy --max-occurrences 25 --min-count 3 --layers all --pooling mean --device "$device" \
        --no-progress --out "$work/gutenberg-run" -v  # the run's own chunks: 65,536 left workers idle (RESULTS.md)
    cp "$work/gutenberg-run/manifest.json" "$out/gutenberg-manifest.json" 2>/dev/null
elif [ "$part" = all ]; then
    setup
    step build-minilm python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; \
from gpu_check import build_model; build_model('.gpu/tokenizer', Path('$work/minilm-random'), '.gpu/minilm-config.json')"
    sample
    prefix=()
    [ -d .gpu/old/distill ] && gutenberg gutenberg-old "$PWD/.gpu/old" "$work/gutenberg.txt"
    gutenberg gutenberg-new "$PWD" "$work/gutenberg.txt"
    gutenberg gutenberg-new-bin "$PWD" "$work/gutenberg.txt" --formats bin
    step bert-all python3 benchmarks/throughput.py --model "$work/bert-base-random" --layers all --device "$device" \
        --corpus "$work/sts.txt" --chunk-size 4096
    [ "$device" = cuda ] && step check python3 benchmarks/gpu_check.py --tokenizer .gpu/tokenizer --corpus "$work/sts.txt" \
        --lines 2000 --model-dir "$work/bert-check"
    step minilm-all python3 benchmarks/throughput.py --model "$work/minilm-random" --layers all --device "$device" \
        --corpus "$work/sts.txt" --chunk-size 4096
    [ "$device" = cuda ] && step sync python3 benchmarks/sync_check.py --model "$work/bert-base-random" \
        --corpus "$work/sts.txt" --lines 2000
    if [ -x "$site/bin/py-spy" ]; then  # where the host's time goes: the main process's threads, sampled, not paused
        xz -dc .gpu/gutenberg-2m.txt.xz > "$work/g2m.txt"
        [ "$lines" -gt 0 ] && head -n "$lines" "$work/g2m.txt" > "$work/g.txt" && mv "$work/g.txt" "$work/g2m.txt"
        prefix=("$site/bin/py-spy" record --nonblocking -t -r 20 -f raw -o "$out/gutenberg-2m-spy.txt" --)
        gutenberg gutenberg-2m-spy "$PWD" "$work/g2m.txt"
    fi
elif [ "$part" = bin ]; then
    setup
    sample
    prefix=()
    [ -d .gpu/old/distill ] && gutenberg gutenberg-old-bin "$PWD/.gpu/old" "$work/gutenberg.txt" --formats bin
    gutenberg gutenberg-new-bin "$PWD" "$work/gutenberg.txt" --formats bin
    gutenberg gutenberg-new "$PWD" "$work/gutenberg.txt"
elif [ "$part" = spy ]; then
    setup
    sample
    # 20 samples a second: 50 fell 38 s behind in the sixth session
    prefix=("$site/bin/py-spy" record --nonblocking --idle -t -r 20 -f raw -o "$out/gutenberg-bin-spy.txt" --)
    gutenberg gutenberg-bin-spy "$PWD" "$work/gutenberg.txt" --formats bin
    prefix=()
    gutenberg gutenberg-bin "$PWD" "$work/gutenberg.txt" --formats bin
    python3 benchmarks/spy_summary.py "$out/gutenberg-bin-spy.txt" --rate 20 > "$out/spy-summary.log" 2>&1
elif [ "$part" = knobs ]; then  # the sample with --formats bin under the options that set the host's pace
    setup
    sample
    prefix=()
    [ "$device" = cuda ] && step piece-sums python3 benchmarks/piece_sums.py --device cuda  # the ways to add them
    gutenberg gutenberg-default "$PWD" "$work/gutenberg.txt" --formats bin
    for budget in 16384 65536; do
        gutenberg "gutenberg-budget-$budget" "$PWD" "$work/gutenberg.txt" --formats bin --batch-tokens "$budget"
    done
    gutenberg gutenberg-no-pieces "$PWD" "$work/gutenberg.txt" --formats bin --no-pieces
    gutenberg gutenberg-workers-8 "$PWD" "$work/gutenberg.txt" --formats bin --tokenize-workers 8
    gutenberg gutenberg-default-again "$PWD" "$work/gutenberg.txt" --formats bin
elif [ "$part" = prep ]; then
    setup
    sample
elif [ "$part" = minilm ]; then  # after prep, on the same machine
    [ -f "$work/gutenberg.txt" ] || { echo "run part prep first, on the same warm machine" >&2; exit 2; }
    (nvidia-smi --query-gpu=name,memory.total --format=csv || true) > "$out/device.log" 2>&1
    minilm="$PWD/.gpu2/minilm"
    for corpus in sts gutenberg; do
        step "minilm-all-$corpus" python3 benchmarks/throughput.py --model "$minilm" --layers all --device "$device" \
            --corpus "$work/$corpus.txt" --chunk-size 4096
    done
    prefix=()
    model=$minilm gutenberg gutenberg-minilm "$PWD" "$work/gutenberg.txt" --formats bin
    model=$minilm gutenberg gutenberg-minilm-again "$PWD" "$work/gutenberg.txt" --formats bin
    model="" gutenberg gutenberg-bert "$PWD" "$work/gutenberg.txt" --formats bin
elif [ "$part" = text ]; then  # the default formats' text files: threads against processes
    setup
    sample
    prefix=()
    step write python3 benchmarks/write_speed.py --sets 13 --dir "$work"
    # the plan step's 8-11 s (RESULTS.md, eighth session): each module's import, torch's and transformers' apart
    step imports python3 -X importtime -c "import torch; from transformers import AutoConfig; \
AutoConfig.from_pretrained('$work/bert-base-random'); from transformers import AutoModel"
    gutenberg gutenberg-text-new "$PWD" "$work/gutenberg.txt"
    [ -d .gpu/old/distill ] && gutenberg gutenberg-text-old "$PWD/.gpu/old" "$work/gutenberg.txt"
elif [ "$part" = base ]; then
    setup
    sample
    for corpus in sts gutenberg; do
        step "bert-all-$corpus" python3 benchmarks/throughput.py --model "$work/bert-base-random" --layers all \
            --device "$device" --corpus "$work/$corpus.txt" --chunk-size 4096
    done
    [ "$device" = cuda ] && step check python3 benchmarks/gpu_check.py --tokenizer .gpu/tokenizer --corpus "$work/sts.txt" \
        --lines 2000 --model-dir "$work/bert-check"
else
    echo "part must be 1, 2, host, all, bin, spy, text, base, knobs, prep or minilm" >&2
    exit 2
fi
