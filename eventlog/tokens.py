"""Tokens with a prefix of their own: the rules of gitleaks' default rule set
(github.com/gitleaks/gitleaks, ``config/gitleaks.toml``) that name a service by a
prefix no prose holds, ported as (class, pattern, hints).

Rules that need a word around the secret (``new_relic … = …``) or match bare hex
(Sourcegraph's 40 hex digits, a commit hash to anyone else) are left to
``redaction``'s assignment and entropy rules.  Azure AD client secrets and
memlog's own sync key are here too (Azure's storage keys and SAS tokens, which
gitleaks lacks, are rules of ``redaction``).  ``redaction`` looks for the hints
only in words of 20 characters or more (every secret here is one).
"""

from __future__ import annotations

#: what may follow a token (gitleaks' end of a secret): a quote, a space, ``;`` or the end
_END = r"(?=[\x60'\"\s;,)\]}]|\\[nr]|$)"
#: (class, pattern, substrings one of which the text must hold)
PREFIXED: list[tuple[str, str, tuple[str, ...]]] = [
    ("gitlab-token", r"\bgl(?:ptt-[0-9a-f]{40}|dt-[\w-]{20}|rt-[\w-]{20}|soat-[\w-]{20}"
     r"|cbt-[0-9a-zA-Z]{1,5}_[\w-]{20}|ffct-[\w-]{20}|ft-[\w-]{20}|imt-[\w-]{25}"
     r"|agent-[\w-]{50}|oas-[\w-]{64})", ("gl",)),
    ("gitlab-token", r"\bGR1348941[\w-]{20}", ("GR1348941",)),
    ("gitlab-token", r"_gitlab_session=[0-9a-z]{32}", ("_gitlab_session=",)),
    ("slack-token", r"(?i)\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+", ("xapp-", "XAPP-")),
    ("slack-token", r"(?i)\bxoxe(?:\.xox[bp])?-\d-[A-Z0-9]{140,170}", ("xoxe", "XOXE")),
    ("twilio-key", r"\bSK[0-9a-fA-F]{32}\b", ("SK",)),
    ("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shp",)),
    ("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[\w-]{50,1000}", ("pypi-AgEI",)),
    ("rubygems-key", r"\brubygems_[a-f0-9]{48}" + _END, ("rubygems_",)),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}" + _END, ("_v1_",)),
    ("doppler-token", r"\bdp\.pt\.[a-zA-Z0-9]{43}", ("dp.pt.",)),
    ("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d)?" + _END, ("dapi",)),
    ("heroku-key", r"\bHRKU-AA[0-9a-zA-Z_-]{58}" + _END, ("HRKU-",)),
    ("terraform-token", r"\b[a-zA-Z0-9]{14}\.atlasv1\.[a-zA-Z0-9\-_=]{60,70}", ("atlasv1",)),
    ("vault-token", r"\bhv[sb]\.[\w-]{90,300}" + _END, ("hvs.", "hvb.")),
    ("postman-key", r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}" + _END, ("PMAK-",)),
    ("linear-key", r"\blin_api_[a-zA-Z0-9]{40}", ("lin_api_",)),
    ("notion-token", r"\bntn_[0-9]{11}[A-Za-z0-9]{35}" + _END, ("ntn_",)),
    ("age-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET",)),
    ("1password-key", r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
     r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b", ("A3-",)),
    ("1password-token", r"\bops_eyJ[a-zA-Z0-9+/]{250,}={0,3}", ("ops_eyJ",)),
    ("grafana-token", r"(?i)\b(?:eyJrIjoi[A-Za-z0-9]{70,400}={0,3}|glc_[A-Za-z0-9+/]{32,400}"
     r"={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})" + _END, ("eyJrIjoi", "glc_", "glsa_")),
    ("newrelic-key", r"\b(?:NRAK-[A-Z0-9]{27}|NRII-[a-zA-Z0-9-]{32}|NRJS-[a-f0-9]{19})" + _END,
     ("NRAK-", "NRII-", "NRJS-")),
    ("sentry-token", r"\bsntr(?:yu_[a-f0-9]{64}|ys_eyJpYXQiO[a-zA-Z0-9+/=_]{60,500})",
     ("sntry",)),
    ("square-token", r"\b(?:EAAA|sq0atp-|sq0csp-)[\w-]{22,60}" + _END, ("EAAA", "sq0")),
    ("teams-webhook", r"https://[a-z0-9]+\.webhook\.office\.com/webhookb2/[\w@/-]{60,}",
     ("webhook.office.com",)),
    ("discord-webhook", r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{40,}",
     ("discord",)),
    ("telegram-token", r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b", (":AA",)),
    ("alibaba-key", r"\bLTAI[a-zA-Z0-9]{20}" + _END, ("LTAI",)),
    ("perplexity-key", r"\bpplx-[a-zA-Z0-9]{48}", ("pplx-",)),
    ("dynatrace-token", r"\bdt0c01\.[a-zA-Z0-9]{24}\.[a-zA-Z0-9]{64}", ("dt0c01.",)),
    ("flyio-token", r"\b(?:fo1_[\w-]{43}|fm[12][ar]?_[a-zA-Z0-9+/]{100,}={0,3})" + _END,
     ("fo1_", "fm1", "fm2_")),
    ("prefect-key", r"\bpnu_[a-zA-Z0-9]{36}" + _END, ("pnu_",)),
    ("pulumi-token", r"\bpul-[a-f0-9]{40}" + _END, ("pul-",)),
    ("sourcegraph-token", r"\bsgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}\b", ("sgp_",)),
    ("atlassian-token", r"\bATATT3[A-Za-z0-9_\-=]{186}" + _END, ("ATATT3",)),
    ("artifactory-key", r"\b(?:AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})\b", ("AKCp", "cmVmd")),
    ("cloudflare-key", r"\bv1\.0-[a-f0-9]{24}-[a-f0-9]{146}" + _END, ("v1.0-",)),
    ("easypost-key", r"\bEZ[AT]K[a-zA-Z0-9]{54}\b", ("EZAK", "EZTK")),
    ("planetscale-token", r"\bpscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}" + _END, ("pscale_",)),
    ("aws-bedrock-key", r"\b(?:ABSK[A-Za-z0-9+/]{109,269}={0,2}|bedrock-api-key-"
     r"YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=]*)", ("ABSK", "bedrock-api-key-")),
    ("brevo-key", r"\bxkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16}", ("xkeysib-",)),
    ("readme-key", r"\brdme_[a-z0-9]{70}" + _END, ("rdme_",)),
    ("frameio-token", r"\bfio-u-[a-zA-Z0-9\-_=]{64}", ("fio-u-",)),
    ("duffel-token", r"\bduffel_(?:test|live)_[a-zA-Z0-9_\-=]{43}", ("duffel_",)),
    ("shippo-token", r"\bshippo_(?:live|test)_[a-fA-F0-9]{40}" + _END, ("shippo_",)),
    ("typeform-token", r"\btfp_[a-zA-Z0-9\-_.=]{59}" + _END, ("tfp_",)),
    ("clojars-token", r"(?i)\bCLOJARS_[a-z0-9]{60}", ("CLOJARS_", "clojars_")),
    ("octopus-key", r"\bAPI-[A-Z0-9]{26}" + _END, ("API-",)),
    ("scalingo-token", r"\btk-us-[\w-]{48}" + _END, ("tk-us-",)),
    ("azure-ad-secret", r"(?<![\w~.-])[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34}(?![\w~.-])",
     ("Q~",)),
    ("memlog-sync-key", r"memlog-key-1\.[A-Za-z0-9_-]{86}", ("memlog-key-1.",)),
]  # fmt: skip
