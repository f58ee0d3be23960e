"""nmt-translate reading piped standard input against ``--input FILE``, on the same lines.

Every mode runs ``nmt-translate`` as a subprocess on the first ``--lines`` sentences of a
Multi30k English test set (default 200 of test_2016_flickr, from the data mirror), so the
times include interpreter start-up and model loading, as a user sees them:

* ``--input``:  ``nmt-translate --checkpoint M --input FILE``
* piped:        ``cat FILE | nmt-translate --checkpoint M`` (standard input is a pipe, not a
  terminal, so it is read whole and decoded in batches of ``--batch-tokens``)
* interactive:  ``cat FILE | nmt-translate --checkpoint M --interactive`` (one line decoded at
  a time: what piped input did before it was batched; ``--no-interactive`` leaves it out)
* with ``--pretokenized``: the same lines encoded beforehand by the package's own source
  encoder (``Translator.encode``), through ``--pretokenized --postprocess LANG``, from
  ``--input`` and piped.

Each mode runs ``--repeats`` times (the modes interleaved); the table gives the median wall
time, sentences/s from it, the median CPU time of the process (user + system, all threads:
less sensitive than wall time to other jobs on the machine), and the decoding time that
nmt-translate's closing progress line reports (``nmt-translate: translated N sentences in
X s``; the interactive mode writes none).
The script fails when a batched mode's output differs from ``--input``'s (the interactive
mode's agreement is shown, not required: a batch of one can round differently).

The model: ``--checkpoint`` (a model package directory), else the workflow's
``results/experiments/baseline/multi30k_en_de/model`` when it exists, else a package trained
here (cached in ``--work-dir``): the embedded default baseline's shape (preset ``tiny``: 3+3
layers, d 256, pre-norm) and decode settings (beam 4), per-side BPE learned with
subword-nmt on the first ``--train-pairs`` Multi30k pairs, ``--train-updates`` updates. Its
translations are poor; only the time matters here.

    python benchmarks/translate_io.py                        # 200 lines, 3 repeats
    python benchmarks/translate_io.py --checkpoint results/experiments/baseline/multi30k_en_de/model --repeats 5

**Lattice mode** (``--lattice-package DIR`` or ``--workdir W``): raw Chinese through a lattice
model package against the workflow's path to the same translations, on the first ``--lines``
sentences of ``--lattice-input`` (default: every line).  Under ``--workdir W`` (a finished
workflow run; only read) the defaults are W/results/experiments/lattice_lpe_lsa_zh/tatoeba_zh_en/model
and W/results/data/tatoeba_zh_en/raw/test.zh (and test.en beside it, ``--lattice-target``).
Each repeat (interleaved, fresh processes) times:

* (a) ``nmt-translate --checkpoint PACKAGE --input RAW`` (normalise, segment with each
  segmenter the package names, build the lattice and its spans, translate, detokenise);
* (b) the workflow's rules on the same lines, each as its rule's command (rules/preprocess.smk,
  rules/lattice.smk, rules/decode.smk) in a subprocess: ``preprocess`` (it takes both sides, so
  the target lines are preprocessed too, and the source is also tokenised with its TOK
  tokeniser), ``segment`` once per segmenter, ``lattice`` (build), ``lattice_inputs``,
  ``translate`` (``--pretokenized`` with ``--extra starts=/ends=``, the checkpoint's decode
  settings as flags) and the detokenising command of ``postprocess`` (its ``--no-detokenize``
  twin, written for tokenised BLEU, is left out); data jobs get ``--threads 1``
  (``data_threads``), every process ``OMP_NUM_THREADS=--threads``;
* (c) where (a)'s time goes, in two fresh processes: one goes through the Translator API as
  nmt-translate does (``Translator.from_checkpoint``, ``encode_line`` of every line,
  ``encoded_dataset``, ``search``, ``render``); the other loads and runs the pieces of
  ``encode_line`` one by one (``TextProcessor``, each ``WordSegmenter``, ``lattice_inputs``),
  then loads the model alone (``--pretokenized``), which splits ``from_checkpoint``'s time.

It fails when (a)'s output differs from (b)'s detokenised output or from (c)'s, or when (c)'s
lattice inputs differ from the ``lattice_inputs`` rule's files; it also says whether (b)
reproduces the workflow's own ``.hyp`` (when every line is translated).

    python benchmarks/translate_io.py --workdir /path/to/workflow/run --repeats 3
"""
from __future__ import annotations

import argparse
import gzip
import io
import itertools
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks._setup import cpu_name  # noqa: E402
from benchmarks._translate_lattice import (  # noqa: E402
    LATTICE_EXPERIMENT,
    LATTICE_RAW,
    lattice_main,
    lattice_worker,
    translate_command,
)

WORKFLOW_PACKAGE = ROOT / "results" / "experiments" / "baseline" / "multi30k_en_de" / "model"
CLOSING = re.compile(r"nmt-translate: translated ([0-9,]+) sentences in ([0-9.]+) s")
TRAIN_CONFIG = """\
model: {{preset: tiny, normalize_before: true}}
train: {{max_tokens: 1024, lr: 0.0015, warmup_updates: 50, max_updates: {updates}, log_interval: 50,
        label_smoothing: 0.1, num_threads: {threads}, keep_last: 1, keep_best: 0, seed: 1}}
decode: {{beam: 4, length_penalty: 0.6, max_len_a: 1.2, max_len_b: 10}}
"""


def default_data_dir() -> Path:
    return Path(os.environ.get("NMT_DATA_MIRROR") or ROOT.parent / "shared" / "data")


def head_gz(path: Path, count: int | None) -> list[str]:
    if not path.is_file():
        sys.exit(f"{path} not found: pass --data-dir or set NMT_DATA_MIRROR")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in itertools.islice(handle, count)]


# ---------------------------------------------------------------------- model
def train_package(data_dir: Path, work: Path, pairs: int, merges: int, updates: int, threads: int) -> Path:
    """A model package trained here (module docstring); reused when it exists."""
    from subword_nmt import apply_bpe, learn_bpe

    from nmtmodels import cli
    from nmtmodels.model_package.settings import PackageSettings
    from nmtmodels.model_package.writer import write_package
    from nmtmodels.text.preprocessing import LanguageSettings, TextProcessor

    directory = work / f"model-{pairs}-bpe{merges}-{updates}"
    package = directory / "model"
    if (package / "preprocess.json").is_file():
        return package
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    say = lambda message: print(message, file=sys.stderr, flush=True)
    settings = {lang: LanguageSettings(lang, "moses") for lang in ("en", "de")}
    for lang in ("en", "de"):
        say(f"training a model package: tokenising {pairs} {lang} lines, learning {merges} BPE merges")
        processor = TextProcessor(settings[lang], "NFKC")
        tok = [processor.tokenize(line) for line in head_gz(data_dir / "multi30k" / f"train.{lang}.gz", pairs)]
        codes = io.StringIO()
        learn_bpe.learn_bpe(tok, codes, merges, 2)
        (directory / f"codes.{lang}").write_text(codes.getvalue(), encoding="utf-8")
        bpe = apply_bpe.BPE(io.StringIO(codes.getvalue()), separator="@@")
        encoded = [bpe.process_line(line) for line in tok]
        (directory / f"train.{lang}").write_text("".join(line + "\n" for line in encoded), encoding="utf-8")
        counts = learn_bpe.get_vocabulary(encoded)
        (directory / f"vocab.{lang}").write_text("".join(f"{w} {c}\n" for w, c in counts.most_common()), encoding="utf-8")
        if cli.vocab_main(["--inputs", str(directory / f"vocab.{lang}"), "--from-counts",
                           "--output", str(directory / f"dict.{lang}")]) != 0:
            sys.exit("nmt-vocab failed")
    (directory / "train.yaml").write_text(TRAIN_CONFIG.format(updates=updates, threads=threads), encoding="utf-8")
    say(f"training a model package: {updates} updates")
    if cli.train_main(["--config", str(directory / "train.yaml"), "--train-src", str(directory / "train.en"),
                       "--train-tgt", str(directory / "train.de"), "--src-vocab", str(directory / "dict.en"),
                       "--tgt-vocab", str(directory / "dict.de"), "--out-dir", str(directory / "train"),
                       "--device", "cpu"]) != 0:
        sys.exit("nmt-train failed")
    settings_json = PackageSettings(source=settings["en"], target=settings["de"], unicode_form="NFKC",
                                    subwords=f"bpe{merges}", vocabulary_threshold=1)
    return write_package(package, directory / "train" / "checkpoint_last.pt", settings_json,
                         directory / "codes.en", directory / "vocab.en")


# ---------------------------------------------------------------------- runs
@dataclass
class Mode:
    name: str
    args: list[str]
    stdin: Path | None  # piped into the process; None: --input in args
    compare: bool = True  # must equal --input's output
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # user + system, all threads
    decode_seconds: list[float] = field(default_factory=list)
    output: str | None = None
    closing: str = ""

def run_mode(mode: Mode, command: list[str], env: dict[str, str], log: Path) -> None:
    data = mode.stdin.read_bytes() if mode.stdin is not None else None
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command + mode.args, input=data, stdin=None if data is not None else subprocess.DEVNULL,
                          capture_output=True, env=env, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    stderr = done.stderr.decode("utf-8", "replace")
    log.write_text(stderr, encoding="utf-8")
    if done.returncode != 0:
        sys.exit(f"{mode.name}: exit status {done.returncode}; stderr in {log}:\n{stderr[-2000:]}")
    output = done.stdout.decode("utf-8")
    if mode.output is not None and output != mode.output:
        sys.exit(f"{mode.name}: the output differs between repeats")
    mode.output = output
    mode.seconds.append(seconds)
    mode.cpu_seconds.append(cpu)
    closing = [line for line in stderr.splitlines() if CLOSING.match(line)]
    if closing:
        mode.closing = closing[-1]
        mode.decode_seconds.append(float(CLOSING.match(closing[-1]).group(2)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path,
                        help=f"a model package (default: {WORKFLOW_PACKAGE.relative_to(ROOT)} when it exists, else one trained here)")
    parser.add_argument("--lines", type=int,
                        help="sentences to translate (default 200; lattice mode: every line of --lattice-input)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode; the table gives the median (default 3)")
    parser.add_argument("--test-set", default="test_2016_flickr", help="Multi30k English file of the mirror (default test_2016_flickr)")
    parser.add_argument("--pretokenized", action=argparse.BooleanOptionalAction, default=True,
                        help="also time --pretokenized input (default on)")
    parser.add_argument("--interactive", action=argparse.BooleanOptionalAction, default=True,
                        help="also time --interactive on a pipe, one line at a time (default on)")
    parser.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of every run and training threads (default 2)")
    parser.add_argument("--batch-tokens", type=int, default=4096)
    parser.add_argument("--train-pairs", type=int, default=10000, help="Multi30k pairs to train a model on (without --checkpoint)")
    parser.add_argument("--merges", type=int, default=8000, help="BPE merges per side of that model")
    parser.add_argument("--train-updates", type=int, default=100, help="updates of that model")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(),
                        help="data mirror (default $NMT_DATA_MIRROR or ../shared/data)")
    parser.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "runs" / "translate_io",
                        help="scratch folder of this benchmark")
    lattice = parser.add_argument_group("lattice mode (module docstring)")
    lattice.add_argument("--workdir", "--workflow-dir", dest="workdir", type=Path,
                         help="a finished workflow run (only read): the defaults of --lattice-package/--lattice-input")
    lattice.add_argument("--lattice-package", type=Path,
                         help=f"a lattice model package (default under --workdir: {LATTICE_EXPERIMENT})")
    lattice.add_argument("--lattice-input", type=Path,
                         help=f"raw source sentences (default under --workdir: {LATTICE_RAW / 'test.zh'})")
    lattice.add_argument("--lattice-target", type=Path,
                         help="raw target lines for the preprocess rule, which takes both sides (default: beside "
                              "--lattice-input, with the target language's suffix)")
    lattice.add_argument("--lattice-worker", choices=("translator", "pieces"), help=argparse.SUPPRESS)
    lattice.add_argument("--worker-output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.lattice_worker:
        lattice_worker(args.lattice_worker, args.lattice_package, args.lattice_input, args.batch_tokens, args.worker_output)
        return
    if (args.lines is not None and args.lines < 1) or args.repeats < 1:
        parser.error("--lines and --repeats must be >= 1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if args.workdir is not None or args.lattice_package is not None:
        lattice_main(args)
        return
    args.lines = args.lines or 200
    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TQDM_DISABLE", "1")
    if args.checkpoint is not None:
        package, source = args.checkpoint, str(args.checkpoint)
    elif (WORKFLOW_PACKAGE / "preprocess.json").is_file():
        package, source = WORKFLOW_PACKAGE, f"{WORKFLOW_PACKAGE.relative_to(ROOT)} (the workflow's)"
    else:
        import torch

        torch.set_num_threads(args.threads)
        package = train_package(args.data_dir, work, args.train_pairs, args.merges, args.train_updates, args.threads)
        source = (f"trained here: preset tiny (3+3 layers, d 256), pre-norm, {args.merges} BPE merges per side, "
                  f"{args.train_pairs:,} Multi30k pairs, {args.train_updates} updates ({package})")

    from nmtmodels.decoding.translator import Translator

    sentences = head_gz(args.data_dir / "multi30k" / f"{args.test_set}.en.gz", args.lines)
    raw = work / "input.en"
    raw.write_text("".join(line + "\n" for line in sentences), encoding="utf-8")
    translator = Translator.from_checkpoint(package)
    target = translator.target_lang
    decode = translator.decode_config()
    encoded = work / "input.encoded.en"
    encoded.write_text("".join(translator.encode(line) + "\n" for line in sentences), encoding="utf-8")
    checkpoint = str(Path(package) / "checkpoint.pt") if Path(package).is_dir() else str(package)
    common = ["--checkpoint", str(package), "--batch-tokens", str(args.batch_tokens)]
    pretok = ["--checkpoint", checkpoint, "--batch-tokens", str(args.batch_tokens), "--pretokenized", "--postprocess", target]
    modes = [Mode("--input FILE", common + ["--input", str(raw)], None),
             Mode("piped stdin", common, raw)]
    if args.interactive:
        modes.append(Mode("piped stdin, --interactive (one line at a time)", common + ["--interactive"], raw, compare=False))
    if args.pretokenized:
        modes += [Mode("--pretokenized --input FILE", pretok + ["--input", str(encoded)], None),
                  Mode("--pretokenized, piped stdin", pretok, encoded)]
    command = translate_command()
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TQDM_DISABLE": "1"}
    load_before = os.getloadavg()
    for repeat in range(args.repeats):  # modes interleaved, so that a change of load hits them alike
        for number, mode in enumerate(modes):
            print(f"repeat {repeat + 1}/{args.repeats}: {mode.name} ...", file=sys.stderr, flush=True)
            run_mode(mode, command, env, work / f"mode{number}.repeat{repeat + 1}.stderr")
    load_after = os.getloadavg()

    reference = modes[0].output
    rows = []
    for mode in modes:
        same = mode.output == reference
        if mode.compare and not same:
            sys.exit(f"{mode.name}: the output differs from --input's (see {work})")
        wall = statistics.median(mode.seconds)
        decode_s = statistics.median(mode.decode_seconds) if mode.decode_seconds else None
        rows.append(f"| {mode.name} | {wall:.1f} | {min(mode.seconds):.1f}–{max(mode.seconds):.1f} | {args.lines / wall:.1f} "
                    f"| {statistics.median(mode.cpu_seconds):.1f} "
                    f"| {'—' if decode_s is None else f'{decode_s:.1f}'} "
                    f"| {'—' if decode_s is None else f'{args.lines / decode_s:.1f}'} | {'yes' if same else 'no'} |")
    import torch

    header = (f"{args.lines} sentences of Multi30k {args.test_set}.en; model: {source}; beam {decode.beam}, "
              f"--batch-tokens {args.batch_tokens}; {args.repeats} repeats, median; command: {' '.join(command)}\n"
              f"{cpu_name()}, OMP_NUM_THREADS={args.threads}, torch {torch.__version__}, Python {platform.python_version()}; "
              f"1-min load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    table = "\n".join([
        "| mode | wall s (median) | wall s (range) | sentences/s (wall) | CPU s (median) | decode s (closing line) "
        "| sentences/s (decode) | output = --input's |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        *rows,
    ])
    closing = "\n".join(f"  {mode.name}: {mode.closing}" for mode in modes if mode.closing)
    report = f"{header}\n\n{table}\n\nclosing progress lines (stderr, last repeat):\n{closing}\n"
    print(report)
    (work / "table.md").write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
