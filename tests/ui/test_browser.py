"""`memlog ui` in a real headless Chromium (Debian's `chromium` and `chromium-driver`,
driven by Selenium), with JavaScript switched off: it loads, lists, filters, opens a
detail with its timeline, travels in time, and refuses a request without the token or
under a foreign host name.  Screenshots land in test-output/ui/ for a person to look at."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

from memlog.config import Config
from memlog.eventlog.events import (
    MemoryEvolved,
    Observed,
    Operation,
    Recalled,
    Retired,
    Superseded,
    Usage,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.tests.support import REPO

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SHOTS = REPO / "test-output" / "ui"
FOREIGN = "memlog.example.test"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1400",
)  # fmt: skip
DEMO = REPO / "examples" / "demo-project"
LONG_NAME = (
    "Open every CSV export from the billing systems with utf-8-sig and the csv module, "
    "never with a plain split on commas, because quoted fields hold commas"
)


def browser(*extra: str) -> Any:
    """A fresh headless Chromium with scripts off and a profile of its own."""
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("headless Chromium needs Debian's chromium and chromium-driver packages")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tempfile.mkdtemp(prefix='memlog-chromium-')}", *extra):
        options.add_argument(flag)
    options.add_experimental_option(
        "prefs", {"profile.managed_default_content_settings.javascript": 2}
    )
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def shot(driver: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    print(f"screenshot: {SHOTS / name}.png")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`memlog ui` on a home holding the demo knowledge bank, a recall, a supersede and a
    retirement; yields the address it printed (with its token)."""
    home = tmp_path_factory.mktemp("ui") / "home"
    env = {**os.environ, "MEMLOG_HOME": str(home), "MEMLOG_EMBEDDING_PROVIDER": "hashing"}
    memlog = [sys.executable, "-m", "memlog"]
    subprocess.run([*memlog, "import", str(DEMO)], env=env, check=True, capture_output=True)
    subprocess.run([*memlog, "inject", "--project-root", str(DEMO)], env=env, check=True,
                   capture_output=True)  # fmt: skip
    old = content_hash(
        "Writing a parser from a format description without opening real files first."
    )
    new = content_hash("Passing user text straight into an FTS5 MATCH expression.")
    EventLog(home).append([Superseded(entry_id=old, by=new, reason="a test of lineage")])
    EventLog(home).append([Retired(entry_id=new, reason="a test of retirement")])
    extracted = Observed(name=LONG_NAME, description=LONG_NAME + ", always.",
                         category="patterns", source="extraction", section="conventions",
                         project="demo-project", branch="feature/csv")  # fmt: skip
    audit = MemoryEvolved(
        project="demo-project", branch="feature/csv", mode="evolved", session_id="5e55-10n",
        operations=(
            Operation(op="add", entry_id=extracted.entry_id, section="conventions",
                      text=extracted.description, reason="a convention the session settled"),
            Operation(op="remove", entry_id=old, reason="the session showed it no longer holds"),
        ),
        usage=Usage(provider="claude-cli", model="claude-haiku-4-5", calls=1, tokens_in=8123,
                    tokens_out=412, cost_micros=10183),
    )  # fmt: skip
    EventLog(home).append([extracted, audit])
    assert any(isinstance(r.event, Recalled) for r in EventLog(home).read())
    server = subprocess.Popen(
        [*memlog, "ui", "--port", "0", "--json"], env=env, cwd=DEMO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert server.stdout is not None
    line = server.stdout.readline()
    try:
        yield json.loads(line)["url"]
    finally:
        server.terminate()
        server.wait(timeout=30)
        for stream in (server.stdout, server.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture(scope="module")
def page(served: str) -> Iterator[Any]:
    """A browser that opened the address ``memlog ui`` printed (its token), as a user's
    does first: each test may then run alone, or on another worker than the first."""
    driver = browser()
    try:
        driver.get(served)
        yield driver
    finally:
        driver.quit()


def submit(driver: Any, button: Any, fragment: str) -> None:
    """Click ``button`` and wait until the page it leads to (its URL holds ``fragment``)."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    button.click()
    WebDriverWait(driver, 30).until(expected_conditions.url_contains(fragment))
    WebDriverWait(driver, 30).until(lambda d: bool(d.find_elements("css selector", "footer")))


def css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def test_the_page_loads_and_lists(page: Any, served: str) -> None:
    page.get(served)
    assert "token=" not in page.current_url
    assert page.title == "Entries · memlog"
    rows = css(page, "tr.entry")
    count = css(page, "#count")[0].text
    assert count == f"{len(rows)} entries" and len(rows) == 8  # 10, less one retired, one replaced
    shot(page, "01-entries")


def test_filters_work_without_javascript(page: Any, served: str) -> None:
    from selenium.webdriver.support.ui import Select

    page.get(served.split("?")[0])
    Select(css(page, "select[name=category]")[0]).select_by_value("heuristics")
    submit(page, css(page, ".filters button")[0], "category=heuristics")
    badges = [b.text for b in css(page, "tr.entry .cat")]
    assert badges and set(badges) == {"heuristics"}
    shot(page, "02-filtered")
    search = css(page, "input[name=q]")[0]
    search.clear()
    search.send_keys("network deadline timeout")
    submit(page, css(page, ".filters button")[0], "q=network")
    names = [a.text for a in css(page, "tr.entry a.entry-link")]
    assert names[0] == "Timeouts On Every Network Call"
    shot(page, "03-ranked")


def test_a_detail_shows_its_timeline_and_lineage(page: Any, served: str) -> None:
    page.get(served.split("?")[0] + "?status=any")
    title = "Parsing Without Reading Real Samples"
    link = next(a for a in css(page, "a.entry-link") if a.text == title)
    submit(page, link, "/entry/")
    assert css(page, "h1")[0].text == title
    kinds = [
        row.find_elements("css selector", "td")[2].text for row in css(page, "#timeline tr.event")
    ]
    assert kinds[:1] == ["entry.observed"] and "entry.recalled" in kinds
    assert "entry.superseded" in kinds and "entry.labelled" in kinds
    lineage = css(page, "#lineage")[0].text
    assert "Replaced by:" in lineage and "Raw User Text in FTS Queries" in lineage
    shot(page, "04-detail")
    first = css(page, "#timeline tr.event a")[0]
    seq = first.text
    submit(page, first, f"as_of={seq}")
    assert f"Time travel: the views as of {seq} " in css(page, ".banner")[0].text
    shot(page, "05-time-travel")


def test_the_next_session_view(page: Any, served: str) -> None:
    page.get(served.split("?")[0] + "next")
    field = css(page, "input[name=dir]")[0]
    assert field.get_attribute("value")  # the project it serves
    field.clear()
    field.send_keys(str(DEMO))
    submit(page, css(page, ".filters button")[0], "dir=")
    headings = [th.text for th in css(page, "table.ranking th.signal")]
    shipped = Config()  # the weights the page shows are the configured ones
    assert headings == [
        f"lexical ×{shipped.memory_fusion_lexical_weight:.2f}",
        f"vector ×{shipped.memory_fusion_vector_weight:.2f}",
        f"prominence ×{shipped.memory_fusion_prominence_weight:.2f}",
        f"neighbours ×{shipped.memory_neighbour_weight:.2f}",
        f"usefulness ×{shipped.memory_usefulness_weight:.2f}",
    ]
    scores = [float(td.text) for td in css(page, "table.ranking td.score")]
    assert scores and scores == sorted(scores, reverse=True)  # best first
    # a bar per term that adds to the score; the prominence, weighed 0, adds nothing
    assert shipped.memory_fusion_prominence_weight == 0
    assert not css(page, 'table.ranking td[data-signal="prominence"] span.bar')
    assert css(page, 'table.ranking td[data-signal="lexical"] span.bar')
    assert {td.text.split()[0] for td in css(page, 'td[data-signal="prominence"]')} == {"+0.00"}
    assert css(page, 'table.ranking td[data-signal="usefulness"]')  # a column per term
    (meter,) = css(page, ".block-size meter")
    block = css(page, "pre.block")[0].text
    assert "## Engineering Memory" in block
    assert meter.get_attribute("max") == "10000" and int(meter.get_attribute("value")) > 0
    assert "of 10,000 characters" in css(page, ".block-size h2")[0].text
    shot(page, "06-next-session")


def test_the_audits_are_tables(page: Any, served: str) -> None:
    page.get(served.split("?")[0] + "audits")
    body = css(page, "main")[0].text
    assert "Operation(" not in body and "Usage(" not in body
    figures = [td.text for td in css(page, "table.figures td")]
    assert figures[2:] == ["demo-project", "feature/csv", "evolved", "5e55-10n", "1 add, 1 remove",
                           "1", "8,123", "412", "$0.0102", "claude-haiku-4-5"]  # fmt: skip
    ops = [tr.text for tr in css(page, "table.operations tr.op")]
    assert ops[0].startswith("add") and "a convention the session settled" in ops[0]
    assert ops[1].startswith("remove") and "no longer holds" in ops[1]
    shot(page, "09-audits")


def test_entry_names_wrap_never_cut(page: Any, served: str) -> None:
    page.get(served.split("?")[0] + "?q=billing+systems+csv")
    link = next(a for a in css(page, "a.entry-link") if a.text.startswith("Open every CSV"))
    assert link.text.replace("\n", " ") == LONG_NAME  # the whole name, on several lines
    assert link.size["height"] > 1.5 * float(link.value_of_css_property("line-height")[:-2])
    shot(page, "10-long-name")


def test_without_the_token_the_page_is_refused(served: str) -> None:
    driver = browser()
    try:
        driver.get(served.split("?")[0])
        body = css(driver, "body")[0].text
        assert body.startswith("refused: open the address memlog ui printed")
        assert not css(driver, "tr.entry")
        shot(driver, "07-refused-without-token")
    finally:
        driver.quit()


def test_a_foreign_host_name_is_refused(served: str) -> None:
    """DNS rebinding: another name resolving to 127.0.0.1 gets nothing, token or not."""
    driver = browser(f"--host-resolver-rules=MAP {FOREIGN} 127.0.0.1")
    try:
        driver.get(served.replace("127.0.0.1", FOREIGN))
        body = css(driver, "body")[0].text
        assert body.startswith("refused: this page answers only to its own address")
        shot(driver, "08-refused-foreign-host")
    finally:
        driver.quit()
