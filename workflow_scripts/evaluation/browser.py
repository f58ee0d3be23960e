"""Headless Chromium for the results page (:mod:`.summary_page`): its DOM after the page ran
(:func:`dump_dom`, what tests/test_summary_page.py reads) and a screenshot of its top
(:func:`screenshot`).  Chromium comes from the system (Debian: ``apt-get install chromium``;
.ci/run installs it); ``NMT_CHROMIUM`` names another binary.

The command renders the page of an existing results directory (its ``summary.json`` and
``summary.md``; results/report/ of a run, or docs/results/cpu/) with this checkout's code and
writes a PNG of the top of the page as a browser shows it:

    python -m workflow_scripts.evaluation.browser RESULTS_DIR --png summary_top.png
        [--html summary.html] [--width 1280] [--height 900]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nmtmodels.files import DataError
from workflow_scripts.evaluation import summary_page

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Headless, as root (no sandbox), no GPU, and nothing fetched from the network.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def find_chromium() -> str | None:
    """``NMT_CHROMIUM``, else the first of :data:`NAMES` on PATH; None without one."""
    named = os.environ.get("NMT_CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def run_chromium(page: str | Path, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    """Chromium with :data:`FLAGS`, a new empty profile and ``args`` on the file ``page``."""
    binary = find_chromium()
    if binary is None:
        raise DataError("chromium", "no headless Chromium found (apt-get install chromium, or NMT_CHROMIUM=BINARY)")
    with tempfile.TemporaryDirectory(prefix="nmt-chromium-") as profile:
        done = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *args, Path(page).resolve().as_uri()],
                              capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise DataError(page, f"chromium exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return done


def dump_dom(page: str | Path, timeout: float = 120.0) -> str:
    """The page's DOM after it loaded and its scripts ran."""
    return run_chromium(page, "--virtual-time-budget=5000", "--dump-dom", timeout=timeout).stdout


def screenshot(page: str | Path, png: str | Path, width: int = 1280, height: int = 900, timeout: float = 120.0) -> None:
    """A PNG of the top ``width`` x ``height`` pixels of ``page``."""
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    run_chromium(page, f"--screenshot={png}", f"--window-size={width},{height}", timeout=timeout)
    if not png.is_file():
        raise DataError(png, "chromium wrote no screenshot")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.evaluation.browser", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a directory with summary.json and summary.md (results/report, docs/results/cpu)")
    parser.add_argument("--png", required=True, help="the screenshot to write")
    parser.add_argument("--html", help="also keep the rendered page here (default: a temporary file)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args(argv)
    results = Path(args.results)
    markdown = results / "summary.md"
    try:
        with tempfile.TemporaryDirectory(prefix="nmt-summary-page-") as tmp:
            page = Path(args.html) if args.html else Path(tmp) / "summary.html"
            summary_page.write_page(results / "summary.json", page, markdown if markdown.is_file() else None)
            screenshot(page, args.png, args.width, args.height)
    except (DataError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
