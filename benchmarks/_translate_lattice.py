"""The lattice mode of ``benchmarks/translate_io.py`` (its module docstring, "Lattice mode"): raw
Chinese through a lattice model package (a) against the workflow's rules on the same lines (b),
and where (a)'s time goes, in two fresh worker processes (c); and the ``nmt-translate`` command
that both of its modes run."""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._setup import cpu_name

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "translate_io.py"  # runs the (c) workers (--lattice-worker)


def translate_command() -> list[str]:
    """``nmt-translate`` of this interpreter's environment, else ``python -m nmtmodels.cli translate``."""
    script = Path(sys.executable).parent / "nmt-translate"
    if script.is_file():
        return [str(script)]
    found = shutil.which("nmt-translate")
    return [found] if found else [sys.executable, "-m", "nmtmodels.cli", "translate"]



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
        from nmtmodels.model_package.reader import read_package
        from nmtmodels.text.lattice import lattice_inputs
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
    from nmtmodels.model_package.reader import read_package

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
    script = [python, str(SCRIPT), "--lattice-package", str(package_dir), "--lattice-input",
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
