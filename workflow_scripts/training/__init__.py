"""Jobs that prepare a training run (``python -m workflow_scripts.training.X``).

    experiment_yaml  the resolved settings of a run: the ``--config`` of ``nmt-train``
                     (rules experiment_config, rules/train.smk, and compressor_config, rules/compression.smk)
"""
