#!/usr/bin/env python3
"""Screenshot a leaselog HTML report in headless chromium, to look at it.

    python scripts/screenshot.py report.html -o report.png
    python scripts/screenshot.py sample_logs/article-incident/ -o incident.png --selector '#job-0'
    python scripts/screenshot.py report.html -o finding.png --finding 0     # click "show on timeline"

A path that is not an .html file is analyzed first (with --lease-ttl if given) into a temporary report.
Uses Debian's /usr/bin/chromium (never downloads a browser); prints console errors and any network request.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", help="a report .html, or log paths to analyze first")
    ap.add_argument("-o", "--out", default="report.png", help="PNG to write")
    ap.add_argument("--selector", help="screenshot only this element (e.g. '#job-0', '#overview')")
    ap.add_argument("--finding", type=int, help="click the finding's 'show on timeline' link first")
    ap.add_argument("--full-page", action="store_true", help="the whole page, not just the viewport")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--lease-ttl", help="passed to leaselog analyze when target is not a report")
    a = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    report = Path(a.target)
    if report.suffix != ".html":
        import leaselog
        from leaselog.render.html import write_report

        opts = {"lease_ttl_ms": a.lease_ttl} if a.lease_ttl else {}
        report = Path(tempfile.mkdtemp()) / "report.html"
        write_report(leaselog.analyze(a.target, **opts), report)
        print(f"analyzed {a.target} -> {report}")

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": a.width, "height": a.height})
        page.on(
            "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:", "blob:"))
                else problems.append(f"network request: {r.url}")
            ),
        )
        t0 = time.perf_counter()
        page.goto(report.resolve().as_uri(), wait_until="load")
        try:
            page.wait_for_selector("body[data-ready]", state="attached", timeout=120_000)
        except Exception:
            print(
                "\n".join(problems) or "the report never got ready (no console error seen)", file=sys.stderr
            )
            raise
        print(f"loaded and drew the first timeline in {time.perf_counter() - t0:.2f}s")
        if a.finding is not None:
            page.click(f"#f-{a.finding} a.goto")
            page.wait_for_selector(f"[data-highlighted='{a.finding}']", timeout=30_000)
        if a.selector:
            el = page.locator(a.selector)
            el.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            el.locator("div.plot").first.wait_for(state="visible") if el.locator("div.plot").count() else None
            page.wait_for_function(
                "sel => !document.querySelector(sel + ' div.plot') ||"
                " document.querySelector(sel + ' div.plot').hasAttribute('data-rendered')",
                arg=a.selector,
                timeout=30_000,
            )
            el.screenshot(path=a.out)
        else:
            page.wait_for_timeout(300)
            page.screenshot(path=a.out, full_page=a.full_page)
        browser.close()
    print(f"wrote {a.out}")
    for pr in problems:
        print(pr, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
