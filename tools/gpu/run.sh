#!/usr/bin/env bash
# The one command of a `run` tool call on the GPU machine (tools/gpu/README.md), from the repository
# root, with carry [".whl", ".gpu_data"] filled here by tools/gpu/prepare.sh:
#   tools/gpu/run.sh                                  # snakemake gpu_reproduction, configs/gpu.yaml
#   tools/gpu/run.sh --part lattice                   # snakemake gpu_part_lattice, configs/gpu.yaml configs/gpu_parts/lattice.yaml
#   tools/gpu/run.sh --until-minutes 8 -- snakemake gpu_reproduction --cores 16 --configfile configs/gpu.yaml
#   tools/gpu/run.sh -- python benchmarks/throughput.py --device cuda --amp bf16 --peers opennmt-py
#   tools/gpu/run.sh --check-only                     # install and checks, no run
#   tools/gpu/run.sh --tests nmtmodels/tests/test_cuda.py --part reordering  # + those tests, beside the run
# Installs the wheels into /tmp/site (skipped when a warm machine has them already), puts
# /tmp/site and the repository on PYTHONPATH, reads corpora from .gpu_data (NMT_DATA_MIRROR),
# and carried segmentations from .gpu_data/segmentations (NMT_SEGMENTATIONS),
# checks the install (check_wheels.py --installed, snakemake --version, torch.cuda), then runs the
# command and stops it gracefully --until-minutes after the start (default 8: with the stop's
# 60 s of grace and the copying, inside the tool's 10-minute limit): trainings get SIGTERM first
# (they save checkpoint_last.pt and exit 75; one that has logged "finished:" is spared,
# tools/gpu/stop_trainings.py), then Snakemake SIGINT.  Whatever happened, the results summary,
# timeline, tables and a logs tarball go to $OUT (the tool returns at most 8 files).  Exit status:
# the command's; 75 when stopped at the deadline; 2 when the install or a check failed.
set -uo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
UNTIL=8
CHECK_ONLY=0
SITE=${GPU_SITE:-/tmp/site}
CONFIGS=(configs/gpu.yaml)
TARGET=gpu_reproduction
TESTS=()
while (($#)); do
    case $1 in
        --until-minutes) UNTIL=$2; shift 2 ;;
        --part) [[ -f configs/gpu_parts/${2:-}.yaml ]] || { echo "run.sh: no part '${2:-}' (configs/gpu_parts/)" >&2; exit 2; }
                CONFIGS=(configs/gpu.yaml "configs/gpu_parts/$2.yaml"); TARGET=gpu_part_$2; shift 2 ;;
        --check-only) CHECK_ONLY=1; shift ;;
        --tests) TESTS+=("$2"); shift 2 ;;
        --) shift; break ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
if (($#)); then
    COMMAND=("$@")
else
    COMMAND=(snakemake "$TARGET" --cores 16 --rerun-incomplete --keep-going --configfile "${CONFIGS[@]}")
fi
OUT=${OUT:-$ROOT/build/gpu-out}
mkdir -p "$OUT"
LOG=$OUT/run.log
exec > >(tee -a "$LOG") 2>&1
TEE=$!
finish() { exec 1>&- 2>&-; wait "$TEE" 2>/dev/null; exit "$1"; }  # run.log complete before the tool takes $OUT
say() { printf '[run.sh %4ds] %s\n' $(($(date +%s) - START)) "$*"; }

# ---------------------------------------------------------------- install
PYTHON=$(command -v python3)
[[ -d .whl ]] || { say "no .whl/ here: run tools/gpu/prepare.sh where PyPI is reachable and carry .whl"; finish 2; }
STAMP="$SITE/.carried-$(cat .whl/*.whl | sha256sum | cut -c1-16)"
if [[ -f $STAMP ]]; then
    say "wheels already installed in $SITE (warm machine)"
else
    say "installing $(ls .whl/*.whl | wc -l) wheels into $SITE with $PYTHON ($("$PYTHON" -V 2>&1))"
    rm -rf "$SITE"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        || { say "pip install of .whl failed"; finish 2; }
    touch "$STAMP"
fi
export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
# console scripts (snakemake) and a `python` for the rules' `python -m ...`, the one with torch.
# A wrapper, not a symbolic link: a link to a virtual environment's python elsewhere finds no
# pyvenv.cfg beside it and starts the base interpreter without the environment's packages (seen
# on the GPU machine, 2026-11-26: `python -m snakemake` there lacked the image's wrapt).
mkdir -p "$SITE/bin" && rm -f "$SITE/bin/python" && printf '#!/bin/sh\nexec "%s" "$@"\n' "$PYTHON" > "$SITE/bin/python" \
    && chmod +x "$SITE/bin/python"
export PATH="$SITE/bin:$PATH"
export NMT_DATA_MIRROR="$ROOT/.gpu_data" PYTHONUNBUFFERED=1
if [[ -d .gpu_data/segmentations ]]; then  # lattice segmenters run where prepare.sh ran (workflow_scripts/data/segment.py)
    export NMT_SEGMENTATIONS="$ROOT/.gpu_data/segmentations"
fi
if [[ -d .whl/peers ]]; then  # benchmarks/_venvs.py's pip installs find the carried peer wheels, offline
    export PIP_FIND_LINKS="$ROOT/.whl/peers" PIP_NO_INDEX=1
fi

# ---------------------------------------------------------------- checks
env -u PYTHONPATH "$PYTHON" -m pip list --format=freeze > "$OUT/image-pip-list.txt" 2>/dev/null
FAILED=0
"$PYTHON" tools/gpu/check_wheels.py .whl --installed --quiet || FAILED=1
if VERSION=$(snakemake --version 2>&1); then say "snakemake $VERSION at $(command -v snakemake)"; else say "snakemake --version: $VERSION"; FAILED=1; fi
"$PYTHON" - <<'EOF' || FAILED=1
import torch, nmtmodels, snakemake, sacremoses, subword_nmt, jsonschema, pandas
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, available: {torch.cuda.is_available()}", end="")
print(f", {torch.cuda.get_device_name(0)}, bf16: {torch.cuda.is_bf16_supported()}" if torch.cuda.is_available() else "")
assert torch.cuda.is_available(), "torch sees no GPU"
EOF
[[ -d .gpu_data ]] || { say "no .gpu_data/: corpora would be downloaded, and this machine has no network"; FAILED=1; }
if ((FAILED)); then say "checks failed (above); not running"; finish 2; fi
say "checks passed"
((CHECK_ONLY)) && finish 0

# ---------------------------------------------------------------- tests, beside the run
# pytest of the image, without the repository's addopts (its xdist options need the lock's
# pytest-xdist), -v so that the log names each test as it ends.  Each test is bounded by
# pytest-timeout (a hung one fails with its stack and the session goes on to its report), the
# whole session by `timeout`, with SIGKILL 20 s after SIGTERM: on 2026-11-26 a test hung in a
# CUDA-graph compile and pytest ignored SIGTERM.  Output: $OUT/tests.log.
TESTS_PID=
if ((${#TESTS[@]})); then
    say "pytest ${TESTS[*]} beside the command (log: tests.log)"
    timeout -k 20 $((UNTIL * 60 - 90)) "$PYTHON" -m pytest -o addopts= -p no:cacheprovider -v -ra --durations=15 \
        --timeout "${TEST_TIMEOUT:-150}" "${TESTS[@]}" > "$OUT/tests.log" 2>&1 &
    TESTS_PID=$!
fi

# ---------------------------------------------------------------- run, stopped before the limit
if [[ ${COMMAND[0]} == snakemake ]] && [[ -n $(ls -A .snakemake/locks 2>/dev/null) ]]; then
    say "a stale Snakemake lock (an earlier call was killed): unlocking"; "${COMMAND[@]}" --unlock >/dev/null 2>&1
fi
DEADLINE=$((START + UNTIL * 60))
say "running until $(date -d "@$DEADLINE" +%T) at the latest: ${COMMAND[*]}"
setsid "${COMMAND[@]}" &
PID=$!
STOPPED=0
while kill -0 "$PID" 2>/dev/null; do
    if (($(date +%s) >= DEADLINE)) && ((STOPPED == 0)); then
        STOPPED=1
        say "deadline: SIGTERM to unfinished trainings (they save checkpoint_last.pt), then SIGINT to the command"
        "$PYTHON" tools/gpu/stop_trainings.py "$PID" | while read -r line; do say "$line"; done
        for _ in $(seq 40); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
        kill -INT "$PID" 2>/dev/null
        for _ in $(seq 20); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
        kill -KILL -- -"$PID" 2>/dev/null
    fi
    sleep 2
done
wait "$PID"; STATUS=$?
((STOPPED)) && STATUS=75  # EX_TEMPFAIL, as a training stopped by its time limit; not 124 (the tool's own timeout)
say "command ended with status $STATUS"
if [[ -n $TESTS_PID ]]; then
    wait "$TESTS_PID"; TESTS_STATUS=$?
    say "pytest ended with status $TESTS_STATUS: $(tail -1 "$OUT/tests.log")"
fi

# ---------------------------------------------------------------- results into $OUT
if [[ ${COMMAND[0]} == snakemake ]] && [[ -d .snakemake/log ]]; then
    timeout 60 python -m workflow_scripts.evaluation.timeline --markdown results/report/timeline.md \
        --target "$(printf '%s\n' "${COMMAND[@]:1}" | grep -v '^-' | head -1)" --configfile "${CONFIGS[@]}" >/dev/null 2>&1 \
        || say "no timeline (python -m workflow_scripts.evaluation.timeline failed)"
fi
for file in results/report/summary.md results/report/summary.json results/report/timeline.md; do
    [[ -f $file ]] && cp "$file" "$OUT/"
done
[[ -d results/report/tables ]] && tar -czf "$OUT/tables.tar.gz" -C results/report tables
# logs: Snakemake's, the rules', each run's metrics and training log (no checkpoints)
find logs .snakemake/log results benchmarks/runs -type f \( -name '*.log' -o -name 'metrics.csv' -o -name '*.scores.json' \
    -o -name '*.md' -o -name '*.json' -o -name '*.txt' \) -size -4M 2>/dev/null \
    | tar -czf "$OUT/logs.tar.gz" -T - 2>/dev/null
say "in \$OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
finish "$STATUS"
