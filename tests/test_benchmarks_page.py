"""The benchmarks pages: benchmarks/README.md gives the latest figures, each copied from a dated
section of benchmarks/HISTORY.md; links and named sections that point into either page exist."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CURRENT = ROOT / "benchmarks" / "README.md"
HISTORY = ROOT / "benchmarks" / "HISTORY.md"
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [line.lstrip("#").strip() for line in text.splitlines() if re.match(r"#{1,6} ", line)]


def titles(page: Path) -> list[str]:
    """The headings and the bold openings (``**Title.**``) of a page's paragraphs and items."""
    text = page.read_text(encoding="utf-8")
    bold = re.findall(r"^(?:- )?\*\*([^*]+)\*\*", text, flags=re.MULTILINE)
    return headings(page) + [re.sub(r"\s+", " ", title) for title in bold]


def test_anchor_follows_github() -> None:
    assert anchor("nmt-translate's threads (`benchmarks/translate_threads.py`)") == \
        "nmt-translates-threads-benchmarkstranslate_threadspy"
    assert anchor("nmt-translate: piped standard input against --input (`x.py`)") == \
        "nmt-translate-piped-standard-input-against---input-xpy"


def figures_not_in(page: str, history: str) -> list[str]:
    """The numbers of ``page`` that ``history`` does not have as a whole number (``2,669`` is
    not found inside ``12,669``, ``2,6691`` or ``2,669.5``)."""
    return sorted({number for number in NUMBER.findall(page)
                   if not re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", history)})


def test_every_figure_of_the_current_page_is_in_the_history() -> None:
    """No number on the current page that HISTORY.md does not have: figures are copied, not
    typed or recomputed."""
    missing = figures_not_in(CURRENT.read_text(encoding="utf-8"), HISTORY.read_text(encoding="utf-8"))
    assert not missing, f"figures of benchmarks/README.md that HISTORY.md does not have: {missing}"


def test_the_number_check_finds_a_figure_the_history_lacks() -> None:
    """A figure typed one off, or found only inside a longer number, is reported; a copied one is not."""
    history = "| ours | 2,669 | 12,670 | 2,6701 | 2,670.5 | 1.15 |"
    assert figures_not_in("ours: 2,669 sentences/s, 1.15 x", history) == []
    assert figures_not_in("ours: 2,670 sentences/s, 1.15 x, 1.1 x", history) == ["1.1", "2,670"]


def test_every_section_of_the_current_page_links_its_record() -> None:
    sections = re.split(r"\n## ", CURRENT.read_text(encoding="utf-8"))[1:]
    assert len(sections) >= 15
    anchors = {anchor(heading) for heading in headings(HISTORY)}
    for section in sections:
        targets = [target.split("#", 1)[1] for target in LINK.findall(section) if target.startswith("HISTORY.md#")]
        assert targets, f"no link to a section of HISTORY.md under '## {section.splitlines()[0]}'"
        assert set(targets) <= anchors, (section.splitlines()[0], set(targets) - anchors)


def markdown_pages() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in listed.stdout.split() if (ROOT / name).exists()]


@pytest.mark.parametrize("target", [CURRENT, HISTORY], ids=lambda p: p.name)
def test_links_to_a_section_of_the_benchmarks_pages_resolve(target: Path) -> None:
    anchors = {anchor(heading) for heading in headings(target)}
    broken = []
    for page in markdown_pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for link in LINK.findall(text):
            path, _, fragment = link.partition("#")
            if fragment and (page.parent / path).resolve() == target and fragment not in anchors:
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, broken


NAMED = re.compile(r"benchmarks/(README|HISTORY)\.md\)?,? \(?\"([^\"]+)\"")


def test_sections_named_in_the_repository_exist() -> None:
    """``benchmarks/README.md, "Title"`` in code, configs and docs names a heading or a bold
    paragraph of that page (the start of it)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    names = {"README": titles(CURRENT), "HISTORY": titles(HISTORY)}
    missing = []
    for name in listed:
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".yaml", ".sh", ""} or not path.is_file() or path in (CURRENT, HISTORY, Path(__file__)):
            continue
        text = re.sub(r"\s*\n\s*(?:#\s*)?", " ", path.read_text(encoding="utf-8", errors="replace"))
        for page, title in NAMED.findall(text):
            if not any(heading.startswith(title.rstrip(".")) for heading in names[page]):
                missing.append(f"{name}: benchmarks/{page}.md, \"{title}\"")
    assert not missing, missing
