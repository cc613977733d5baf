"""The documentation site: built from the notebooks, opened in a real (headless) browser."""
import functools, http.server, subprocess, sys, threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "runs" / "docs"
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def site():
    subprocess.run([sys.executable, "docs/build.py"], cwd=ROOT, check=True,
                   env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(ROOT / "_site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():                          # `make browser` said why it could not install it
        pytest.skip("SKIPPED the docs browser test: Debian's chromium is missing and `make browser` could not install it with apt")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield b
        b.close()


def open_page(browser, url):
    "Load `url`; return the page and every console error, page error and failed request seen."
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems = []
    page.on("console", lambda m: m.type == "error" and problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    page.goto(url, wait_until="networkidle")
    return page, problems


def loaded_images(page):
    return page.eval_on_selector_all("article img", "els => els.map(e => [e.getAttribute('src'), e.naturalWidth])")


def test_index_page(site, browser):
    page, problems = open_page(browser, f"{site}/index.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "index.png"), full_page=True)
    assert problems == []
    assert "FLAME" in page.title()
    text = page.inner_text("article")
    assert "make test" in text and "make demo" in text
    # every notebook is reachable from the navigation
    nav = page.eval_on_selector_all("nav a", "els => els.map(e => e.getAttribute('href'))")
    for nb in sorted((ROOT / "nbs").glob("[0-9]*.ipynb")):
        assert any(h and h.endswith(f"{nb.stem}.html") for h in nav), nb.stem


def test_tensor_page(site, browser):
    page, problems = open_page(browser, f"{site}/00_tensor.html")
    page.screenshot(path=str(SHOTS / "00_tensor.png"), full_page=True)
    assert problems == []
    # API entries rendered by show_doc: a heading per public name
    headings = page.eval_on_selector_all("article h3", "els => els.map(e => e.innerText.trim())")
    for name in ["MemoryTimeline", "MemoryTimeline.plot", "MemoryTimeline.summary", "MemoryTimeline.widget"]:
        assert any(h.startswith(name) for h in headings), (name, headings)
    # the timeline plot is an image that actually decoded
    imgs = loaded_images(page)
    assert imgs and all(w > 0 for _, w in imgs), imgs


def test_readme_is_generated_from_index():
    "README.md is index.ipynb rendered; a stale README fails here (run `python docs/build.py --readme`)."
    sys.path.insert(0, str(ROOT / "docs"))
    import build
    assert build.readme_text() == (ROOT / "README.md").read_text()
