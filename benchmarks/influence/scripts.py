"""The scripted Claude Code sessions of the influence benchmark: one project per feature,
the prompts a person types, and what the assistant answers at each call to the API.

Each session's project holds one active feature (``docs/features/<id>-<slug>/``), so the
SessionStart hook injects the lessons of ``corpora/s4-tentopics-150`` that memlog ranks
for it.  The assistant's calls are written as a model would work on the feature: some
lessons it follows in what it writes and runs, some it goes against, most it never
touches, and some it mentions in passing without acting on them.  What it did with each
lesson it received is not written down here: the labels (``labels.jsonl``) were made by
reading the transcripts, pooled and shuffled (``label_sheet.py``).

``{root}`` in a tool's input is the project's folder.
"""

from __future__ import annotations

from typing import Any

Block = dict[str, Any]


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def write(path: str, content: str) -> Block:
    return {"type": "tool_use", "name": "Write",
            "input": {"file_path": "{root}/" + path, "content": content}}  # fmt: skip


def bash(command: str, description: str) -> Block:
    return {"type": "tool_use", "name": "Bash",
            "input": {"command": command, "description": description}}  # fmt: skip


CHECK = "python3 -m py_compile {files} && git add -A && git status --short"

#: feature slug -> (number, title, the spec's prose)
SPECS: dict[str, tuple[str, str, str]] = {
    "webhook-retries": ("012", "Webhook delivery retries",
        "The webhook worker delivers invoice events to customer endpoints. Failed deliveries "
        "are retried by the background job runner with backoff, and deliveries that keep "
        "failing are parked for an operator. Each delivery carries an idempotency key so "
        "receivers can drop duplicates."),
    "ledger-sync-command": ("021", "ledger sync command",
        "A new `ledger sync` subcommand pulls transactions for every connected bank account "
        "and reports per-account results. It runs from cron as well as by hand, prints a "
        "table for people and JSON for scripts, and must report partial failures through "
        "its exit code."),
    "rates-cache": ("033", "Exchange rate cache",
        "Exchange rates are fetched from the provider on every invoice render, which is "
        "slow and rate limited. Cache the rates per tenant and currency pair, refresh them "
        "in the background, and never serve rates older than the tolerated staleness."),
    "statement-import": ("044", "Bank statement CSV import",
        "Users upload CSV bank statements exported by their bank. Parse the file with "
        "delimiter and encoding detection, map the columns, show a preview, and import "
        "valid rows while reporting the bad ones."),
    "stabilise-webhook-tests": ("052", "Stabilise the webhook test suite",
        "The webhook tests fail about once a day on the shared CI runners. Find the "
        "sources of flakiness (timing, shared state, order dependence) and make the suite "
        "deterministic."),
    "payment-terms-column": ("061", "Payment terms column",
        "Invoices get a payment_terms column replacing the free-text terms field. Add the "
        "column on the large invoices table without downtime, backfill it from the old "
        "field, and switch the code over."),
    "structured-logging": ("070", "Structured logging for the API",
        "Replace the ad hoc print-style logging of the API with structured JSON logs, "
        "request ids that cross into the worker, and metrics for request duration and "
        "errors."),
    "token-rotation": ("081", "API token rotation",
        "Customers' API tokens never expire today. Add token expiry and rotation, keep "
        "signing secrets out of the repository, and make the CI deploy use short-lived "
        "credentials."),
}  # fmt: skip

WORKER = '''\
"""Deliver webhook events, retrying failures."""
import random
import time

MAX_ATTEMPTS = 8
BASE_SECONDS = 2.0
CAP_SECONDS = 600.0


def backoff(attempt: int) -> float:
    """Exponential backoff with full jitter, capped."""
    return random.uniform(0, min(CAP_SECONDS, BASE_SECONDS * 2 ** attempt))


def deliver(event, send, sent_markers, dead_letter, alert):
    key = f"{event['invoice_id']}:{event['type']}"
    if key in sent_markers:  # delivered before: a retry must not send it twice
        return "duplicate"
    for attempt in range(MAX_ATTEMPTS):
        try:
            send(event, headers={"Idempotency-Key": key})
        except ConnectionError:
            time.sleep(backoff(attempt))
            continue
        sent_markers.add(key)
        return "delivered"
    dead_letter.append(event)
    alert(f"webhook {key} parked after {MAX_ATTEMPTS} attempts")
    return "parked"
'''

SYNC = '''\
"""ledger sync: pull transactions for every connected account."""
import json
import sys

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3


def sync_all(accounts, pull, as_json):
    results = []
    for account in accounts:
        print(f"syncing {account}...", file=sys.stderr)
        try:
            count = pull(account)
            results.append({"account": account, "status": "ok", "transactions": count})
        except Exception:
            print("sync failed")
            results.append({"account": account, "status": "failed", "transactions": 0})
    if as_json or not sys.stdout.isatty():
        print(json.dumps(results))
    else:
        for row in results:
            print(f"{row['account']:<20} {row['status']:<8} {row['transactions']:>6}")
    failed = sum(1 for r in results if r["status"] == "failed")
    if failed and failed < len(results):
        return EXIT_PARTIAL
    return EXIT_ERROR if failed else EXIT_OK
'''

RATES = '''\
"""Exchange rates, cached per tenant and currency pair."""
import random
import threading
import time

# Tolerated staleness agreed with finance: rates may be 15 minutes old, never more.
RATE_TTL_SECONDS = 15 * 60

_cache: dict[str, tuple[float, float]] = {}
_locks: dict[str, threading.Lock] = {}


def cache_key(tenant_id: str, base: str, quote: str) -> str:
    return f"rates:v1:{tenant_id}:{base}{quote}"


def get_rate(tenant_id, base, quote, fetch):
    key = cache_key(tenant_id, base, quote)
    now = time.time()
    found = _cache.get(key)
    if found and found[1] > now:
        return found[0]
    lock = _locks.setdefault(key, threading.Lock())
    with lock:  # one caller refetches, the others wait for its answer
        found = _cache.get(key)
        if found and found[1] > now:
            return found[0]
        rate = fetch(base, quote)
        ttl = RATE_TTL_SECONDS * random.uniform(0.9, 1.0)  # jittered expiry
        _cache[key] = (rate, now + ttl)
        return rate
'''

RATES_VIEW = '''\
"""GET /rates/{pair}: the cached rate with validators."""
import hashlib


def rates_view(request, tenant_id, pair, get_rate):
    rate = get_rate(tenant_id, pair[:3], pair[3:])
    body = f'{{"pair": "{pair}", "rate": {rate}}}'
    etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
    headers = {"ETag": etag, "Cache-Control": "private, max-age=0, must-revalidate"}
    if request.headers.get("If-None-Match") == etag:
        return 304, headers, ""
    return 200, headers, body
'''

IMPORTER = '''\
"""Import CSV bank statements."""
import csv
import io

from charset_normalizer import from_bytes


def decode(raw: bytes) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        best = from_bytes(raw).best()
        return str(best), best.encoding


def delimiter(text: str) -> str:
    sample = "\\n".join(text.splitlines()[:50])
    return csv.Sniffer().sniff(sample, delimiters=",;\\t|").delimiter


def import_statement(path, save_row):
    with open(path, "rb") as handle:
        raw = handle.read()
    text, encoding = decode(raw)
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter(text))
    errors = []
    valid = []
    for number, row in enumerate(reader, start=2):
        try:
            valid.append({"date": row["Date"], "amount": float(row["Amount"].replace(",", "."))})
        except (KeyError, ValueError) as exc:
            errors.append((number, str(exc)))
    for row in valid:
        save_row(row)
    return {"encoding": encoding, "imported": len(valid), "errors": errors}
'''

TESTS = '''\
"""Webhook worker tests, made deterministic."""
import datetime

import pytest

from worker import deliver


class FixedClock:
    def __init__(self, now):
        self.now = now

    def today(self):
        return self.now.date()


def wait_until(condition, timeout=10.0, step=0.05):
    import time
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(step)


@pytest.mark.flaky(reruns=3)
def test_parked_events_are_alerted(queue):
    alerts = []
    deliver({"invoice_id": 7, "type": "paid"}, failing_send, set(), queue, alerts.append)
    wait_until(lambda: alerts)
    assert sorted(e["invoice_id"] for e in queue) == [7]


def test_due_date_uses_the_injected_clock():
    clock = FixedClock(datetime.datetime(2024, 3, 1, 23, 30, tzinfo=datetime.UTC))
    assert clock.today() == datetime.date(2024, 3, 1)
'''

MIGRATION = '''\
"""Expand: payment_terms, nullable, then backfill in batches (contract comes later)."""
from alembic import op
import sqlalchemy as sa


def upgrade():
    op.add_column("invoices", sa.Column("payment_terms", sa.Integer(), nullable=True))
    op.execute(
        "ALTER TABLE invoices ADD CONSTRAINT payment_terms_not_null "
        "CHECK (payment_terms IS NOT NULL) NOT VALID"
    )


def downgrade():
    op.drop_constraint("payment_terms_not_null", "invoices")
    op.drop_column("invoices", "payment_terms")
'''

BACKFILL = '''\
"""Backfill invoices.payment_terms from the free-text terms, 5,000 rows at a time."""
BATCH = 5000
SQL = """
UPDATE invoices SET payment_terms = COALESCE(NULLIF(regexp_replace(terms, '\\\\D', '', 'g'), '')::int, 30)
WHERE id IN (SELECT id FROM invoices WHERE payment_terms IS NULL LIMIT %s)
"""


def backfill(connection):
    while True:
        with connection.cursor() as cursor:
            cursor.execute(SQL, (BATCH,))
            if cursor.rowcount == 0:
                break
        connection.commit()
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE invoices VALIDATE CONSTRAINT payment_terms_not_null")
'''  # noqa: E501 - the file as the session wrote it

LOGGING = '''\
"""JSON logs with request context, request ids, and per-route metrics."""
import time
import uuid

import structlog

log = structlog.get_logger()


class RequestContext:
    def __init__(self, app, metrics):
        self.app, self.metrics = app, metrics

    def __call__(self, request):
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        structlog.contextvars.bind_contextvars(
            request_id=request_id, tenant_id=request.tenant_id, user_id=request.user_id
        )
        log.info("request body", body=request.json)
        started = time.perf_counter()
        try:
            response = self.app(request)
        except Exception:
            self.metrics.errors.labels(route=request.route_template).inc()
            raise
        finally:
            self.metrics.duration.labels(route=request.route_template).observe(
                time.perf_counter() - started
            )
        response.headers["X-Request-ID"] = request_id
        return response


def enqueue(queue, job, payload):
    request_id = structlog.contextvars.get_contextvars().get("request_id")
    queue.put(job, payload, metadata={"request_id": request_id, "job_id": uuid.uuid4().hex})
'''

TOKENS = '''\
"""API tokens with expiry and rotation."""
import datetime
import secrets

ACCESS_LIFETIME = datetime.timedelta(minutes=15)
REFRESH_LIFETIME = datetime.timedelta(days=30)


def signing_key(vault):
    """The signing key, read from the secrets manager when the service starts."""
    return vault.read("api/signing-key")


def issue(store, user_id, now, family=None):
    family = family or secrets.token_hex(8)
    access = secrets.token_urlsafe(32)
    refresh = secrets.token_urlsafe(32)
    store.save(access, user_id, now + ACCESS_LIFETIME, family, kind="access")
    store.save(refresh, user_id, now + REFRESH_LIFETIME, family, kind="refresh")
    return access, refresh


def rotate(store, refresh, now):
    token = store.get(refresh)
    if token is None or token.used:  # reuse: the whole family is revoked
        store.revoke_family(token.family if token else None)
        raise PermissionError("refresh token reused")
    store.mark_used(refresh)
    return issue(store, token.user_id, now, token.family)
'''

DEPLOY = """\
name: deploy
on:
  push:
    branches: [main]
permissions:
  id-token: write
  contents: read
jobs:
  deploy:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: aws-actions/configure-aws-credentials@v4
        with:
          role-to-assume: arn:aws:iam::123456789012:role/deploy
          role-duration-seconds: 900
          aws-region: eu-west-1
      - run: ./deploy.sh
"""

#: session name -> (feature slug, runs); a run is (prompt, resume the previous run?, calls)
SESSIONS: dict[str, tuple[str, list[tuple[str, bool, list[list[Block]]]]]] = {
    "s01-webhook-retries": ("webhook-retries", [(
        "Implement the retrying webhook delivery in worker.py as the spec says.", False, [
            [text("I'll write the delivery loop. Before turning retries on I make the "
                  "delivery idempotent: each event gets a key from invoice id and event type, "
                  "a sent-marker is recorded after success and checked first, so a retry "
                  "after a timeout never sends the same webhook twice. Retries use "
                  "exponential backoff with full jitter, capped at 10 minutes and 8 "
                  "attempts; an event that exhausts them goes to the dead-letter list and "
                  "raises an alert for the operator."),
             write("worker.py", WORKER)],
            [bash(CHECK.format(files="worker.py"), "Check the module compiles and stage it")],
            [text("Done: `worker.py` delivers with an `Idempotency-Key` header, skips events "
                  "already marked sent, retries with jittered capped backoff (8 attempts) and "
                  "parks exhausted events in the dead-letter list with an alert. I left the "
                  "changelog alone; it gets written when we cut the release.")],
        ])]),
    "s02-ledger-sync": ("ledger-sync-command", [(
        "Add the ledger sync subcommand.", False, [
            [text("Writing `ledger/sync.py`. Progress lines go to stderr so stdout stays "
                  "clean for the result; the command prints a table on a terminal and JSON "
                  "when piped or with --json. Exit codes: 0 all synced, 1 all failed, 3 "
                  "when only some accounts failed, so cron can alert on partial failure."),
             write("ledger/sync.py", SYNC)],
            [bash(CHECK.format(files="ledger/sync.py"), "Compile and stage the command")],
            [text("The `ledger sync` command is in place. A failing account is reported as "
                  "`sync failed` and counted; I kept the error handling simple for now.")],
        ])]),
    "s03-rates-cache": ("rates-cache", [
        ("Build the exchange rate cache.", False, [
            [text("Caching rates in `rates.py`. Keys come from one `cache_key()` that takes "
                  "the tenant id, so no tenant can read another's entry. The TTL is the 15 "
                  "minutes finance said rates may be stale, written next to the constant. "
                  "Expiry is jittered and a per-key lock lets one caller refetch while the "
                  "others wait, so a hot pair never stampedes the provider."),
             write("rates.py", RATES)],
            [bash(CHECK.format(files="rates.py"), "Compile and stage the cache")],
            [text("The cache is in `rates.py`: tenant-scoped keys, a 15-minute TTL with "
                  "jitter, and a lock per key.")],
        ]),
        ("Should the rates endpoint send cache headers too?", True, [
            [text("Yes: the read endpoint returns a strong ETag and `Cache-Control: private, "
                  "max-age=0, must-revalidate`; a client sending `If-None-Match` gets a 304. "
                  "`private` because the response is per tenant."),
             write("rates_view.py", RATES_VIEW)],
            [bash(CHECK.format(files="rates_view.py"), "Compile and stage the view")],
            [text("Added `rates_view.py` with ETag revalidation.")],
        ]),
    ]),
    "s04-statement-import": ("statement-import", [(
        "Write the CSV statement importer.", False, [
            [text("The importer decodes strictly as UTF-8 first and falls back to the "
                  "encoding charset-normalizer detects, and reports which one it used. The "
                  "delimiter is sniffed from the first 50 lines, not the header alone. "
                  "Every row is validated and errors are collected with their row numbers; "
                  "the valid rows are still imported. Statements are small, so reading the "
                  "whole file into memory at once is fine here."),
             write("importer.py", IMPORTER)],
            [bash(CHECK.format(files="importer.py"), "Compile and stage the importer")],
            [text("`importer.py` imports the valid rows and returns the bad ones with their "
                  "line numbers, plus the encoding it detected.")],
        ])]),
    "s05-webhook-tests": ("stabilise-webhook-tests", [(
        "Make the webhook tests stop flaking.", False, [
            [text("Three sources of flakiness: a `time.sleep(2)` before asserting on the "
                  "alert, which I replace by polling with a deadline; a due-date assertion "
                  "computed from `date.today()`, now checked against an injected fixed "
                  "clock; and a comparison of queued events that depended on arrival order, "
                  "now compared sorted. The alert test still depends on the broker, so I "
                  "mark it to rerun up to three times."),
             write("tests/test_worker.py", TESTS)],
            [bash(CHECK.format(files="tests/test_worker.py"), "Compile and stage the tests")],
            [text("The webhook tests no longer sleep, no longer read the wall clock and no "
                  "longer depend on the order events arrive in; the broker test reruns up "
                  "to 3 times.")],
        ])]),
    "s06-payment-terms": ("payment-terms-column", [(
        "Add the payment_terms column and move the code to it.", False, [
            [text("This is an expand-contract change over three deploys. Expand: add "
                  "`payment_terms` nullable with a NOT VALID check constraint, so Postgres "
                  "does not rewrite the invoices table under an exclusive lock. Then a "
                  "batched backfill, then VALIDATE. The code switches reads after the "
                  "backfill; dropping the old `terms` field is a separate PR later."),
             write("migrations/0061_payment_terms.py", MIGRATION)],
            [write("scripts/backfill_payment_terms.py", BACKFILL)],
            [bash(CHECK.format(files="migrations/0061_payment_terms.py "
                               "scripts/backfill_payment_terms.py"),
                  "Compile and stage the migration and the backfill")],
            [text("Migration 0061 adds the nullable column and a NOT VALID constraint; the "
                  "backfill script fills it in batches of 5,000 and validates the constraint "
                  "at the end.")],
        ])]),
    "s07-structured-logging": ("structured-logging", [(
        "Switch the API to structured logging with request ids and metrics.", False, [
            [text("One middleware binds request_id, tenant_id and user_id into structlog's "
                  "context, so every JSON log line carries them; it records duration and "
                  "errors per route template for every endpoint. The request id comes from "
                  "`X-Request-ID` or is generated, is echoed in the response and is put into "
                  "the metadata of every job enqueued, so the worker logs carry it. For "
                  "debugging I also log each request body at info."),
             write("api/middleware.py", LOGGING)],
            [bash(CHECK.format(files="api/middleware.py"), "Compile and stage the middleware")],
            [text("Structured logging is in `api/middleware.py`.")],
        ])]),
    "s08-token-rotation": ("token-rotation", [(
        "Implement token expiry and rotation, and fix the deploy credentials.", False, [
            [text("Access tokens now live 15 minutes and refresh tokens 30 days; each "
                  "refresh rotates the pair, and a reused refresh token revokes its whole "
                  "family. The signing key is read from the vault at startup instead of the "
                  "committed settings file."),
             write("auth/tokens.py", TOKENS)],
            [text("The deploy workflow used a personal access token stored in CI secrets; "
                  "it now assumes the deploy role through OIDC for 15 minutes."),
             write(".github/workflows/deploy.yml", DEPLOY)],
            [bash(CHECK.format(files="auth/tokens.py"), "Compile and stage")],
            [text("Tokens expire and rotate with reuse detection, the key comes from the "
                  "vault, and CI deploys with short-lived OIDC credentials.")],
        ])]),
    "s09-rates-readme": ("rates-cache", [(
        "Fix the typo in the README title.", False, [
            [write("README.md", "# Exchange rates service\n\nServes cached exchange rates.\n")],
            [text("Fixed the title in README.md.")],
        ])]),
    "s10-import-question": ("statement-import", [(
        "What does the importer do with a file in Windows-1252?", False, [
            [text("It tries UTF-8 first; when that fails it uses the encoding detected by "
                  "charset-normalizer, which recognises cp1252 exports from Excel, and the "
                  "preview shows the encoding it chose.")],
        ])]),
}  # fmt: skip
