"""The page through Starlette's test client: the guard, every view, time travel, escaping."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from memlog.commands.cli import cli
from memlog.eventlog.events import (
    Labelled,
    MemoryEvolved,
    Observed,
    Operation,
    Promoted,
    Recalled,
    Reembedded,
    Retired,
    SessionPending,
    SessionProgress,
    Superseded,
    Usage,
    content_hash,
)
from memlog.eventlog.log import EventLog
from memlog.ui.app import create_app
from memlog.workspace import Workspace

PORT = 48123
TOKEN = "t0ken-for-tests"
HOST = f"127.0.0.1:{PORT}"
OLD = "Retry network calls with a fixed delay"
NEW = "Retry network calls with exponential backoff and jitter"
EVIL = "<script>alert('x')</script> & friends"


def seed(home: Path) -> dict[str, str]:
    log = EventLog(home)
    log.append([
        Observed(name="Fixed delay retries", description=OLD, category="anti-patterns",
                 project="alpha", source="retro"),
        Observed(name=EVIL, description="Escape every memory's text in HTML",
                 category="heuristics", project="beta"),
        Observed(name="Parser samples", description="Read real samples before writing a parser",
                 category="patterns", project="alpha", source="import"),
    ])  # fmt: skip
    old, evil = content_hash(OLD), content_hash("Escape every memory's text in HTML")
    log.append([Promoted(entry_id=old, reason="universal")])
    log.append([Recalled(ids=(old, evil), project="alpha", mode="semantic")])
    log.append([Labelled(entry_id=old, keywords=("retry", "network", "delay"), provider="test")])
    log.append([Reembedded(entry_id=old, provider="hashing", model="m", dimensions=1,
                           vector=b"\x00\x00\x80?")])  # fmt: skip
    log.append([Observed(name="Backoff retries", description=NEW, category="anti-patterns",
                         project="alpha")])  # fmt: skip
    log.append([Superseded(entry_id=old, by=content_hash(NEW), reason="backoff is better")])
    log.append([Retired(entry_id=evil, reason="superseded by the escaping tests")])
    return {"old": old, "new": content_hash(NEW), "evil": evil}


@pytest.fixture
def ids(memlog_home: Path) -> dict[str, str]:
    return seed(memlog_home)


@pytest.fixture
def client(memlog_home: Path, tmp_path: Path) -> Iterator[TestClient]:
    ws = Workspace.open(tmp_path)
    app = create_app(ws, TOKEN, PORT, tmp_path / "snapshots")
    with TestClient(app, base_url=f"http://{HOST}", follow_redirects=False) as http:
        http.cookies.set(f"memlog_ui_{PORT}", TOKEN)
        yield http


def html_unescape(html: str) -> str:
    import html as module

    return module.unescape(html)


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# -- the guard ---------------------------------------------------------------------------------


def test_the_token_opens_the_page_once_and_a_cookie_keeps_it(memlog_home: Path) -> None:
    app = create_app(Workspace.open(memlog_home.parent), TOKEN, PORT, memlog_home.parent / "s")
    with TestClient(app, base_url=f"http://{HOST}", follow_redirects=False) as http:
        assert http.get("/").status_code == 403
        assert http.get("/", params={"token": "wrong"}).status_code == 403
        entered = http.get("/log", params={"token": TOKEN, "type": "entry.observed"})
        assert entered.status_code == 303
        assert entered.headers["location"] == "/log?type=entry.observed"
        cookie = entered.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert http.get("/log").status_code == 200  # the cookie carries the token now


@pytest.mark.parametrize(
    "headers",
    [
        {"host": f"evil.example:{PORT}"},
        {"host": "127.0.0.1:9999"},
        {"origin": "http://evil.example"},
        {"sec-fetch-site": "cross-site"},
    ],
    ids=["foreign-host", "other-port", "other-origin", "cross-site"],
)
def test_requests_from_elsewhere_are_refused(client: TestClient, headers: dict[str, str]) -> None:
    answer = client.get("/", headers=headers)
    assert answer.status_code == 403 and answer.text.startswith("refused")
    assert "access-control-allow-origin" not in answer.headers


def test_the_page_is_read_only(client: TestClient) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        answer = client.request(method, "/")
        assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD"


def test_every_answer_forbids_scripts_framing_and_caching(client: TestClient) -> None:
    answer = client.get("/")
    assert answer.status_code == 200
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert "frame-ancestors 'none'" in policy and answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["cache-control"] == "no-store"
    assert "access-control-allow-origin" not in answer.headers
    assert client.get("/static/style.css").status_code == 200


# -- entries -----------------------------------------------------------------------------------


def test_the_list_filters_and_escapes(client: TestClient, ids: dict[str, str]) -> None:
    page = client.get("/").text
    assert "2 entries" in text(page)  # live ones: the retired and the superseded are not
    assert "<script>alert" not in page and "&lt;script&gt;alert" not in page
    everything = client.get("/", params={"status": "any"}).text
    assert "4 entries" in text(everything) and "&lt;script&gt;alert(&#39;x&#39;)" in everything
    retired = text(client.get("/", params={"status": "retired"}).text)
    assert "1 entry" in retired and "friends" in retired
    alpha = text(client.get("/", params={"project": "alpha", "category": "patterns"}).text)
    assert "1 entry" in alpha and "Parser samples" in alpha
    imported = text(client.get("/", params={"source": "import", "status": "any"}).text)
    assert "Parser samples" in imported and "Backoff" not in imported
    branch = text(client.get("/", params={"branch": "main"}).text)
    assert "0 entries" in branch


def test_a_query_is_ranked_as_the_hook_ranks(client: TestClient, ids: dict[str, str]) -> None:
    page = client.get("/", params={"q": "retry network backoff"}).text
    assert "ranked for “retry network backoff”" in page
    assert "vector matches" in page and re.search(r'class="num" title="[^"]*final=', page)
    assert text(page).index("Backoff retries") < text(page).index("Parser samples")


def test_an_entry_shows_its_timeline_and_lineage(client: TestClient, ids: dict[str, str]) -> None:
    page = client.get(f"/entry/{ids['old'][:8]}").text
    flat = text(page)
    for kind in ("entry.observed", "entry.promoted", "entry.recalled", "entry.labelled",
                 "entry.reembedded", "entry.superseded"):  # fmt: skip
        assert kind in flat
    assert "Replaced by: Backoff retries" in flat and "backoff is better" in flat
    newer = text(client.get(f"/entry/{ids['new']}").text)
    assert "Replaces: Fixed delay retries" in newer
    retired = text(client.get(f"/entry/{ids['evil']}").text)
    assert "entry.retired" in retired and "superseded by the escaping tests" in retired
    assert client.get("/entry/ffffffffffff").status_code == 404
    assert client.get("/entry/not-hex").status_code == 400


# -- time travel --------------------------------------------------------------------------------


def test_the_views_as_of_a_past_point(client: TestClient, ids: dict[str, str]) -> None:
    before_retire = text(client.get("/", params={"as_of": "9", "status": "any"}).text)
    assert "Time travel: the views as of 9" in before_retire and "4 entries" in before_retire
    live_then = text(client.get("/", params={"as_of": "9"}).text)
    assert "friends" in live_then  # retired only at seq 10
    at_start = text(client.get("/", params={"as_of": "3", "status": "any"}).text)
    assert "3 entries" in at_start and "Backoff" not in at_start
    entry = text(client.get(f"/entry/{ids['old']}", params={"as_of": "4"}).text)
    assert "entry.promoted" in entry and "entry.recalled" not in entry  # seq 5 came later
    assert "as_of=4" in client.get("/", params={"as_of": "4"}).text  # links keep the point
    assert "as of 2020-01-01" in text(client.get("/", params={"as_of": "2020-01-01"}).text)
    assert client.get("/", params={"as_of": "yesterday"}).status_code == 400


# -- the next session, the log, files ------------------------------------------------------------


def test_what_the_next_session_would_get(
    client: TestClient, ids: dict[str, str], tmp_path: Path, memlog_home: Path
) -> None:
    project = tmp_path / "alpha"
    (project / ".git").mkdir(parents=True)
    html = client.get("/next", params={"dir": str(project)}).text
    page = text(html)
    assert "## Engineering Memory (from knowledge bank)" in page
    # the signals are labelled columns, with the weights in force
    headings = re.findall(r'<th class="signal" title="[^"]+">([a-z]+)<span class="weight"> ×', html)
    assert headings == ["lexical", "vector", "prominence", "neighbours", "usefulness"]
    # best first
    scores = [float(v) for v in re.findall(r'<td class="num score">(-?[0-9.]+)</td>', html)]
    assert len(scores) >= 2 and scores == sorted(scores, reverse=True)
    names = re.findall(r'<td class="name"><a href="[^"]+">([^<]+)</a>', html)
    assert names[0] == "Backoff retries"
    # the block's size against Claude Code's inline cap
    block = re.search(r'<pre class="block">(.*?)</pre>', html, re.S)
    assert block is not None
    size = len(html_unescape(block.group(1)))
    assert f"The block: {size:,} of 10,000 characters" in page
    assert '<meter min="0" max="10000"' in html and f'value="{size}"' in html
    recalls = [r for r in EventLog(memlog_home).read() if isinstance(r.event, Recalled)]
    assert len(recalls) == 1  # shown, never recorded
    missing = client.get("/next", params={"dir": str(tmp_path / "nowhere")})
    assert missing.status_code == 400 and "is not a directory" in missing.text


def test_the_next_session_agrees_with_inject_project_root(
    client: TestClient, ids: dict[str, str], tmp_path: Path
) -> None:
    """The Quick start prints `memlog inject --project-root DIR`: the page shows that block,
    for a project inside another repository too (the directory given is the project root)."""
    outer = tmp_path / "outer"
    (outer / ".git").mkdir(parents=True)
    project = outer / "examples" / "alpha"
    feature = project / "docs" / "features" / "001-parser"  # its active feature: the query
    feature.mkdir(parents=True)
    (feature / ".meta.json").write_text('{"id": "001", "slug": "parser", "status": "active"}')
    (feature / "spec.md").write_text("# Spec: parser\n\nRead real samples before the parser.\n")
    html = client.get("/next", params={"dir": str(project), "limit": "1"}).text
    block = re.search(r'<pre class="block">(.*?)</pre>', html, re.S)
    assert block is not None and "Parser samples" in block.group(1)
    printed = CliRunner().invoke(cli, ["inject", "--project-root", str(project), "--limit", "1"])
    assert printed.exit_code == 0, printed.output
    assert html_unescape(block.group(1)).rstrip("\n") == printed.output.rstrip("\n")


def test_the_next_session_says_its_size_and_what_it_leaves_out(
    client: TestClient, ids: dict[str, str], tmp_path: Path, memlog_home: Path
) -> None:
    project = tmp_path / "alpha"
    (project / ".git").mkdir(parents=True)
    (project / "CLAUDE.md").write_text(f"# Alpha\n\n- {NEW}\n")  # already in the context
    EventLog(memlog_home).append([
        Observed(name=f"Filler {i}", description=f"Filler lesson {i}", reasoning="word " * 300,
                 category="patterns", project="alpha")
        for i in range(20)
    ])  # fmt: skip
    page = text(client.get("/next", params={"dir": str(project)}).text)
    assert "memory_injection_max_chars allows 9,000: entries are condensed, then left out" in page
    found = re.search(r"The block: ([\d,]+) of 10,000 characters", page)
    assert found is not None and 0 < int(found.group(1).replace(",", "")) <= 9000
    assert "Left out, and why" in page
    assert "Backoff retries anti-patterns in a CLAUDE.md Claude Code loads" in page
    assert "no room: the block is at memory_injection_max_chars" in page
    assert "(condensed to fit: the block shortens it, its whole text is here)" in page


def test_the_next_session_shows_the_terms_that_make_the_score(
    client: TestClient, ids: dict[str, str], tmp_path: Path
) -> None:
    """Each column is the signal times its weight: the terms add up to the score, and the
    prominence, weighed 0 by default, adds nothing and draws no bar however prominent."""
    project = tmp_path / "alpha"
    (project / ".git").mkdir(parents=True)
    html = client.get("/next", params={"dir": str(project)}).text
    rows = re.findall(r'<tr class="chosen">(.*?)</tr>', html, re.S)
    assert len(rows) >= 2
    for row in rows:
        score = float(re.findall(r'<td class="num score">(-?[0-9.]+)</td>', row)[0])
        cells = dict(re.findall(
            r'data-signal="([a-z]+)">\s*<span class="value">([-+][0-9.]+)</span>', row
        ))  # fmt: skip
        assert set(cells) == {"lexical", "vector", "prominence", "neighbours", "usefulness"}
        assert abs(sum(map(float, cells.values())) - score) < 0.03, (cells, score)
        prominence = re.search(r'data-signal="prominence">(.*?)</td>', row, re.S)
        assert prominence is not None and cells["prominence"] == "+0.00"
        assert 'class="bar' not in prominence.group(1)  # weighed 0: no bar
        assert re.search(r"z [-+][0-9.]+, raw [0-9.]+", prominence.group(1))  # still shown
    assert '<span class="weight"> ×0.00</span>' in html
    # and the lessons in full: each chosen entry's description, uncut
    assert NEW in text(html_unescape(html))


def test_events_read_as_words_not_python(
    client: TestClient, ids: dict[str, str], memlog_home: Path
) -> None:
    """No ``Operation(…)`` or ``Usage(…)`` anywhere, a vector is its space and model, an
    audit's operations are listed under it, a call-less usage is left out, nothing is cut."""
    reason = "contradicted by the session, which showed that the retry loop never backs off " * 2
    operations = (Operation(op="remove", entry_id=ids["new"], reason=reason.strip()),)
    usage = Usage(provider="anthropic", model="claude-haiku-4-5", calls=2, tokens_in=1200,
                  tokens_out=300, cost_micros=2700)  # fmt: skip
    EventLog(memlog_home).append([
        MemoryEvolved(project="alpha", branch="feature/x", mode="evolved", session_id="s-9",
                      operations=operations, usage=usage),
        SessionProgress(session_id="s-9", status="extracted", offset=10, reason="1 items",
                        turns=4),
        Reembedded(entry_id=ids["new"], provider="local", model="all-MiniLM-L6-v2",
                   dimensions=3, vector=b"\x00" * 12),
    ])  # fmt: skip
    for html in (client.get("/log").text, client.get(f"/entry/{ids['new']}").text):
        page = text(html_unescape(html))
        assert "Operation(" not in page and "Usage(" not in page and "floats" not in page
        assert (
            "feature/x in alpha: evolved; 1 remove; session s-9; 2 calls, 1,200 tokens in, "
            "300 out, $0.0027 (claude-haiku-4-5)"
        ) in page
        assert f"remove Backoff retries — {reason.strip()}" in page or (
            f"remove {ids['new'][:8]} — {reason.strip()}" in page
        )
        assert "a vector in local/all-MiniLM-L6-v2, 3 dimensions (stored as f32)" in page
        assert "…" not in page
    progress = text(client.get("/log", params={"type": "session.progress"}).text)
    assert "session s-9 extracted; 1 items; 4 turns read" in progress and "calls" not in progress


def test_the_audits_count_the_cost_as_stats_does(
    client: TestClient, ids: dict[str, str], memlog_home: Path
) -> None:
    """The page's costs are memlog stats' lines, every call once: an audit's and those of a
    session that learned nothing (its progress carries them)."""
    taught = Usage(provider="anthropic", model="claude-haiku-4-5", calls=1, tokens_in=100,
                   tokens_out=20, cost_micros=200)  # fmt: skip
    operations = (Operation(op="remove", entry_id=ids["new"], reason="wrong"),)
    EventLog(memlog_home).append([
        SessionPending(session_id="s-1", project="alpha"),
        MemoryEvolved(project="alpha", branch="b", mode="evolved", session_id="s-1",
                      operations=operations, usage=taught),
        SessionProgress(session_id="s-1", status="extracted", offset=1),
        SessionPending(session_id="s-2", project="alpha"),
        SessionProgress(session_id="s-2", status="extracted", offset=1, usage=taught),
    ])  # fmt: skip
    page = text(html_unescape(client.get("/audits").text))
    stats = CliRunner().invoke(cli, ["stats"]).output
    said = [line.strip() for line in stats.splitlines() if line.strip().startswith("cost ")]
    assert said == ["cost today: $0.0004 of $0.50 (2 calls, 200 tokens in, 40 out)",
                    "cost in total: $0.0004 (2 calls, 200 tokens in, 40 out)"]  # fmt: skip
    for line in said:
        assert line[0].upper() + line[1:] in page
    assert page.count("$0.0002") == 1  # the one audit's own


def rows(html: str) -> list[str]:
    """The event types of a log table's rows, in order."""
    return re.findall(r"<td>((?:entry|memory)\.[a-z]+)</td>", html)


def test_the_log_pages_and_filters(client: TestClient, ids: dict[str, str]) -> None:
    everything = rows(client.get("/log").text)
    assert everything[0] == "entry.retired" and everything[-1] == "entry.observed"  # newest first
    assert len(everything) == 10
    assert rows(client.get("/log", params={"type": "entry.superseded"}).text) == [
        "entry.superseded"
    ]
    assert rows(client.get("/log", params={"before": "3"}).text) == ["entry.observed"] * 2
    assert client.get("/log", params={"type": "nope"}).status_code == 400


def test_files_branches_and_audits(client: TestClient, ids: dict[str, str]) -> None:
    files = client.get("/files").text
    assert "anti-patterns.md" in files and "projects/alpha/anti-patterns.md" in files
    shown = text(client.get("/files", params={"path": "anti-patterns.md"}).text)
    assert "# Global Anti-Patterns" in shown and "Backoff retries" not in shown
    assert client.get("/files", params={"path": "../../etc/passwd"}).status_code == 400
    assert "No branch memory yet" in text(client.get("/branches").text)
    assert "no extraction has run yet" in text(client.get("/audits").text)


def test_extraction_audits_and_branch_memory_once_they_exist(
    client: TestClient, ids: dict[str, str], memlog_home: Path
) -> None:
    extracted = Observed(name="Formatter", description="Run the formatter before commits",
                         category="patterns", source="extraction", section="conventions",
                         project="alpha", branch="feature/x")  # fmt: skip
    operations = (
        Operation(op="add", entry_id=extracted.entry_id, section="conventions",
                  text="Run the formatter before commits", reason="new convention"),
        Operation(op="remove", entry_id=ids["new"], reason="contradicted by the session"),
        Operation(op="keep", entry_id=ids["old"]),
    )  # fmt: skip
    usage = Usage(provider="claude-cli", model="claude-haiku-4-5", calls=1, tokens_in=12345,
                  tokens_out=678, cost_micros=15735)  # fmt: skip
    audit = MemoryEvolved(project="alpha", branch="feature/x", mode="evolved", session_id="s-9",
                          note="first extraction", operations=operations, usage=usage)  # fmt: skip
    EventLog(memlog_home).append([extracted, audit])
    html = client.get("/audits").text
    page = text(html)
    assert "Operation(" not in html and "Usage(" not in html  # no Python reprs
    figures = re.search(r'<table class="figures">.*?</table>', html, re.S)
    assert figures is not None
    cells = [text(c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", figures.group(0), re.S)]
    assert cells[2:] == ["alpha", "feature/x", "evolved", "s-9", "1 add, 1 remove, 1 keep", "1",
                         "12,345", "678", "$0.0157", "claude-haiku-4-5"]  # fmt: skip
    ops = re.findall(r'<tr class="op op-([a-z]+)">(.*?)</tr>', html, re.S)
    assert [kind for kind, _ in ops] == ["add", "remove", "keep"]
    assert "Backoff retries" in text(ops[1][1])  # the entry by its name, not its id
    assert "contradicted by the session" in page and "first extraction" in page
    rel = "projects/alpha/branches/feature_x.md"
    assert rel in text(client.get("/branches").text)
    shown = text(client.get("/branches", params={"path": rel}).text)
    assert "# Branch Memory: feature/x" in shown and "Run the formatter before commits" in shown
    assert rel not in text(client.get("/files").text)  # branch memory has its own page
    on_branch = text(client.get("/", params={"branch": "feature/x"}).text)
    assert "1 entry" in on_branch and "Formatter" in on_branch


def test_an_empty_home(client: TestClient) -> None:
    assert "No memories yet" in text(client.get("/").text)
    assert "No events" in text(client.get("/log").text)


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("//evil.example/", "/evil.example/"),
        ("/\\evil.example/", "/evil.example/"),
        ("///evil.example/x", "/evil.example/x"),
        ("/log%0d%0aSet-Cookie:%20x=1", "/log%0D%0ASet-Cookie:%20x=1"),
    ],
)
def test_no_redirect_leaves_the_pages_origin(memlog_home: Path, path: str, location: str) -> None:
    app = create_app(Workspace.open(memlog_home.parent), TOKEN, PORT, memlog_home.parent / "s")
    with TestClient(app, base_url=f"http://{HOST}", follow_redirects=False) as http:
        answer = http.get(f"http://{HOST}{path}?token={TOKEN}")
        assert answer.status_code == 303
        assert answer.headers["location"] == location
        assert [v for k, v in answer.headers.multi_items() if k == "set-cookie"] == [
            f"memlog_ui_{PORT}={TOKEN}; Path=/; HttpOnly; SameSite=Strict"
        ]  # no header was slipped in


def test_a_redaction_removes_the_pages_snapshots_and_it_builds_them_again(
    memlog_home: Path, tmp_path: Path
) -> None:
    secret = "Zebra-Hunter2-Staging"
    log = EventLog(memlog_home)
    log.append([Observed(name="Staging", description=f"Log in with {secret} there.",
                         category="patterns")])  # fmt: skip
    log.append([Observed(name="Other", description="Pin the CI image.", category="patterns")])
    ws = Workspace.open(tmp_path)
    snapshots = tmp_path / "memlog-ui-test"
    app = create_app(ws, TOKEN, PORT, snapshots)
    with TestClient(app, base_url=f"http://{HOST}", follow_redirects=False) as http:
        http.cookies.set(f"memlog_ui_{PORT}", TOKEN)
        assert secret in http.get("/", params={"as_of": "1"}).text
        copies = [p for p in snapshots.rglob("*") if p.is_file() and secret.encode() in
                  p.read_bytes()]  # fmt: skip
        assert copies  # the snapshot holds it
        done = CliRunner().invoke(cli, ["redact", "--match", secret, "--reason", "a password"])
        assert done.exit_code == 0, done.output
        assert "snapshots a running memlog ui had built" in done.output
        assert not [p for p in snapshots.rglob("*") if p.is_file() and secret.encode() in
                    p.read_bytes()]  # fmt: skip
        again = http.get("/", params={"as_of": "1"}).text
        assert "Staging" in again and secret not in again


@pytest.mark.slow
def test_sigterm_removes_the_pages_copies_as_ctrl_c_does(memlog_home: Path, tmp_path: Path) -> None:
    EventLog(memlog_home).append([Observed(name="a", description="b", category="facts")])
    temp = tmp_path / "tmp"
    temp.mkdir()
    for sig in (signal.SIGTERM, signal.SIGINT):
        env = {**os.environ, "TMPDIR": str(temp), "MEMLOG_HOME": str(memlog_home)}
        page = subprocess.Popen([sys.executable, "-m", "memlog", "ui"], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
        assert page.stdout is not None
        address = page.stdout.readline().split()[-1]
        opened = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        assert opened.open(address).status == 200
        assert opened.open(address.split("?")[0] + "?as_of=1").status == 200
        assert list(temp.glob("memlog-ui-*/as-of-*"))
        page.send_signal(sig)
        page.wait(timeout=30)
        page.stdout.close()
        assert not list(temp.iterdir()), (sig, list(temp.rglob("*")))
        assert not [p for p in (memlog_home / ".pages").iterdir() if p.name.isdigit()]


def test_the_next_session_shows_the_stale_lessons(
    client: TestClient, memlog_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "alpha"
    project.mkdir()
    (project / "kept.py").write_text("x = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t",
                        *args], check=True, capture_output=True)  # fmt: skip
    EventLog(memlog_home).append([
        Observed(name="Gone module", description="Never import `lib/gone.py` twice.",
                 category="anti-patterns", project="alpha"),
        Observed(name="Kept module", description="Keep `kept.py` small.", category="patterns",
                 project="alpha"),
    ])  # fmt: skip
    html = client.get("/next", params={"dir": str(project)}).text
    assert 'class="stale">stale: refers to lib/gone.py, gone</span>' in html
    section = html.split('id="stale"', 1)[1].split("</table>", 1)[0]
    assert "Gone module" in section and "lib/gone.py" in section and "Kept module" not in section
