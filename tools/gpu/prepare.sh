#!/usr/bin/env bash
# Fill the folders that travel to the GPU machine with the `run` tool's `carry` (tools/gpu/README.md):
#   .whl/       wheels (CPython 3.12, Linux x86_64) of what the workflow needs and the image lacks
#   .gpu_data/  the corpus mirror files the GPU config reads (layout of ../shared/data), and in
#               .gpu_data/segmentations/ the lattice segmenters' output made here (thulac, snownlp)
# Runs here, with network to PyPI.  Usage, from anywhere:
#   tools/gpu/prepare.sh                                 # for configs/gpu.yaml
#   tools/gpu/prepare.sh --part lattice                  # for one part: configs/gpu.yaml configs/gpu_parts/lattice.yaml
#   tools/gpu/prepare.sh --configfile configs/gpu.yaml my.yaml
#   tools/gpu/prepare.sh --extra 'ctranslate2>=4.0,<5'   # more requirements (throughput.py's nmt-export row)
#   tools/gpu/prepare.sh --peers opennmt-py              # + benchmarks/_venvs.py's pins, in .whl/peers/
# Segmenters that only build lattices (not a corpus' tokenizer) stay here: their `segment` jobs
# run here (Snakemake in build/gpu-segmentations/) and travel as tables that the `segment` rule
# reads there (tools/gpu/carry.py, workflow_scripts/data/segment.py).
# Fails, naming the largest parts, when what travels (the repository's tracked and untracked,
# not ignored files + .whl + .gpu_data) exceeds the tool's 64 MiB.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
LIMIT=$((64 * 1024 * 1024))
CONFIGS=(configs/gpu.yaml)
EXTRA=()
PEERS=()
RUN=tools/gpu/run.sh
while (($#)); do
    case $1 in
        --configfile) shift; CONFIGS=(); while (($#)) && [[ $1 != --* ]]; do CONFIGS+=("$1"); shift; done ;;
        --part) [[ -f configs/gpu_parts/${2:-}.yaml ]] || { echo "prepare.sh: no part '${2:-}' (configs/gpu_parts/)" >&2; exit 2; }
                CONFIGS=(configs/gpu.yaml "configs/gpu_parts/$2.yaml"); RUN="tools/gpu/run.sh --part $2"; shift 2 ;;
        --extra) shift; while (($#)) && [[ $1 != --* ]]; do EXTRA+=("$1"); shift; done ;;
        --peers) shift; while (($#)) && [[ $1 != --* ]]; do PEERS+=("$1"); shift; done ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "prepare.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
    esac
done
for folder in .whl .gpu_data; do
    git check-ignore -q "$folder/" || { echo "prepare.sh: $folder is not git-ignored (.gitignore); it would travel twice" >&2; exit 1; }
done

echo "== wheels for ${CONFIGS[*]} (staging in build/gpu-carry/)"
"$PYTHON" tools/gpu/carry.py wheels --configfile "${CONFIGS[@]}" --out .whl --work build/gpu-carry \
    ${EXTRA[@]+--extra "${EXTRA[@]}"}
if ((${#PEERS[@]})); then
    echo "== peer wheels for ${PEERS[*]} (benchmarks/_venvs.py's INSTALL) into .whl/peers/"
    "$PYTHON" tools/gpu/carry.py peers --peers "${PEERS[@]}" --out .whl/peers --work build/gpu-carry
fi
echo "== static check of the carried set"
"$PYTHON" tools/gpu/check_wheels.py .whl

echo "== corpus mirror subset into .gpu_data/"
MIRROR=${NMT_DATA_MIRROR:-$ROOT/../shared/data}
[[ -d $MIRROR ]] || { echo "prepare.sh: no corpus mirror at $MIRROR (set NMT_DATA_MIRROR)" >&2; exit 1; }
rm -rf .gpu_data && mkdir -p .gpu_data
mapfile -t FILES < <("$PYTHON" tools/gpu/carry.py mirror --configfile "${CONFIGS[@]}")
for file in "${FILES[@]}" SOURCES.md; do
    [[ -f $MIRROR/$file ]] || { echo "prepare.sh: $MIRROR/$file is missing (the config reads it)" >&2; exit 1; }
    mkdir -p ".gpu_data/$(dirname "$file")" && cp -p "$MIRROR/$file" ".gpu_data/$file"
done
echo "  ${#FILES[@]} files from $MIRROR"
mapfile -t SEGMENTED < <("$PYTHON" tools/gpu/carry.py segmentations --configfile "${CONFIGS[@]}")
if ((${#SEGMENTED[@]})); then
    WORK=build/gpu-segmentations
    echo "== ${#SEGMENTED[@]} segmentations made here (Snakemake in $WORK/, log $WORK/snakemake.log) into .gpu_data/segmentations/"
    mkdir -p "$WORK"
    mapfile -t ABSOLUTE < <(realpath "${CONFIGS[@]}")
    env -u NMT_SEGMENTATIONS NMT_DATA_MIRROR="$MIRROR" "$PYTHON" -m snakemake -s Snakefile -d "$WORK" \
        --cores "${PREPARE_CORES:-2}" "${SEGMENTED[@]}" --configfile "${ABSOLUTE[@]}" > "$WORK/snakemake.log" 2>&1 \
        || { tail -20 "$WORK/snakemake.log" >&2; echo "prepare.sh: making the segmentations failed ($WORK/snakemake.log)" >&2; exit 1; }
    "$PYTHON" tools/gpu/carry.py tables --configfile "${CONFIGS[@]}" --workdir "$WORK" --out .gpu_data/segmentations
fi

echo "== what travels (limit 64 MiB = $LIMIT bytes)"
bytes() { xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}'; }
TRACKED=$(git ls-files -z --cached | bytes)
UNTRACKED=$(git ls-files -z --others --exclude-standard | bytes)
WHL=$(find .whl -type f -print0 | bytes)
DATA=$(find .gpu_data -type f -print0 | bytes)
TOTAL=$((TRACKED + UNTRACKED + WHL + DATA))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
printf '  %-38s %s\n' "repository, tracked files" "$(mib "$TRACKED")" "repository, untracked, not ignored" "$(mib "$UNTRACKED")" \
    ".whl ($(find .whl -type f -name '*.whl' | wc -l) wheels)" "$(mib "$WHL")" ".gpu_data ($(find .gpu_data -type f | wc -l) files)" "$(mib "$DATA")" \
    "total" "$(mib "$TOTAL") of 64 MiB"
if ((TOTAL > LIMIT)); then
    echo "prepare.sh: FAILED: $(mib "$TOTAL") would travel, over the run tool's 64 MiB. Largest wheels:" >&2
    find .whl -type f -name '*.whl' -printf '%s %p\n' | sort -rn | head -8 | awk '{printf "  %6.1f MiB  %s\n", $1 / 1048576, $2}' >&2
    echo "Use a config that needs less (e.g. no thulac / snownlp lattice, no ja corpus), or carry less data." >&2
    exit 1
fi
echo "OK: call the run tool with carry [\".whl\", \".gpu_data\"] and command: $RUN (tools/gpu/README.md)"
