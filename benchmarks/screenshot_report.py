"""Open a report in headless Chromium, screenshot it, and fail if the page does not load cleanly.

    python -m benchmarks.screenshot_report bench_results/quick/report.html [--png shot.png] [--height 4000]

Checks: Chromium exits 0, prints no console error, writes a non-empty PNG, and the DOM it renders (with
``--dump-dom``) still has the report's title, its tables and every embedded image, and the page links
nothing outside itself. Needs a ``chromium``
(or ``chromium-browser``/``google-chrome``) binary; CI has none, so this is a script, not a default test.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Console lines Chromium prints for the page's own errors (script errors, resources that failed to load).
PAGE_ERROR = re.compile(r"CONSOLE\(\d+\)|Uncaught|Failed to load resource|net::ERR_", re.IGNORECASE)


def find_browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def chromium(browser: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:  # a fresh profile: no state leaks between runs
        command = [
            browser,
            "--headless",
            "--no-sandbox",  # runs as root in containers
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            f"--user-data-dir={profile}",
            *args,
        ]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)


def check_report(html: Path, png: Path, width: int = 1280, height: int = 4000) -> list[str]:
    """Screenshot ``html`` to ``png``; return the problems found (empty when the page opened cleanly)."""
    browser = find_browser()
    if browser is None:
        return ["no chromium binary found (apt-get install chromium)"]
    url = html.resolve().as_uri()
    problems = []
    shot = chromium(browser, f"--screenshot={png.resolve()}", f"--window-size={width},{height}", url)
    if shot.returncode != 0:
        problems.append(f"chromium exited with {shot.returncode}: {shot.stderr[-500:]}")
    problems += [f"page error: {line}" for line in shot.stderr.splitlines() if PAGE_ERROR.search(line)]
    if not png.is_file() or png.stat().st_size == 0:
        problems.append(f"no screenshot written to {png}")
    dom = chromium(browser, "--dump-dom", url).stdout
    source = html.read_text()
    if "<h1>Benchmark report" not in dom:
        problems.append("the rendered page has no report title")
    if dom.count("<table") < source.count("<table"):
        problems.append(f"rendered {dom.count('<table')} tables of {source.count('<table')}")
    images = source.count('src="data:image/png;base64,')
    external = [src for src in re.findall(r'(?:src|href)="([^"]*)"', source) if not src.startswith(("data:", "#"))]
    if external:
        problems.append(f"the report is not self-contained; it links {external[:3]}")
    if dom.count('src="data:image/png;base64,') != images:
        problems.append("embedded images missing from the rendered page")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="report.html of a `zoo bench` run")
    parser.add_argument("--png", type=Path, help="screenshot path (default: next to the report)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=4000, help="page height to capture in pixels")
    args = parser.parse_args(argv)
    png = args.png or args.html.with_name("report-screenshot.png")
    problems = check_report(args.html, png, args.width, args.height)
    for problem in problems:
        print(f"screenshot_report: {problem}", file=sys.stderr)
    if not problems:
        print(f"screenshot_report: {args.html} opened without errors; screenshot {png}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
