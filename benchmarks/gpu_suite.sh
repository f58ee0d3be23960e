#!/usr/bin/env bash
# The GPU benchmarks in one command (benchmarks/HISTORY.md, "GPU benchmarks at base size"):
#   benchmarks/gpu_suite.sh --prepare        # here, with network: .whl, .gpu_data, build/gpu-bench (< 64 MiB)
#   then one call of the run tool on the GPU machine:
#   run(command="tools/gpu/run.sh --until-minutes 9 -- benchmarks/gpu_suite.sh",
#       carry=[".whl", ".gpu_data", "build/gpu-bench"], timeout_s=600)
#   benchmarks/gpu_suite.sh --device cpu --quick   # the same steps at smoke sizes, on a CPU
# Parts (--parts, in this order by default), each a script of benchmarks/ with its own docstring:
#   throughput  throughput.py: ours (bf16) against OpenNMT-py 3.5.1 (fp16 mixed precision, the slim
#               environment), Transformer base, 25,000-token batches, 20 + 100 updates, MFU
#   profile     profile_train.py: 10 updates of our Trainer's step under torch.profiler
#   families    family_steps.py: step time of every structure-aware family at base, 4,096 tokens
#   search      search_gpu.py: beam 4 on newstest2014 (first 1,000 sentences), ours against
#               OpenNMT-py on the models throughput trained, batch sweep 1k-16k tokens
# Parts run only when named (--parts cuda-tests launch: the first call of a GPU session):
#   cuda-tests  pytest nmtmodels/tests/test_cuda.py (every GPU test, the compiled paths included)
#   launch      throughput.py, ours alone at the launch-bound shape ($LAUNCH_SHAPE, default tiny;
#               small is configs/gpu.yaml's): fp32 eager, bf16 eager, bf16 with
#               train.compile: reduce-overhead and 8/8 shape buckets (docs/compilation.md)
# Each part gets at most its own cap and what is left of --budget seconds (default 480, so that
# tools/gpu/run.sh's install and checks fit in its 9 minutes); a part stopped at its limit keeps
# what it wrote.  Output: $OUT/gpu_suite.md (every part's table, its command and seconds) and
# the parts' files under benchmarks/runs/gpu_suite/ (tools/gpu/run.sh packs them in logs.tar.gz).
set -uo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
DEVICE=cuda
QUICK=0
BUDGET=480
PARTS=(throughput profile families search)
PREPARE=0
WORK=benchmarks/runs/gpu_suite
BENCH_DATA=build/gpu-bench
while (($#)); do
    case $1 in
        --prepare) PREPARE=1; shift ;;
        --device) DEVICE=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --budget) BUDGET=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --parts) shift; PARTS=(); while (($#)) && [[ $1 != --* ]]; do PARTS+=("$1"); shift; done ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "gpu_suite.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- --prepare (here, with network)
if ((PREPARE)); then
    set -e
    MIRROR=${NMT_DATA_MIRROR:-$ROOT/../shared/data}
    tools/gpu/prepare.sh --configfile benchmarks/gpu_bench.yaml --peers opennmt-py-slim
    echo "== newstest2014 (search_gpu.py) into .gpu_data/"
    mkdir -p .gpu_data/wmt14-en-de-test
    cp -p "$MIRROR"/wmt14-en-de-test/newstest2014.{en,de} .gpu_data/wmt14-en-de-test/
    echo "== throughput.py's BPE data (made here once) into $BENCH_DATA/throughput-data/"
    # -c, not a script on standard input: the data steps' worker processes re-import the main module
    "$PYTHON" -c 'import sys, yaml; from pathlib import Path; from benchmarks.throughput import prepare_data
config = yaml.safe_load(Path("config.yaml").read_text(encoding="utf-8"))
print("  " + prepare_data(config, Path(sys.argv[1]), Path("benchmarks/runs/throughput"), 2, print)[1])' "$MIRROR"
    rm -rf "$BENCH_DATA" && mkdir -p "$BENCH_DATA/throughput-data"
    DATA=benchmarks/runs/throughput/data
    [[ -f $DATA/codes.en ]] || { echo "gpu_suite.sh: $DATA has no codes.en (the workflow's results/data were used?)" >&2; exit 1; }
    cp -p "$DATA"/bpe.train.* "$DATA"/bpe.test_2016_flickr.* "$DATA"/codes.* "$DATA"/vocab.* "$BENCH_DATA/throughput-data/"
    bytes() { xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
    TOTAL=$(( $(git ls-files -z --cached | bytes) + $(git ls-files -z --others --exclude-standard | bytes)
              + $(find .whl .gpu_data "$BENCH_DATA" -type f -print0 | bytes) ))
    MIB=$(awk -v b="$TOTAL" 'BEGIN {printf "%.1f", b / 1048576}')
    echo "== all that travels, with $BENCH_DATA: $MIB MiB of 64"
    ((TOTAL <= 64 * 1024 * 1024)) || { echo "gpu_suite.sh: over the run tool's 64 MiB" >&2; exit 1; }
    echo "OK: run(command=\"tools/gpu/run.sh --until-minutes 9 -- benchmarks/gpu_suite.sh\", carry=[\".whl\", \".gpu_data\", \"$BENCH_DATA\"], timeout_s=600)"
    exit 0
fi

# ---------------------------------------------------------------- the parts
OUT=${OUT:-$ROOT/build/gpu-out}
mkdir -p "$OUT" "$WORK"
REPORT=$OUT/gpu_suite.md
THROUGHPUT=$WORK/throughput
if [[ -d $BENCH_DATA/throughput-data ]] && [[ ! -f $THROUGHPUT/data/bpe.train.en ]]; then
    mkdir -p "$THROUGHPUT/data" && cp -p "$BENCH_DATA"/throughput-data/* "$THROUGHPUT/data/"
fi
if [[ $DEVICE == cuda* ]]; then AMP=(--amp bf16); PEER_AMP=(--peer-amp fp16); THREADS=8; else AMP=(); PEER_AMP=(); THREADS=2; fi
if ((QUICK)); then
    SIZES_T=(--quick --shape tiny)
    SIZES_P=(--quick --shape tiny)
    SIZES_F=(--quick)
    SIZES_S=(--quick --shape tiny --batch-tokens 300 1000 --fixed-batch-tokens 1000)
    SIZES_L=(--quick --warmup 4 --updates 8 --log-interval 4)
else
    SIZES_T=(--shape base --max-tokens 25000 --warmup 20 --updates 100 --log-interval 20 --decode-sentences 1000)
    SIZES_P=(--shape base --max-tokens 25000 --steps 10 --warmup-steps 5)
    SIZES_F=(--preset base --tokens 4096 --batches 8 --rounds 3)
    SIZES_S=(--shape base --sentences 1000 --batch-tokens 1000 2000 4000 8000 16000 --fixed-batch-tokens 4000)
    SIZES_L=()
fi
{
    echo "# GPU benchmark suite ($(date -u +%F), $(git rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
    echo
    "$PYTHON" -c "import torch; print(f'torch {torch.__version__}, ' + (torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA'))"
} > "$REPORT" 2>&1

part() {  # part NAME CAP_SECONDS RESULT_FILE COMMAND...
    local name=$1 cap=$2 result=$3; shift 3
    local left=$((BUDGET - ($(date +%s) - START)))
    local limit=$((cap < left ? cap : left))
    if ((limit < 20)); then
        printf '\n## %s\n\nnot run: %d s of the %d s budget left\n' "$name" "$left" "$BUDGET" >> "$REPORT"
        echo "[gpu_suite] $name: not run ($left s left)"
        return
    fi
    echo "[gpu_suite] $name (at most $limit s): $*"
    rm -f "$result"  # never report an earlier run's table
    local began=$(date +%s)
    timeout --signal=TERM --kill-after=15 "$limit" "$@" > "$WORK/$name.stdout" 2> "$WORK/$name.stderr"
    local status=$?
    local took=$(($(date +%s) - began))
    echo "[gpu_suite] $name: status $status after $took s"
    {
        printf '\n## %s\n\n`%s` (status %d, %d s%s)\n\n' "$name" "$*" "$status" "$took" \
            "$( ((status == 124 || status == 137)) && echo ", stopped at its $limit s limit")"
        if [[ -s $result ]]; then cat "$result"; else echo "(no result file; the last lines of its standard error:)"; echo '```'; tail -15 "$WORK/$name.stderr"; echo '```'; fi
    } >> "$REPORT"
}

for name in "${PARTS[@]}"; do
    case $name in
        throughput) part throughput 230 "$THROUGHPUT/table.md" "$PYTHON" benchmarks/throughput.py --device "$DEVICE" \
                        "${AMP[@]}" "${PEER_AMP[@]}" --peers opennmt-py --onmt-slim --no-ct2-export --threads "$THREADS" \
                        --work-dir "$THROUGHPUT" "${SIZES_T[@]}" ;;
        profile) part profile 75 "$WORK/profile.md" "$PYTHON" benchmarks/profile_train.py --device "$DEVICE" "${AMP[@]}" \
                     --threads "$THREADS" --work-dir "$THROUGHPUT" --out "$WORK/profile.md" "${SIZES_P[@]}" ;;
        families) part families 100 "$WORK/families.md" "$PYTHON" benchmarks/family_steps.py --device "$DEVICE" "${AMP[@]}" \
                      --threads "$THREADS" --out "$WORK/families.md" "${SIZES_F[@]}" ;;
        search) part search 200 "$THROUGHPUT/search/table.md" "$PYTHON" benchmarks/search_gpu.py --device "$DEVICE" \
                    "${AMP[@]}" "${PEER_AMP[@]}" --onmt-slim --threads "$THREADS" --work-dir "$THROUGHPUT" "${SIZES_S[@]}" ;;
        cuda-tests) part cuda-tests 240 "$WORK/cuda-tests.stdout" "$PYTHON" -m pytest -o addopts="" -p no:cacheprovider -q -rs \
                        nmtmodels/tests/test_cuda.py ;;
        launch)
            shape=${LAUNCH_SHAPE:-tiny}
            for variant in fp32 bf16 bf16-graphs; do
                dir=$WORK/launch-$shape-$variant
                mkdir -p "$dir/data" && cp -p "$THROUGHPUT"/data/* "$dir/data/" 2>/dev/null
                case $variant in
                    fp32) flags=(); cap=60 ;;
                    bf16) flags=(--amp bf16); cap=60 ;;
                    bf16-graphs) flags=(--amp bf16 --compile reduce-overhead --pad-to-multiple 8 --pad-rows-to-multiple 8); cap=100 ;;
                esac
                # a long warm-up: compiling and recording the graphs of the buckets happens there
                part "launch-$shape-$variant" "$cap" "$dir/table.md" "$PYTHON" benchmarks/throughput.py --device "$DEVICE" \
                    --peers --no-ct2-export --threads "$THREADS" --shape "$shape" --warmup 300 --updates 300 \
                    --log-interval 50 --decode-sentences 200 --work-dir "$dir" "${flags[@]}" "${SIZES_L[@]}"
            done ;;
        *) echo "gpu_suite.sh: unknown part '$name' (throughput, profile, families, search, cuda-tests, launch)" >&2; exit 2 ;;
    esac
done
echo "[gpu_suite] done in $(($(date +%s) - START)) s; $REPORT"
