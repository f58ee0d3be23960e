"""What the Snakefile plans with: pure functions of the config, imported by the Snakefile and
the rule files (tested in tests/test_dag.py and beside each feature's tests).

    paths        every file name the workflow writes (logs and benchmarks too): templates with
                 Snakemake wildcards; the rules take every input, output, log and benchmark from it
    checks       check(config): the start-up checks the Snakefile runs once
    startup      the rest of start-up: one-line errors, writable output directories (onstart),
                 the hint after a killed run (--unlock, then --rerun-incomplete)
    runs         experiments: resolved settings, the runs `all` trains, fair comparisons
    sources      what a run reads: source side by what its family declares, training inputs,
                 extra-input flags, the source the fairness check compares, OOV-rate inputs
    families     what a family declares it reads (its module's FAMILY_NEEDS, read without torch):
                 the inputs the workflow makes, their start-up checks
    packages     model packages: which runs get one, its inputs and preprocess.json
    corpus_data  the data half (rules/data.smk, preprocess.smk, subwords.smk): targets, spec params
    compression  the compressed source that ESC models read: compressors, their data and quality,
                 the input ``compressed`` of the families that read it (rules/compression.smk)
    lattices     lattice inputs (rules/lattice.smk)
    cluster      resources, launcher and PYTHONPATH of jobs (rules/train.smk, profiles)
    evaluation   what is scored and tested: test sets, significance pairs, report targets
                 (rules/evaluate.smk, report.smk)
    analyses     the papers' analyses (rules/analyses.smk): which runs, inputs, targets, checks
    keys         misspelt config keys: one line with a did-you-mean, before the schema runs
    gpu_parts    the GPU reproduction in parts (configs/gpu_parts/, targets gpu_part_P in rules/gpu.smk)
    future_dates downloads and raw files dated in the future (clock skew): unchanged downloads
                 dated back to their fetch time, one warning naming the others (start-up)

The JSON schema (schemas/config.schema.yaml) checks keys and types; these modules check what a
schema cannot: cross-references between keys.  Every error names the key path.
"""


class WorkflowConfigError(ValueError):
    """The configuration is inconsistent; the message names the key."""
