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
  nmt-translate does (``Translator.from_checkpoint``, ``encode_source`` of every line,
  ``encoded_dataset``, ``search``, ``render``); the other loads and runs the pieces of
  ``encode_source`` one by one (``TextProcessor``, each ``WordSegmenter``, ``lattice_inputs``),
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
import shlex
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

from benchmarks._peers import cpu_name  # noqa: E402

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
    from nmtmodels.text.model_package import PackageSettings, write_package
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


def translate_command() -> list[str]:
    """``nmt-translate`` of this interpreter's environment, else ``python -m nmtmodels.cli translate``."""
    script = Path(sys.executable).parent / "nmt-translate"
    if script.is_file():
        return [str(script)]
    found = shutil.which("nmt-translate")
    return [found] if found else [sys.executable, "-m", "nmtmodels.cli", "translate"]


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


# ---------------------------------------------------------------------- lattice packages
LATTICE_EXPERIMENT = Path("results") / "experiments" / "lattice_lpe_lsa_zh" / "tatoeba_zh_en" / "model"
LATTICE_RAW = Path("results") / "data" / "tatoeba_zh_en" / "raw"


@dataclass
class Timed:
    """One timed process (a step of the workflow, a path, a worker) over the repeats."""

    name: str
    command: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # user + system of the process, all threads

    def add(self, seconds: float, cpu: float) -> None:
        self.seconds.append(seconds)
        self.cpu_seconds.append(cpu)


def timed_process(command: list[str], env: dict[str, str], log: Path, what: str) -> tuple[float, float, str]:
    """Run ``command`` (standard input closed); wall seconds, CPU seconds and standard output.
    Exits with the end of its standard error when it fails."""
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    stderr = done.stderr.decode("utf-8", "replace")
    log.write_text(stderr, encoding="utf-8")
    if done.returncode != 0:
        sys.exit(f"{what}: exit status {done.returncode}; stderr in {log}:\n{stderr[-2000:]}")
    cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    return seconds, cpu, done.stdout.decode("utf-8")


class Clock:
    """Wall and CPU time (this process, all threads) between marks."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, float, float]] = []
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def mark(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.parts.append((name, wall - self._wall, cpu - self._cpu))
        self._wall, self._cpu = wall, cpu


def lattice_worker(kind: str, package_dir: Path, source: Path, batch_tokens: int, output: Path) -> None:
    """(c) in this process: ``translator`` goes through the Translator API as nmt-translate does;
    ``pieces`` runs the pieces of the package's source encoder one by one, then loads the model
    alone.  Writes the parts' times and the outputs as JSON to ``output``."""
    import json

    clock = Clock()
    result: dict[str, object] = {}
    if kind == "translator":
        import torch  # noqa: F401

        clock.mark("import torch")
        from nmtmodels.decoding.translator import Translator
        from nmtmodels.devices import default_threads
        from nmtmodels.files import read_lines

        clock.mark("import nmtmodels (translator)")
        translator = Translator.from_checkpoint(package_dir, threads=default_threads())
        clock.mark("Translator.from_checkpoint: model + the package's TextProcessor and segmenters")
        sentences = list(read_lines(source))
        encoded = [translator.encode_line(line, str(source), number) for number, line in enumerate(sentences, start=1)]
        clock.mark("encode_source of every line: normalise, TOK, segment x3, lattice")
        dataset = translator.encoded_dataset(encoded, name=str(source))
        clock.mark("encoded_dataset (numericalise tokens, starts, ends)")
        results = translator.search(dataset, translator.decode_config(), max_tokens=batch_tokens)
        clock.mark("search (beam search, batched)")
        result["output"] = "".join(translator.render(hyps[0]).text + "\n" for hyps in results)
        clock.mark("render (BPE joined, detokenised)")
    else:
        from nmtmodels.files import read_lines
        from nmtmodels.text.lattice import lattice_inputs
        from nmtmodels.text.model_package import read_package
        from nmtmodels.text.preprocessing import TextProcessor, WordSegmenter

        clock.mark("import nmtmodels (text; it imports torch)")
        settings = read_package(package_dir).settings
        sentences = list(read_lines(source))
        processor = TextProcessor(settings.source, settings.unicode_form)
        clock.mark(f"load TextProcessor (source tokeniser {settings.source.tokenizer})")
        for line in sentences:
            processor.normalise(line)
        clock.mark("normalise (TextProcessor.normalise) alone")
        norms = [processor.process(line)[0] for line in sentences]
        clock.mark(f"TextProcessor.process: normalise + TOK ({settings.source.tokenizer}; a word lattice does not read TOK)")
        segmentations = []
        for name in settings.lattice.segmentations:
            segmenter = WordSegmenter(settings.source.lang, name)
            clock.mark(f"load segmenter {name}")
            segmentations.append([segmenter.segment(norm) for norm in norms])
            clock.mark(f"segment with {name}")
        inputs = [lattice_inputs(list(parts), settings.lattice.position_unit) for parts in zip(*segmentations)]
        clock.mark("lattice_inputs: build, check, tokens + starts + ends")
        result["inputs"] = ["".join(getattr(line, key) + "\n" for line in inputs) for key in ("tokens", "starts", "ends")]
        from nmtmodels.decoding.translator import Translator
        from nmtmodels.devices import default_threads

        clock.mark("import nmtmodels (translator; with torch)")
        Translator.from_checkpoint(package_dir / "checkpoint.pt", pretokenized=True, threads=default_threads())
        clock.mark("the model alone: Translator.from_checkpoint(checkpoint.pt, pretokenized=True)")
    result["parts"] = clock.parts
    output.write_text(json.dumps(result, ensure_ascii=False), encoding="utf-8")


def head_file(path: Path, count: int | None) -> list[str]:
    from nmtmodels.files import read_lines

    if not path.is_file():
        sys.exit(f"{path} not found")
    return list(itertools.islice(read_lines(path), count))


def lattice_main(args: argparse.Namespace) -> None:
    import json

    from nmtmodels.choices import TEXT_FORMATS
    from nmtmodels.text.model_package import read_package

    workdir = args.workdir
    package_dir = args.lattice_package or (workdir / LATTICE_EXPERIMENT if workdir else None)
    if package_dir is None or not (package_dir / "preprocess.json").is_file():
        sys.exit(f"{package_dir}: no model package (preprocess.json); pass --lattice-package")
    settings = read_package(package_dir).settings
    if settings.lattice is None:
        sys.exit(f"{package_dir}: not a lattice package (no \"lattice\" in preprocess.json)")
    if settings.lattice.bpe_sizes:
        sys.exit(f"{package_dir}: the lattice packs BPE sizes ({', '.join(settings.lattice.bpe_sizes)}); "
                 "this benchmark replays the word-lattice rules only (segment, lattice, lattice_inputs)")
    src, tgt = settings.source.lang, settings.target.lang
    raw_input = args.lattice_input or (workdir / LATTICE_RAW / f"test.{src}" if workdir else None)
    if raw_input is None:
        sys.exit("--lattice-input: needed without --workdir")
    raw_target = args.lattice_target or raw_input.with_name(f"{raw_input.name.rsplit('.', 1)[0]}.{tgt}")
    workflow_hyp = (workdir / LATTICE_EXPERIMENT.parent / f"{raw_input.name.rsplit('.', 1)[0]}.hyp") if workdir else None

    work = args.work_dir / "lattice"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    available = head_file(raw_input, None)
    sentences = available[: args.lines] if args.lines else available
    targets = head_file(raw_target, len(sentences))
    if len(targets) != len(sentences):
        sys.exit(f"{raw_target}: {len(targets)} lines, fewer than the {len(sentences)} source lines")
    lines = len(sentences)
    files = {name: work / name for name in (
        f"raw.{src}", f"raw.{tgt}", f"tok.{src}", f"tok.{tgt}", f"norm.{src}", f"norm.{tgt}", "lattice",
        f"lattice.{src}", "lattice.starts", "lattice.ends", "test.out", "test.hyp")}
    files[f"raw.{src}"].write_text("".join(line + "\n" for line in sentences), encoding="utf-8")
    files[f"raw.{tgt}"].write_text("".join(line + "\n" for line in targets), encoding="utf-8")
    seg = {name: work / f"seg.{name}.{src}" for name in settings.lattice.segmentations}

    import torch

    state = torch.load(package_dir / "checkpoint.pt", map_location="cpu", weights_only=False)
    decode = state.get("decode_config") or {}
    del state
    subwords = settings.subwords
    tgt_format = "char" if subwords == "char" else subwords[:3]
    assert tgt_format in TEXT_FORMATS, subwords
    unit_flag = {"char": ["--char-level"], "spm": ["--spm"]}.get(tgt_format, [])

    def lang_spec(side):  # the corpus spec's preprocess.LANG as preprocess.json records it
        return {"tokenizer": side.tokenizer, "join_pretokenized": side.join_pretokenized}

    spec = {"preprocess": {src: {**lang_spec(settings.source), "lattice_segmenters": list(settings.lattice.segmentations)},
                           tgt: lang_spec(settings.target)},
            "lowercase": settings.source.lowercase, "src": src, "tgt": tgt}
    python, data_threads = sys.executable, ["--threads", "1"]
    decode_flags = []
    for flag, key in (("--beam", "beam"), ("--lenpen", "length_penalty"), ("--max-len-a", "max_len_a"),
                      ("--max-len-b", "max_len_b")):
        if key in decode:
            decode_flags += [flag, str(decode[key])]
    steps = [Timed("preprocess (both sides; the rule's command)", [
        python, "-m", "workflow_scripts.data.preprocess", "--src-lang", src, "--tgt-lang", tgt,
        "--src-in", str(files[f"raw.{src}"]), "--tgt-in", str(files[f"raw.{tgt}"]),
        "--src-out", str(files[f"tok.{src}"]), "--tgt-out", str(files[f"tok.{tgt}"]),
        "--src-norm-out", str(files[f"norm.{src}"]), "--tgt-norm-out", str(files[f"norm.{tgt}"]),
        "--spec", json.dumps(spec, sort_keys=True, ensure_ascii=False), "--unicode-form", settings.unicode_form,
        *data_threads])]
    steps += [Timed(f"segment {name}", [python, "-m", "workflow_scripts.data.segment", "--lang", src, "--segmenter", name,
                                        "--input", str(files[f"norm.{src}"]), "--output", str(path), *data_threads])
              for name, path in seg.items()]
    steps += [
        Timed("lattice (build)", [python, "-m", "workflow_scripts.data.lattice", "build", "--inputs",
                                  *map(str, seg.values()), "--output", str(files["lattice"])]),
        Timed("lattice_inputs", [python, "-m", "workflow_scripts.data.lattice", "inputs", "--lattice", str(files["lattice"]),
                                 "--position-unit", settings.lattice.position_unit, "--tokens", str(files[f"lattice.{src}"]),
                                 "--starts", str(files["lattice.starts"]), "--ends", str(files["lattice.ends"])]),
        Timed("translate (--pretokenized, --extra starts/ends)", [
            python, "-m", "nmtmodels.cli", "translate", "--pretokenized", "--checkpoint", str(package_dir / "checkpoint.pt"),
            "--input", str(files[f"lattice.{src}"]), "--output", str(files["test.out"]), *decode_flags,
            "--tgt-format", tgt_format, "--extra", f"starts={files['lattice.starts']}", "--extra", f"ends={files['lattice.ends']}"]),
        Timed("postprocess (detokenise; the rule's 2nd command)", [
            python, "-m", "nmtmodels.cli", "postprocess", "--lang", tgt, *unit_flag, str(files["test.out"]), str(files["test.hyp"])]),
    ]
    package_run = Timed("(a) nmt-translate --checkpoint PACKAGE --input RAW",
                        translate_command() + ["--checkpoint", str(package_dir), "--input", str(files[f"raw.{src}"])])
    script = [python, str(Path(__file__).resolve()), "--lattice-package", str(package_dir), "--lattice-input",
              str(files[f"raw.{src}"]), "--batch-tokens", str(args.batch_tokens), "--lattice-worker"]
    workers = {kind: Timed(f"(c) {kind} worker", script + [kind, "--worker-output", str(work / f"worker.{kind}.json")])
               for kind in ("translator", "pieces")}
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TQDM_DISABLE": "1"}
    env.pop("NMT_SEGMENTATIONS", None)  # segment here, not from carried tables

    parts: dict[str, dict[str, list[tuple[float, float]]]] = {kind: {} for kind in workers}
    package_output = workflow_output = None
    load_before = os.getloadavg()
    for repeat in range(1, args.repeats + 1):  # (a), (b), (c) interleaved
        def say(what: str, repeat: int = repeat) -> None:
            print(f"repeat {repeat}/{args.repeats}: {what} ...", file=sys.stderr, flush=True)

        say(package_run.name)
        seconds, cpu, output = timed_process(package_run.command, env, work / f"a.repeat{repeat}.stderr", package_run.name)
        package_run.add(seconds, cpu)
        if package_output is not None and output != package_output:
            sys.exit("(a): the output differs between repeats")
        package_output = output
        for path in [*files.values(), *seg.values()]:  # every step makes its outputs anew
            if path.name not in (f"raw.{src}", f"raw.{tgt}"):
                path.unlink(missing_ok=True)
        for number, step in enumerate(steps, start=1):
            say(f"(b) {step.name}")
            step.add(*timed_process(step.command, env, work / f"b{number}.repeat{repeat}.stderr", step.name)[:2])
        output = files["test.hyp"].read_text(encoding="utf-8")
        if workflow_output is not None and output != workflow_output:
            sys.exit("(b): the output differs between repeats")
        workflow_output = output
        for kind, worker in workers.items():
            say(worker.name)
            worker.add(*timed_process(worker.command, env, work / f"c.{kind}.repeat{repeat}.stderr", worker.name)[:2])
            result = json.loads((work / f"worker.{kind}.json").read_text(encoding="utf-8"))
            for name, wall, cpu in result["parts"]:
                parts[kind].setdefault(name, []).append((wall, cpu))
            if kind == "translator" and result["output"] != package_output:
                sys.exit(f"(c): the Translator API's output differs from (a)'s (see {work})")
            if kind == "pieces":
                for text, key in zip(result["inputs"], (f"lattice.{src}", "lattice.starts", "lattice.ends")):
                    if text != files[key].read_text(encoding="utf-8"):
                        sys.exit(f"(c): the in-process lattice inputs differ from the lattice_inputs rule's {files[key]}")
    load_after = os.getloadavg()
    (work / "a.out").write_text(package_output, encoding="utf-8")
    if package_output != workflow_output:
        sys.exit(f"(a)'s output differs from (b)'s detokenised output: compare {work / 'a.out'} with {files['test.hyp']}")
    if workflow_hyp is not None and workflow_hyp.is_file() and lines == len(available):
        reproduces = "yes" if workflow_output == workflow_hyp.read_text(encoding="utf-8") else "**no**"
        reproduced = f"(b) reproduces the workflow's own {workflow_hyp}: {reproduces}"
    else:
        reproduced = "(b) not compared with a workflow .hyp (--lines below the file's, or no --workdir)"

    median = statistics.median
    total = Timed("(b) workflow path, total (steps in sequence)")
    for k in range(args.repeats):
        total.add(sum(step.seconds[k] for step in steps), sum(step.cpu_seconds[k] for step in steps))

    def row(name: str, timed: Timed, base: float) -> str:
        wall = median(timed.seconds)
        return (f"| {name} | {wall:.1f} | {min(timed.seconds):.1f}–{max(timed.seconds):.1f} | {lines / wall:.0f} "
                f"| {median(timed.cpu_seconds):.1f} | {wall / base:.2f} |")

    base = median(package_run.seconds)
    head = ("| {} | wall s (median) | wall s (range) | sentences/s (wall) | CPU s (median) | wall / (a)'s |\n"
            "|---|---:|---:|---:|---:|---:|")
    table_paths = "\n".join([head.format("path"), row(package_run.name, package_run, base), row(total.name, total, base)])
    table_steps = "\n".join([head.format("(b) step (rule)"), *(row(step.name, step, base) for step in steps),
                             row("total", total, base)])
    breakdown = []
    for kind, worker in workers.items():
        wall_total = median(worker.seconds)
        breakdown += [f"| **{kind} process** (fresh; {wall_total:.1f} s wall, {median(worker.cpu_seconds):.1f} s CPU) | | | |"]
        inside = 0.0
        for name, values in parts[kind].items():
            wall, cpu = median(v[0] for v in values), median(v[1] for v in values)
            inside += wall
            breakdown.append(f"| {name} | {wall:.2f} | {cpu:.2f} | {100 * wall / wall_total:.0f}% |")
        rest = wall_total - inside
        breakdown.append(f"| interpreter start-up, imports before the first mark, exit | {rest:.2f} | | {100 * rest / wall_total:.0f}% |")
    table_parts = "\n".join(["| (c) part of (a), in-process | wall s (median) | CPU s (median) | share of the process' wall |",
                             "|---|---:|---:|---:|", *breakdown])
    header = (f"{lines} sentences of {raw_input}; package {package_dir} (segmentations "
              f"{'+'.join(settings.lattice.segmentations)}, position unit {settings.lattice.position_unit}; decode "
              f"{' '.join(decode_flags)}); {args.repeats} repeats interleaved, median; fresh processes; "
              f"OMP_NUM_THREADS={args.threads}, data jobs --threads 1\n"
              f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__}, Python {platform.python_version()}; "
              f"1-min load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n"
              f"(a) = (b) = (c): identical output (checked); {reproduced}")
    commands = "\n".join(f"  {timed.name}: {shlex.join(timed.command)}" for timed in [package_run, *steps])
    report = (f"{header}\n\n{table_paths}\n\n{table_steps}\n\n{table_parts}\n\ncommands (last repeat; "
              f"files under {work}):\n{commands}\n")
    print(report)
    (work / "table.md").write_text(report, encoding="utf-8")


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
