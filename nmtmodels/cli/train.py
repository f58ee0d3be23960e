"""``nmt-train`` (``python -m nmtmodels.cli train``; under torchrun:
``torchrun --nproc_per_node=N -m nmtmodels.cli train ...``): train a model from text that is
already tokenised and BPE-encoded (or character-separated), resuming from
``OUT_DIR/checkpoint_last.pt``.  Exit codes: :mod:`nmtmodels.cli.common`; 75
(:data:`nmtmodels.training.trainer.EXIT_REQUEUE`) when interrupted by SIGTERM/SIGUSR1; 0 for a
run that ended as diverged with ``--on-divergence stop`` (2 with the default ``fail``)."""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from nmtmodels.checkpoint import initialise_from, parameters_fingerprint
from nmtmodels.choices import TEXT_FORMATS
from nmtmodels.cli.common import make_parser, run
from nmtmodels.config import ConfigError, plain_dict
from nmtmodels.data import ExtraField, ParallelDataset
from nmtmodels.devices import resolve_device
from nmtmodels.experiment import check_extras, load_experiment, parse_extras
from nmtmodels.files import read_lines
from nmtmodels.vocab import Vocabulary

# The workflow's jobs set it (Snakefile): a training left running by a killed Snakemake is
# waited for and adopted by the rerun's job instead of refused (docs/faults.md).
WAIT_ENV = "NMT_TRAIN_WAIT_FOR_LOCK"
# ... and this one to "stop": a diverged training ends as diverged (exit 0, its best checkpoint
# marked) and the results summary is still made, saying so (docs/faults.md).
DIVERGENCE_ENV = "NMT_TRAIN_ON_DIVERGENCE"

def main(argv: Sequence[str] | None = None) -> int:
    if "--list-families" in (sys.argv[1:] if argv is None else argv):
        return run("nmt-train", _list_families)
    parser = make_parser("nmt-train", "Train a model (resumes from OUT_DIR/checkpoint_last.pt).")
    parser.add_argument("--list-families", action="store_true",
                        help="list every model family (built-in, and from outside the package: entry points "
                             "'nmtmodels.families' and NMT_USER_MODULES) with its extra inputs and options, and exit")
    parser.add_argument("--config", help="experiment YAML with model:, train: and decode: sections")
    parser.add_argument("--train-src", required=True)
    parser.add_argument("--train-tgt", required=True)
    parser.add_argument("--valid-src", help="dev source (validation loss / BLEU)")
    parser.add_argument("--valid-tgt", help="dev target, encoded like the training target")
    parser.add_argument("--valid-ref", action="extend", nargs="+",
                        help="raw (detokenised) dev reference(s) for sacreBLEU (all of a multi-reference set); "
                             "else tokenised BLEU")
    parser.add_argument("--tgt-lang", default="en", help="target language for post-processing (default en)")
    parser.add_argument("--tgt-format", choices=TEXT_FORMATS, default="bpe",
                        help="how target tokens are encoded (for validation BLEU)")
    parser.add_argument("--src-vocab", required=True, help="vocabulary file (one token per line, or subword-nmt 'token count')")
    parser.add_argument("--tgt-vocab", required=True)
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("--extra", action="append", default=[], metavar="NAME=TRAIN:VALID",
                        help="extra integer input the model family needs (one line per sentence)")
    parser.add_argument("--extra-tokens", action="append", default=[], metavar="NAME=TRAIN:VALID",
                        help="extra token input, numericalised with the source vocabulary")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE", help="override a config value")
    parser.add_argument("--init-from", metavar="CHECKPOINT",
                        help="start from this checkpoint's parameters (same model and vocabularies; fresh optimiser "
                             "and schedule), e.g. supervised fine-tuning of a pre-trained model; ignored on resume")
    parser.add_argument("--restart-on-change", action="store_true",
                        help="when OUT_DIR/checkpoint_last.pt was written by a different run (model or train settings, "
                             "vocabularies, training data, --init-from parameters), delete that run's checkpoints and metrics "
                             "and start over "
                             "instead of failing (the workflow's training rules pass it)")
    parser.add_argument("--wait-for-lock", action="store_true", default=os.environ.get(WAIT_ENV) == "1",
                        help="when another nmt-train trains in OUT_DIR, wait for it to end and resume from its checkpoints "
                             f"instead of failing (default when the environment has {WAIT_ENV}=1, as the workflow's jobs do)")
    parser.add_argument("--on-divergence", choices=("fail", "stop"), default=os.environ.get(DIVERGENCE_ENV) or "fail",
                        help="a diverged run (docs/training.md, 'Diverging loss'): fail, exit status 2 with one line "
                             "(default); stop: end it with exit status 0 and one line in the log, checkpoint_best.pt "
                             "the best model before the divergence (else the model at the stop) marked as diverged, "
                             "OUT_DIR/diverged.json saying why (default when the environment has "
                             f"{DIVERGENCE_ENV}=stop, as the workflow's jobs do)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda (under torchrun: cuda:LOCAL_RANK)")
    args = parser.parse_args(argv)
    if args.on_divergence not in ("fail", "stop"):  # a default from the environment is not checked by argparse
        parser.error(f"{DIVERGENCE_ENV}={args.on_divergence!r} in the environment: expected fail or stop")
    if bool(args.valid_src) != bool(args.valid_tgt):
        parser.error("--valid-src and --valid-tgt go together")
    return run("nmt-train", lambda: _train(args))


def _list_families() -> int:
    from nmtmodels.registry import describe_families  # lazy: nmt-train --help stays free of torch

    print("\n".join(describe_families()))
    return 0


def _train(args: argparse.Namespace) -> int:
    # lazy: nmt-train --help (and a config error found before training) stays free of torch
    from nmtmodels.registry import build_model
    from nmtmodels.training.distributed import init_from_env
    from nmtmodels.training.state import seed_everything
    from nmtmodels.training.trainer import EXIT_REQUEUE, Trainer
    from nmtmodels.training.validation import make_bleu_fn

    model_cfg, train_cfg, decode_cfg = load_experiment(args.config, args.set)
    src_vocab = Vocabulary.from_file(args.src_vocab)
    tgt_vocab = Vocabulary.from_file(args.tgt_vocab)
    if model_cfg.share_embeddings and src_vocab != tgt_vocab:
        raise ConfigError("model.share_embeddings: needs one joint vocabulary, but --src-vocab and --tgt-vocab differ")
    if train_cfg.valid_bleu and not args.valid_src:
        raise ConfigError("train.valid_bleu: needs --valid-src and --valid-tgt")
    device = resolve_device(args.device)
    dist = init_from_env(device.type)
    if dist.enabled and device.type == "cuda":
        device = torch.device("cuda", dist.local_rank)

    seed_everything(train_cfg.seed)
    model = build_model(model_cfg, len(src_vocab), len(tgt_vocab))
    model.attach_vocabularies(src_vocab, tgt_vocab)
    init_fingerprint = None
    if args.init_from:
        initialise_from(model, args.init_from, src_vocab, tgt_vocab)
        init_fingerprint = parameters_fingerprint(model)
    extras = parse_extras(args.extra, args.extra_tokens, 2, "--extra")
    pads = check_extras(model, extras, model_cfg.family, "--extra")
    train_extras = {n: ExtraField(paths[0], pads[n], tokens) for n, (tokens, paths) in extras.items()}
    valid_extras = {n: ExtraField(paths[1], pads[n], tokens) for n, (tokens, paths) in extras.items()}
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if dist.is_main else (lambda msg: None)
    train_data = ParallelDataset.from_files(args.train_src, args.train_tgt, src_vocab, tgt_vocab, extras=train_extras,
                                            max_positions=model.max_positions(), too_long=train_cfg.too_long, log=log)
    valid_data = None
    bleu_fn = None
    if args.valid_src:
        valid_data = ParallelDataset.from_files(args.valid_src, args.valid_tgt, src_vocab, tgt_vocab, extras=valid_extras,
                                                max_positions=model.max_positions(), too_long="error")
        if train_cfg.valid_bleu:
            references = [list(read_lines(path)) for path in args.valid_ref] if args.valid_ref else None
            bleu_fn = make_bleu_fn(valid_data, tgt_vocab, decode_cfg, tokenized_references=list(read_lines(args.valid_tgt)),
                                   references=references, lang=args.tgt_lang,
                                   max_tokens=train_cfg.valid_max_tokens or train_cfg.max_tokens,
                                   device=device, amp=train_cfg.amp, text_format=args.tgt_format, src_vocab=src_vocab)
    out_dir = Path(args.out_dir)
    if dist.is_main:
        log(f"model {model_cfg.family}: {model.num_parameters():,} parameters; vocab {len(src_vocab)}/{len(tgt_vocab)}; "
            f"{len(train_data):,} training pairs" + (f", {len(valid_data):,} dev pairs" if valid_data else ""))
    trainer = Trainer(model, train_cfg, train_data, valid_data, out_dir, model_config=model_cfg.to_dict(),
                      src_vocab=src_vocab, tgt_vocab=tgt_vocab, bleu_fn=bleu_fn, decode_config=plain_dict(decode_cfg),
                      device=device, dist=dist, log=log, restart_on_change=args.restart_on_change,
                      init_fingerprint=init_fingerprint, wait_for_lock=args.wait_for_lock,
                      on_divergence=args.on_divergence)
    result = trainer.train()
    return EXIT_REQUEUE if result.status == "interrupted" else 0
