"""The papers' claims and our verdicts on them, over all training runs: one package for the
results summary (:mod:`..summary`) and the merged GPU reproduction (:mod:`..merge_gpu_parts`).

A claim (the papers' ``claims.yaml``, or your own in the config's ``claims:``: both read by
:mod:`..claim_files`) names a system (an experiment with its seeds), the paper (or a name of your
own), the metric of the paper's table, the paper's words and difference, and optionally

* ``controls``: experiments that must not explain the gain, each with a ``role``:
  ``must_beat`` (a confound: the same parameters or inputs without the method; the system
  must beat it, tested over runs like the baseline) or ``beside`` (a variant shown beside the
  headline, tested against its own baseline: a reconstructed detail at another value, a
  budget-matched pair); ``what`` says what it controls;
* ``deviations``: where our setup differs from the paper's (``key``: the config key,
  ``paper``: the paper's value or reading, ``why``).

One module an idea:

* :mod:`.convention`: what "significant" means for a claim (its paper's test and level);
* :mod:`.training`: the training facts of each side of a comparison (updates, stop reasons,
  target tokens, still improving, the dev-loss gap over the budget);
* :mod:`.evidence`: the evidence of each claim row and control, from a summary's comparisons
  over runs;
* :mod:`.rules`: the verdict rule (:data:`.rules.VERDICT_RULE`, the one statement of it that the
  summary and docs/results.md quote), Holm's family, the power, the qualifiers, and
  :func:`.rules.claim_rows`, a summary's claims with their verdicts;
* :mod:`.report`: their Markdown, which the results summary and the merged GPU result print.
"""
