#!/usr/bin/env bash
# The embedded default's wall time in bf16 and in fp32 on one machine, each from a clean clone
# (issue 55: "the default's wall time before and after, both from clean clones on this machine").
#
#   benchmarks/default_wall_time.sh REPO COMMIT OUT [--dry-run]
#
# For each precision (bf16: config.yaml as shipped; fp32: --configfile config.yaml benchmarks/default_fp32.yaml)
# it clones REPO at COMMIT into OUT/<precision>/repo, installs it as the README says (a venv with the
# system's site packages, the lock file), runs `snakemake --cores 2 all` there and writes
# OUT/<precision>/{timeline.md,summary.md,wall_s}. The two runs go one after the other: each takes
# the two cores (about 86 minutes in bf16 on the 2-core Xeon of 2026-11-28). NMT_DATA_MIRROR must
# point at the corpus mirror. Keep the machine otherwise idle; other work at the same priority
# changes both numbers. --dry-run: only Snakemake's dry run of each (checks the clones and configs).
# PRECISIONS sets which runs and in what order (default "fp32 bf16": the longer run first, so that a
# session that cannot wait for both still ends with the run it lacked).
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 REPO COMMIT OUT [--dry-run]" >&2
  exit 2
fi
repo=$1 commit=$2 out=$3 dry=${4:-}
: "${NMT_DATA_MIRROR:?set NMT_DATA_MIRROR to the corpus mirror}"
# With the kernel's autogroup scheduling each session gets an equal share of the CPU whatever its
# nice value, so "other work at nice 19" beside the run takes half the cores (seen on 2026-12-07:
# trainings at 43-54% of a core). Say so before an hour is spent on a number that is not the default's.
if [[ $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0) == 1 ]]; then
  echo "warning: kernel.sched_autogroup_enabled is 1: nice does not lower other sessions' share of the CPU;" \
       "keep the machine idle, or as root: echo 0 > /proc/sys/kernel/sched_autogroup_enabled" >&2
fi
mkdir -p "$out"
for precision in ${PRECISIONS:-fp32 bf16}; do
  dir=$out/$precision
  rm -rf "$dir" && mkdir -p "$dir"
  git clone -q "$repo" "$dir/repo"
  git -C "$dir/repo" checkout -q "$commit"
  configs=(--configfile config.yaml)
  [[ $precision == fp32 ]] && configs+=(benchmarks/default_fp32.yaml)
  (
    cd "$dir/repo"
    python -m venv --system-site-packages .venv
    .venv/bin/python -m pip install -q -c requirements/lock.txt -e ".[workflow,zh,ja,test]"
    if [[ $dry == --dry-run ]]; then
      .venv/bin/python -m snakemake --cores 2 all "${configs[@]}" -n --quiet rules > "$dir/dry_run.txt"
      exit 0
    fi
    start=$(date +%s)
    .venv/bin/python -m snakemake --cores 2 all "${configs[@]}" > "$dir/snakemake.log" 2>&1
    echo $(( $(date +%s) - start )) > "$dir/wall_s"
    .venv/bin/python -m workflow_scripts.evaluation.timeline --markdown "$dir/timeline.md"
    cp results/report/summary.md "$dir/summary.md"
  )
  echo "$precision: $(cat "$dir/wall_s" 2>/dev/null || echo dry run) s" >&2
done
