# Targets of the GPU reproduction (docs/gpu.md): the whole of it, and its parts (one per paper).
# They build no file of their own: they name what `all` builds, less the model packages and
# analyses.  CONFIG_FILES (the config files of this run): rules/common.smk.


# The GPU reproduction (configs/gpu.yaml, docs/gpu.md): every score, significance test, paper
# table and the results summary of the config, without the model packages and analyses of `all`:
#   snakemake --cores 16 --configfile configs/gpu.yaml gpu_reproduction
rule gpu_reproduction:
    input:
        runs.model_targets(config),
        [ev.comparison_path(*comparison) for comparison in ev.comparisons(config)],
        ev.report_targets(config),


# The GPU reproduction in parts, one per paper, each within one call of the GPU machine
# (configs/gpu_parts/, workflow_scripts/dag/gpu_parts.py, docs/gpu.md): what gpu_reproduction
# builds, for the part's config; the target checks that the part's config files were given:
#   snakemake --cores 16 gpu_part_lattice --configfile configs/gpu.yaml configs/gpu_parts/lattice.yaml
for _part in gpu_parts.PARTS:

    rule:
        name:
            f"gpu_part_{_part}"
        input:
            gpu_parts.part_inputs(_part, config, CONFIG_FILES),
