"""The documentation site and the counterexample page, opened in a real headless browser (Debian's Chromium)."""
import dataclasses
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from typer.testing import CliRunner

from groupspec.checkers import cli
from groupspec.checkers.review.site import build_site
from groupspec.spec import table as T

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if missing:
        why = f"{', '.join(missing)} not installed (.ci/setup installs Debian's chromium and chromium-driver)"
        if os.environ.get("CI"):
            pytest.fail(why)        # CI ran .ci/setup: a missing browser there is a broken setup, not a skip
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in FLAGS:
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield driver
    driver.quit()


def _draws_every_diagram(driver, timeout: float = 20.0) -> int:
    """Wait until every Mermaid block of the page holds an svg; how many there are."""
    from selenium.webdriver.support.ui import WebDriverWait
    count = driver.execute_script("return document.querySelectorAll('.gs-mermaid, pre.mermaid').length")
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(
        "return Array.from(document.querySelectorAll('.gs-mermaid, pre.mermaid')).every(e => e.querySelector('svg'))"))
    return count


# What a reader at 100% zoom in a 1,400 px window would trip over, measured on the rendered page: the page
# or a table wider than the article, diagram text drawn smaller than the body's (an SVG scaled down, a
# picture shown below its size), and internal terms in the prose (code blocks aside).
MEASURE = r"""
const bad = [];
const article = document.querySelector('article');
const body = parseFloat(getComputedStyle(article).fontSize);
const column = article.getBoundingClientRect().width;
if (document.documentElement.scrollWidth > window.innerWidth + 1)
  bad.push(`the page is ${document.documentElement.scrollWidth}px wide in a ${window.innerWidth}px window`);
for (const t of article.querySelectorAll('table'))
  if (t.getBoundingClientRect().width > column + 1) bad.push(`a table ${Math.round(t.getBoundingClientRect().width)}px wide in a ${Math.round(column)}px column`);
for (const svg of article.querySelectorAll('svg')) {
  const vb = svg.viewBox && svg.viewBox.baseVal;
  const scale = vb && vb.width ? svg.getBoundingClientRect().width / vb.width : 1;
  for (const t of svg.querySelectorAll('text')) {
    const px = parseFloat(getComputedStyle(t).fontSize) * scale;
    if (t.textContent.trim() && px < body * 0.8) { bad.push(`diagram text at ${px.toFixed(1)}px, the body's is ${body}px`); break; }
  }
}
for (const img of article.querySelectorAll('img'))
  if (img.naturalWidth && img.getBoundingClientRect().width < img.naturalWidth * 0.95)
    bad.push(`a picture drawn at ${(img.getBoundingClientRect().width / img.naturalWidth).toFixed(2)} of its size`);
const prose = article.cloneNode(true);
for (const pre of prose.querySelectorAll('pre')) pre.remove();
// the internals guide is for whoever changes groupspec: it names the code's own variables on purpose
const text = location.pathname.endsWith('/guide/internals.html') ? '' : prose.textContent;
for (const [what, re] of [['a double negation', /¬¬/], ['an escaped bar', /\\\|/], ['a spec parameter name', /\bp\.[a-z]/],
                          ['a scratch variable', /scratch_[a-z]/], ['ITF JSON', /#map|#set/]]) {
  const at = text.search(re);
  if (at >= 0) bad.push(`${what}: ...${text.slice(Math.max(0, at - 30), at + 30)}...`);
}
return bad;
"""


def _ids(path: Path, cache: dict) -> set:
    if path not in cache:
        cache[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(encoding="utf-8")))
    return cache[path]


def _a_change() -> str:
    """`groupspec diff`'s Markdown for a change of this tree: the longest row's effect given to another row,
    an invariant reworded, a world's verdict changed (the same comparison `diff` makes of two revisions)."""
    import copy
    from groupspec.checkers.review.describe_spec import describe
    from groupspec.checkers.review.spec_diff import Side, compare, markdown
    now = describe()
    after = copy.deepcopy(now)
    longest = max(now["rows"].values(), key=lambda r: len(r["effect"]))
    name = next(n for n, r in now["rows"].items() if r is not longest)
    after["rows"][name]["effect"] = longest["effect"]
    inv = next(iter(after["invariants"]))
    after["invariants"][inv] += " (reworded)"
    worlds = {"tiny": {"result": "ok", "states": 375, "violation": None, "depth": 9}}
    broken = {"tiny": {"result": "violation", "states": 120, "violation": "leader-is-member", "depth": 4}}
    return markdown(compare(Side("a1b2c3d", now["rows"], now["invariants"], {}, worlds),
                            Side("the working tree", after["rows"], after["invariants"], {}, broken)))


def test_the_site_renders_draws_its_diagrams_and_has_no_broken_link(browser, tmp_path):
    site = tmp_path / "site"
    build_site(site, changes=_a_change())
    to_visit, seen, ids, broken, unreadable = [site / "index.html"], set(), {}, [], []
    diagrams = external = 0
    while to_visit:
        page = to_visit.pop()
        if page in seen or page.suffix != ".html" or "source" in page.relative_to(site).parts:
            continue
        seen.add(page)
        browser.get(page.as_uri())
        assert browser.execute_script("return document.querySelector('article') !== null"), f"{page}: no article"
        assert "404" not in browser.title, page
        diagrams += _draws_every_diagram(browser)
        unreadable += [f"{page.relative_to(site)}: {b}" for b in browser.execute_script(MEASURE)]
        for href in browser.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"):
            url = urlparse(href)
            if url.scheme in ("http", "https"):
                external += 1
                continue
            target = Path(unquote(url.path))
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {href}")
                continue
            if url.fragment and target.suffix == ".html" and unquote(url.fragment) not in _ids(target, ids):
                broken.append(f"{page.relative_to(site)} -> {href} (no such anchor)")
            to_visit.append(target)
    assert not broken, f"{len(broken)} broken links, e.g. {broken[:5]}"
    assert not unreadable, f"{len(unreadable)} things a reader at 100% zoom trips over, e.g. {unreadable[:5]}"
    assert len(seen) > 40 and diagrams >= 6 and external > 100     # every row links to Kafka's source
    # the reviewer's questions, one or two clicks from the front page
    browser.get((site / "states" / "CompletingRebalance.html").as_uri())
    text = browser.find_element("tag name", "article").text
    assert "leader's SyncGroup fails to store" in text and "session expiry" in text
    browser.get((site / "table" / "JoinGroup.html").as_uri())
    href = browser.find_element("css selector", 'a[href*="source/spec/table.py.html#L"]').get_attribute("href")
    browser.get(href)
    line = unquote(urlparse(href).fragment)
    assert browser.execute_script(f"return document.getElementById('{line}').textContent").strip()
    # Kafka's own coordinators beside the spec: the report, per target, with its findings and known differences
    browser.get((site / "kafka.html").as_uri())
    text = browser.find_element("tag name", "article").text
    assert "The spec beside Kafka's own coordinators" in text       # docs/kafka-conformance.md, committed
    assert "kafka-3.9" in text and "kafka-4.0" in text and "Known differences not yet in the table" in text
    # what a change does to the protocol, one click from the front page, when the site is built with --diff
    browser.get((site / "index.html").as_uri())
    browser.find_element("link text", "What this change does").click()
    text = browser.find_element("tag name", "article").text
    assert "Rows changed" in text and "(reworded)" in text and "leader-is-member" in text, text[:300]
    # measurements are dated and say how they were made
    browser.get((site / "benchmarks.html").as_uri())
    text = browser.find_element("tag name", "article").text
    assert re.search(r"20\d\d-\d\d-\d\d", text) and "benchmarks/kafka.py" in text and "steps per second" in text


def test_check_out_writes_a_counterexample_page_that_draws(browser, tmp_path, monkeypatch):
    """A planted bug (an assignment handed out outside Stable) through `groupspec check --out`."""
    from groupspec.checkers.world import state_space
    rows = [dataclasses.replace(r, target=None) if r.name == "StoreGroupDone: assignment stored" else r
            for r in T.ROWS]
    real = state_space.WorldModel
    monkeypatch.setattr(state_space, "WorldModel", lambda cfg: real(cfg, rows))
    out = tmp_path / "ce"
    res = CliRunner().invoke(cli.app, ["check", "--preset", "tiny", "--out", str(out)])
    assert res.exit_code == 1, res.output
    page = out / "counterexample.html"
    assert page.is_file() and (out / "mermaid.min.js").is_file()
    browser.get(page.as_uri())
    assert _draws_every_diagram(browser) == 1
    body = browser.find_element("tag name", "body").text
    assert "assignment-only-when-stable" in body and "What it violates" in body
    # every step in Kafka's terms, the breaking one included, what a step changed marked; no ITF JSON
    assert "breaks assignment-only-when-stable" in body and "awaiting SyncGroup" in body
    assert "#map" not in body and "#set" not in body and not re.search(r"\bp\.\w", body)
    assert browser.find_elements("css selector", "td strong"), "no changed value is highlighted"


def test_site_refuses_a_folder_that_holds_something_else(tmp_path):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    res = CliRunner().invoke(cli.app, ["docs", "--site", str(keep)])
    assert res.exit_code == 2 and (keep / "notes.txt").is_file()
    assert shutil.which("dot")


@pytest.mark.parametrize("args, says", [
    (["docs", "--diff", "HEAD"], "--diff REV adds a page to the site: give --site DIR too"),
    (["docs", "--site", "{tmp}/s", "--diff", "no-such-revision-here"], "'no-such-revision-here' is not a commit"),
])
def test_a_change_page_needs_a_site_and_a_revision(tmp_path, args, says):
    res = CliRunner().invoke(cli.app, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert res.exit_code == 2 and says in res.output, res.output
    assert not (tmp_path / "s").exists()
