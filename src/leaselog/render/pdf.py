"""The HTML report printed to PDF by headless Chromium (`leaselog analyze ... --pdf FILE`).

Chromium is the one the tests use: Debian's /usr/bin/chromium (or $LEASELOG_CHROMIUM), driven by Playwright
(a development dependency: `pip install playwright`; no browser is ever downloaded). The report draws every
shown timeline at page width before printing (the same code a reader's Ctrl+P runs).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from leaselog.render.html import write_report

if TYPE_CHECKING:
    from leaselog.analysis import Analysis

__all__ = ["PdfError", "chromium_path", "write_pdf"]

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


class PdfError(Exception):
    """The PDF could not be made (no Chromium, no Playwright, or the page failed)."""


def chromium_path() -> str | None:
    for candidate in (os.environ.get("LEASELOG_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def write_pdf(
    a: Analysis, path: str | Path, *, html: str | Path | None = None, command: Sequence[str] | None = None
) -> Path:
    """Print the report of `a` (the one at `html` if already written) to the PDF `path` (A4)."""
    chromium = chromium_path()
    if chromium is None:
        raise PdfError("--pdf needs Chromium (Debian: apt-get install chromium, or set LEASELOG_CHROMIUM)")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError as e:
        raise PdfError("--pdf needs Playwright to drive Chromium: pip install playwright") from e
    with tempfile.TemporaryDirectory(prefix="leaselog-pdf-") as tmp:
        page_file = Path(html) if html is not None else Path(tmp) / "report.html"
        if html is None:
            write_report(a, page_file, command=command)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=ARGS)
                try:
                    page = browser.new_page()
                    page.goto(page_file.resolve().as_uri(), wait_until="load")
                    page.wait_for_selector("body[data-ready]", state="attached", timeout=600_000)
                    page.emulate_media(media="print")
                    page.evaluate("() => window.leaselogPrepareForPrint()")
                    page.pdf(path=str(path), format="A4", print_background=False)
                finally:
                    browser.close()
        except Error as e:
            raise PdfError(f"Chromium could not print the report: {e.message}") from e
    return Path(path)
