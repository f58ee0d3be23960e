"""Evaluation stage: from scores to the papers' tables.

    concatenate   concatenations of test sets (the lattice paper's ALL)
    significance  sign test, paired bootstrap, approximate randomisation
    tables        the tidy results table and each paper's tables
    plots         scores by sentence group (BLEU by source length) and their plots
"""
