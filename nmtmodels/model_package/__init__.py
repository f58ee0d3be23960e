"""A model package: one directory with what a model needs to read raw text and write plain text
(docs/translate.md, "The model package", lists every file and key).  The workflow's rule
``model_package`` writes it into ``results/experiments/EXPERIMENT/CORPUS/model/`` with
:func:`~.writer.write_package`: ``checkpoint.pt`` (the model the run decodes, without its
training state), ``preprocess.json``, and the source's subword files (``bpe.codes`` and ``bpe.vocab``,
``spm.model``, or ``lattice.bpeN.codes``/``.vocab`` for each BPE size a lattice packs), plus
``compressor.pt`` for ESC.

Four modules, one idea each, placed by what they import (``nmtmodels/tests/test_imports.py``):

- :mod:`.settings`: ``preprocess.json`` and the file names, torch-free (the workflow's DAG
  builds a run's settings with it);
- :mod:`.digests`: the sha256 of the subword files and the digest each model file stores of
  itself; checking a package's files against them;
- :mod:`.reader`: :func:`~.reader.read_package`, and the encoders that turn raw text into model
  input and model output into plain text (on every sentence's path; it writes nothing);
- :mod:`.writer`: :func:`~.writer.write_package` (the rule's job; it loads and saves checkpoints).

The package sits beside ``text/`` and ``checkpoint.py``, above both: ``text/`` is plain text
processing and never imports a checkpoint.

``preprocess.json`` holds the source and target :class:`~nmtmodels.text.preprocessing.LanguageSettings`
of the corpus' ``preprocess`` spec, the unicode form, the subword units (``bpeN``, ``spmN`` or
``char``) with BPE's vocabulary threshold or the SentencePiece model's name, the sha256 of each
subword file (``"sha256"``) and the sha256 that each model file stores of itself
(``"model_sha256"``).  Source text goes through the steps that made the training source
(:class:`~nmtmodels.text.preprocessing.TextProcessor`, then BPE, SentencePiece or characters);
the target side is undone by :func:`nmtmodels.text.postprocess.postprocess`.

**Lattice packages** (``"lattice"``): the source is the lattice of the named segmentations,
built as the workflow's rules build it (:mod:`nmtmodels.text.lattice`; the edge tokens, and
their start and end nodes as the extra inputs ``starts`` and ``ends``:
:meth:`~.reader.ModelPackage.input_encoder`).  **ESC packages** (``"compression"``): the translator
first compresses the subword source with ``compressor.pt`` (its decode settings) and reads
the result as the extra input ``compressed``.

Checks: :func:`~.writer.write_package` refuses BPE codes cut short or with another number of
merges than ``bpeN`` asks for (:func:`nmtmodels.text.bpe_codes.check_codes`);
:func:`~.reader.read_package` refuses a subword file whose sha256 differs from the recorded one,
and another model's checkpoint (DataError naming the file); packages written before the digests load without those checks.

CLI (``nmt-package``, also the rule's command as ``python -m nmtmodels.cli package``; ``--settings``
takes a preprocess.json file, or inline JSON as the rule gives it)::

    nmt-package --checkpoint CKPT --settings FILE [--codes C --vocab V | --spm-model M]
        [--lattice-bpe bpeN CODES VOCAB ...] [--compressor CKPT] --out-dir DIR
"""
