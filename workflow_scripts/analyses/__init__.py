"""Analyses the papers draw beyond their main tables: the jobs (``python -m
workflow_scripts.analyses.X``).  Which runs each analyses, and the files it makes, are planned in
workflow_scripts/dag/analyses.py; the rules are in rules/analyses.smk (model_info: rules/report.smk).

    attention_plots  char2word attention heat-maps
    graph_analyses   Graph-Transformer gate weights by length, layer sweep (Figures 5, 6)
    model_info       parameter counts and training speed of a run
    swap_noise       reordering paper's swapped-word test sets and their curves (Figures 3-5)
"""
