"""Lighthouse on the built site: the landing page and the heaviest page.

Usage: ``make audit`` (or ``python tools/lighthouse_audit.py _build/html``).

Serves the built site on a loopback port, under the path it has when hosted and
gzip-compressed as Read the Docs and GitHub Pages serve it, runs Lighthouse
(``node_modules/.bin/lighthouse``, pinned in package-lock.json) in Debian's
Chromium on each page, and prints the four category scores and the bytes
transferred. Exits non-zero when a score is below the site's aim.

The performance score of one run swings by several hundredths on a shared
2-core machine (total blocking time alone went from 90 to 460 ms between runs of
one page), so each page is run ``LIGHTHOUSE_RUNS`` times (5 unless set) and the
run with the median performance score is the one reported, as Lighthouse's own
guide to variability advises; every run's score is printed beside it.
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / "node_modules" / ".bin" / "lighthouse"
AIMS = {"performance": 0.95, "accessibility": 1.0, "best-practices": 0.95, "seo": 0.9}
RUNS = int(os.environ.get("LIGHTHOUSE_RUNS", "5"))
COMPRESSIBLE = (".html", ".css", ".js", ".svg", ".json", ".xml", ".txt", ".ipynb")
CHROME_FLAGS = ("--headless=new --no-sandbox --disable-gpu --disable-background-networking "
                "--disable-component-update --no-first-run")


def site_prefix(site: Path) -> str:
    """html_baseurl's path, from the sitemap line the build writes into robots.txt."""
    for line in (site / "robots.txt").read_text(encoding="utf8").splitlines():
        if line.startswith("Sitemap:"):
            return urlparse(line.split(":", 1)[1].strip()).path.rsplit("/", 1)[0] + "/"
    return "/"


def page_weight(site: Path, page: Path) -> int:
    """Bytes of a page's HTML plus the images it shows (what differs between pages)."""
    text = page.read_text(encoding="utf8")
    images = re.findall(r'<img[^>]+src="([^"]+)"', text)
    return len(text.encode()) + sum(
        (page.parent / src).stat().st_size for src in images if (page.parent / src).is_file()
    )


def heaviest_page(site: Path) -> str:
    pages = [p for p in site.rglob("*.html") if not p.relative_to(site).parts[0].startswith("_")]
    return max(pages, key=lambda p: page_weight(site, p)).relative_to(site).as_posix()


class Handler(http.server.SimpleHTTPRequestHandler):
    prefix = "/"

    def translate_path(self, path):
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if not clean.startswith(self.prefix):
            return str(Path(self.directory) / "__outside_the_site__")
        return super().translate_path("/" + clean[len(self.prefix):])

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        gzip_ok = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (gzip_ok and path.is_file() and path.suffix in COMPRESSIBLE):
            return super().send_head()
        body = gzip.compress(path.read_bytes())
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, *args):
        pass


def lighthouse(url: str, chromium: str) -> dict:
    with tempfile.TemporaryDirectory() as out:
        report = Path(out) / "report.json"
        subprocess.run(
            [str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={report}",
             f"--chrome-flags={CHROME_FLAGS}",
             "--only-categories=performance,accessibility,best-practices,seo"],
            check=True, env={**os.environ, "CHROME_PATH": chromium},
        )
        return json.loads(report.read_text(encoding="utf8"))


def main() -> int:
    site = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build" / "html").resolve()
    chromium = (os.environ.get("CHROMIUM") or shutil.which("chromium")
                or shutil.which("chromium-browser"))
    if not (site / "index.html").is_file():
        sys.exit(f"no built site in {site}: run `make html` first")
    if chromium is None:
        sys.exit("Chromium not found: `sudo apt-get install chromium`")
    if not LIGHTHOUSE.is_file():
        sys.exit("Lighthouse not installed: run `npm ci` (`make audit` does)")

    prefix = site_prefix(site)
    handler = type("SiteHandler", (Handler,), {"prefix": prefix})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}{prefix}"

    below = []
    print(f"{'page':<55} {'perf':>5} {'a11y':>5} {'b.p.':>5} {'seo':>5} {'bytes':>9}")
    for page in dict.fromkeys(["index.html", heaviest_page(site)]):
        runs = sorted((lighthouse(base + page, chromium) for _ in range(RUNS)),
                      key=lambda run: run["categories"]["performance"]["score"] or 0)
        report = runs[len(runs) // 2]  # the median run by performance
        scores = {key: report["categories"][key]["score"] for key in AIMS}
        weight = int(report["audits"]["total-byte-weight"]["numericValue"])
        each = " ".join(f"{run['categories']['performance']['score']:.2f}" for run in runs)
        print(f"{page:<55} " + " ".join(f"{scores[k]:>5.2f}" for k in AIMS) + f" {weight:>9,}"
              + (f"   performance of each run: {each}" if RUNS > 1 else ""))
        below += [f"{page}: {k} {scores[k]:.2f} < {aim}" for k, aim in AIMS.items()
                  if scores[k] is None or scores[k] < aim]
        for key, category in report["categories"].items():
            for ref in category["auditRefs"]:
                audit = report["audits"][ref["id"]]
                if ref.get("weight", 0) > 0 and audit.get("score") is not None \
                        and audit["score"] < 0.9:
                    print(f"    {key}: {audit['id']}: {audit['title']} "
                          f"({audit.get('displayValue', audit['score'])})")
                    for item in (audit.get("details") or {}).get("items", [])[:5]:
                        what = item.get("description") or item.get("url") or item.get("node", {}).get("snippet")
                        if what:
                            print(f"        {str(what)[:160]}")
    server.shutdown()
    if below:
        print("below the aim:\n  " + "\n  ".join(below))
        return 1
    print("every score meets its aim")
    return 0


if __name__ == "__main__":
    sys.exit(main())
