"""The redaction rules: every class of secret found, ordinary engineering text untouched."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlog.eventlog.events import Finding, Observed
from memlog.eventlog.redaction import REDACTED, entropy, redact
from memlog.eventlog.secrets import describe, redact_event

#: (class, text holding the secret, the secret's distinctive part)
SECRETS: list[tuple[str, str, str]] = [
    ("stripe-key", "Charge with sk_live_51HxQkLm2eZvKYlo2C8pQ7dRt in prod", "51HxQkLm2eZvKYlo"),
    ("stripe-key", "Webhooks sign with whsec_5Wq9XbT2mN8rK4pL7vZ1", "5Wq9XbT2mN8rK4pL"),
    (
        "jwt",
        "Token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c was logged",
        "SflKxwRJSMeKKF2QT4fw",
    ),
    ("password", "login with password=Tr0ub4dor&3xyz then", "Tr0ub4dor"),
    ("password", 'config {"password": "hunter2-prod"}', "hunter2-prod"),
    ("password", "db password: Sup3r!secret", "Sup3r!secret"),
    ("url-password", "postgres://app:Pg-s3cret-9@db.internal:5432/app", "Pg-s3cret-9"),
    ("url-password", "redis://:r3dis-pass@cache:6379/0", "r3dis-pass"),
    (
        "secret-assignment",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG",
    ),
    ("secret-assignment", "STRIPE_SECRET_KEY=rk9Xq2Lm4Np6", "rk9Xq2Lm4Np6"),
    ("secret-assignment", "export GITHUB_TOKEN='a1B2c3D4e5F6g7H8'", "a1B2c3D4e5F6g7H8"),
    ("password", "DB_PASSWORD=correcthorsebattery", "correcthorsebattery"),
    ("secret-assignment", "SENTRY_API_KEY: 9fK2mQ7xP4", "9fK2mQ7xP4"),
    ("aws-access-key", "key id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("github-token", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "aBcDeFgHiJkLmNoPqRsT"),
    ("github-token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "11ABCDEFG01234"),
    ("gitlab-token", "glpat-xY9zA8bC7dE6fG5hI4jK", "xY9zA8bC7dE6fG5hI4jK"),
    ("slack-token", "xoxb-2048-1234567890-AbCdEfGhIjKl", "1234567890-AbCdEfGhIjKl"),
    ("slack-webhook", "https://hooks.slack.com/services/T000/B000/XXXXabcd1234YYYY", "abcd1234YY"),
    ("openai-key", "sk-proj-4fG7hJ9kL2mN5pQ8rS1tU3vW6xY0zA2b", "4fG7hJ9kL2mN5pQ8rS1t"),
    ("anthropic-key", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123", "AbCdEfGhIjKlMnOpQrSt"),
    ("google-api-key", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "9tSrke72PouQMnMX"),
    ("npm-token", "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOpQrSt"),
    ("huggingface-token", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "AbCdEfGhIjKlMnOpQrSt"),
    ("sendgrid-key", "SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNo", "wXyZ0123456789aB"),
    ("authorization-header", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    ("bearer-token", "curl -H 'Bearer 9f8e7d6c5b4a39281716aBcD'", "9f8e7d6c5b4a3928"),
    ("high-entropy", "the webhook secret is 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "3f9a8b7c6d5e4f3a"),
    ("high-entropy", "signing key: Zx81Lq0Pw72Nv63Mb54Kc", "Zx81Lq0Pw72Nv63Mb54Kc"),
    (
        "private-key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7xq9Zs\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA7xq9Zs",
    ),
    (
        "private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n(truncated paste",
        "b3BlbnNzaC1rZXktdjEA",
    ),
]

HEX, ALNUM = "0123456789abcdef", "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY"


def filled(alphabet: str, size: int) -> str:
    return (alphabet * (size // len(alphabet) + 1))[:size]


#: the classes ported from gitleaks' default rules, Azure's, curl's and memlog's own key:
#: (class, text holding the secret, the secret's distinctive part)
PORTED: list[tuple[str, str, str]] = [
    ("azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=memlogdev;AccountKey="
     + filled(ALNUM, 86) + "==;EndpointSuffix=core.windows.net", filled(ALNUM, 40)),
    ("azure-storage-key", "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root"
     "ManageSharedAccessKey;SharedAccessKey=" + filled(ALNUM, 43) + "=", filled(ALNUM, 30)),
    ("azure-sas", "https://memlogdev.blob.core.windows.net/c/x.json?sv=2022-11-02&ss=b&srt=o"
     "&sp=r&se=2026-01-01T00:00:00Z&spr=https&sig=" + filled(ALNUM, 40) + "%3D",
     filled(ALNUM, 30)),
    ("azure-sas", "SharedAccessSignature=sig=" + filled(ALNUM, 44) + "&se=1700000000&sv=2021-06-08",
     filled(ALNUM, 30)),
    ("azure-ad-secret", "client_secret used: " + "Xy81Q~" + filled(ALNUM, 34), filled(ALNUM, 30)),
    ("curl-password", "curl -u deploy:Hunter2Prod https://ci.internal/api", "Hunter2Prod"),
    ("curl-password", "curl --user=ops:'s3cr3t-v4lue' -X POST", "s3cr3t-v4lue"),
    ("memlog-sync-key", "joined with memlog-key-1." + filled(ALNUM + "_-", 86), filled(ALNUM, 30)),
    ("gitlab-token", "runner glrt-" + filled(ALNUM, 20), filled(ALNUM, 20)),
    ("gitlab-token", "deploy with gldt-" + filled(ALNUM, 20), filled(ALNUM, 20)),
    ("gitlab-token", "trigger glptt-" + filled(HEX, 40), filled(HEX, 40)),
    ("gitlab-token", "register GR1348941" + filled(ALNUM, 20), filled(ALNUM, 20)),
    ("slack-token", "socket mode xapp-1-A0123BCDEFG-1234567890123-" + filled(HEX, 64),
     filled(HEX, 40)),
    ("twilio-key", "twilio SK" + filled(HEX, 32), filled(HEX, 32)),
    ("shopify-token", "shop token shpat_" + filled(HEX, 32), filled(HEX, 32)),
    ("pypi-token", "upload with pypi-AgEIcHlwaS5vcmc" + filled(ALNUM, 60), filled(ALNUM, 40)),
    ("rubygems-key", "gem push with rubygems_" + filled(HEX, 48), filled(HEX, 48)),
    ("digitalocean-token", "doctl auth init -t dop_v1_" + filled(HEX, 64), filled(HEX, 64)),
    ("doppler-token", "DOPPLER dp.pt." + filled(ALNUM, 43), filled(ALNUM, 43)),
    ("databricks-token", "databricks dapi" + filled(HEX, 32), filled(HEX, 32)),
    ("heroku-key", "heroku HRKU-AA" + filled(ALNUM, 58), filled(ALNUM, 40)),
    ("terraform-token", "tf " + filled(ALNUM, 14) + ".atlasv1." + filled(ALNUM, 64),
     filled(ALNUM, 40)),
    ("vault-token", "VAULT hvs." + filled(ALNUM, 95), filled(ALNUM, 60)),
    ("postman-key", "PMAK-" + filled(HEX, 24) + "-" + filled(HEX, 34), filled(HEX, 24)),
    ("linear-key", "linear lin_api_" + filled(ALNUM, 40), filled(ALNUM, 40)),
    ("notion-token", "notion ntn_" + filled("0123456789", 11) + filled(ALNUM, 35),
     filled(ALNUM, 32)),
    ("age-key", "AGE-SECRET-KEY-1" + filled("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
     filled("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 40)),
    ("1password-key", "A3-ABCDEF-GHIJKLMNOPQ-RSTUV-WXYZ0-12345", "GHIJKLMNOPQ-RSTUV"),
    ("grafana-token", "grafana glsa_" + filled(ALNUM, 32) + "_" + filled(HEX, 8),
     filled(ALNUM, 32)),
    ("newrelic-key", "newrelic NRAK-" + filled("ABCDEFGHJKLMNPQRSTUVWXYZ0123", 27),
     filled("ABCDEFGHJKLMNPQRSTUVWXYZ0123", 27)),
    ("sentry-token", "sentry sntryu_" + filled(HEX, 64), filled(HEX, 64)),
    ("square-token", "square sq0atp-" + filled(ALNUM, 30), filled(ALNUM, 30)),
    ("telegram-token", "bot 123456789:AA" + filled(ALNUM, 33), filled(ALNUM, 33)),
    ("alibaba-key", "aliyun LTAI" + filled(ALNUM, 20), filled(ALNUM, 20)),
    ("perplexity-key", "pplx-" + filled(ALNUM, 48), filled(ALNUM, 48)),
    ("dynatrace-token", "dt0c01." + filled(ALNUM, 24) + "." + filled(ALNUM, 64),
     filled(ALNUM, 24)),
    ("flyio-token", "fly fo1_" + filled(ALNUM, 43), filled(ALNUM, 43)),
    ("prefect-key", "prefect pnu_" + filled(ALNUM, 36), filled(ALNUM, 36)),
    ("pulumi-token", "pulumi pul-" + filled(HEX, 40), filled(HEX, 40)),
    ("sourcegraph-token", "src sgp_" + filled(HEX, 40), filled(HEX, 40)),
    ("atlassian-token", "jira ATATT3" + filled(ALNUM, 186), filled(ALNUM, 60)),
    ("artifactory-key", "jfrog AKCp" + filled(ALNUM, 69), filled(ALNUM, 60)),
    ("easypost-key", "EZAK" + filled(ALNUM, 54), filled(ALNUM, 54)),
    ("planetscale-token", "pscale_tkn_" + filled(ALNUM, 40), filled(ALNUM, 40)),
    ("brevo-key", "xkeysib-" + filled(HEX, 64) + "-" + filled(ALNUM, 16), filled(HEX, 64)),
    ("octopus-key", "octopus API-" + filled("ABCDEFGHJKLMNPQRSTUVWXYZ0123", 26),
     filled("ABCDEFGHJKLMNPQRSTUVWXYZ0123", 26)),
    ("teams-webhook", "https://acme.webhook.office.com/webhookb2/" + filled(HEX, 8) + "-"
     + filled(HEX, 4) + "-" + filled(HEX, 4) + "-" + filled(HEX, 4) + "-" + filled(HEX, 12)
     + "@" + filled(HEX, 36) + "/IncomingWebhook/" + filled(HEX, 32), filled(HEX, 32)),
    ("discord-webhook", "https://discord.com/api/webhooks/123456789012345678/"
     + filled(ALNUM, 68), filled(ALNUM, 60)),
]  # fmt: skip

#: ordinary engineering prose: hashes, UUIDs, versions, paths, code, assignments of numbers
PROSE = [
    "Commit 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a fixed the flaky retry.",
    "The cache key is the sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.",
    "- Content-Hash: sha256:9f86d081884c7d65",
    "Request 123e4567-e89b-12d3-a456-426614174000 timed out after 30 s.",
    "Upgrade to v2.10.3-rc.1; numpy>=1.26,<3 and python 3.11.7 are required.",
    "Set MAX_TOKENS=4096, SORT_KEY=created_at and timeout=30 in settings.toml.",
    "Password: must be rotated every 90 days; password_min_length=12.",
    "Read it with api_key=os.environ['API_KEY'] instead of a literal.",
    "cache_key = sha256(description) keeps ids stable; SECRET_KEY=settings.SECRET.",
    "The token budget of 1500 ms covers the query embedding.",
    "The tokenizer: bert-base-uncased (WordPiece).",
    "git clone git@github.com:org/repo.git && curl https://example.com:8443/api/v2",
    "bearer token authentication is configured in nginx.conf",
    "secret-scanning found nothing in src/memlog/eventlog/log.py:142",
    "export GITHUB_TOKEN=${GITHUB_TOKEN}; TOKEN=<your token>; password=<password>.",
    "the access key rotation is quarterly; see docs/security.md#rotation",
    "redis://localhost:6379/0 and postgres://localhost/app need no password",
    "session 550e8400-e29b-41d4-a716-446655440000 hit the 2.5 s budget",
    "Docker image sha256:4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2",
    "Build 20240115.3 on node 18.19.0; see PR #1234 and issue #567.",
    "Keep the primary_key: id and foreign_key=user_id columns indexed.",
    "The key insight: a 64-bit hash (16 hex chars) collides rarely below 10,000 entries.",
    "Verify the sig= parameter of the signed URL and the sv= version before caching it.",
    "TASK-1234 and ASK: the API-first design of gl_context.cpp; ops_review, pnu_test ok.",
    "curl -u $USER:$TOKEN https://example.com and curl --user me https://example.com",
    "AccountKey is read from KeyVault at start; SharedAccessKeyName=RootManageSharedAccessKey",
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), SECRETS + PORTED, ids=[s[0] for s in SECRETS + PORTED]
)
def test_every_class_is_found(kind: str, text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned.text
    assert REDACTED in cleaned.text
    assert kind in cleaned.found
    assert any(secret in removed for removed in cleaned.removed)


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_engineering_text_passes_untouched(text: str) -> None:
    assert redact(text) == (text, (), ())


def test_only_the_secret_goes_and_its_quotes_stay() -> None:
    assert redact('{"password": "hunter2-prod", "user": "ann"}').text == (
        '{"password": "[REDACTED]", "user": "ann"}'
    )
    assert redact("postgres://app:pw-123456@db/app").text == "postgres://app:[REDACTED]@db/app"


def test_a_secret_found_twice_is_removed_once() -> None:
    text = "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sIgNaTuRe_abc-123"
    cleaned = redact(text)
    assert cleaned.text == "Authorization: Bearer [REDACTED]" and cleaned.found == ("jwt",)


def test_entropy() -> None:
    assert entropy("aaaa") == 0
    assert entropy("abcd") == 2
    assert entropy("0123456789abcdef") == 4


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,-", max_size=200))
def test_plain_words_never_change(text: str) -> None:
    assert redact(text).text == text


def test_the_event_records_field_and_class() -> None:
    event = Observed(
        name="Stripe",
        description="Charge with sk_live_51HxQkLm2eZvKYlo2C8pQ7dRt",
        reasoning="db password=hunter2-x and password=other-9",
        category="patterns",
        keywords=("ok",),
    )
    stored = redact_event(event)
    assert stored.redacted == ("description", "reasoning")
    assert stored.redactions == (
        Finding("description", "stripe-key"),
        Finding("reasoning", "password", 2),
    )
    assert describe(stored.redactions) == "description: stripe-key; reasoning: password ×2"
    assert redact_event(stored) == stored  # nothing left to find
