"""Whoever holds the team key still cannot write as another device: every line is signed
by the device that wrote it, over the chain of that device's lines.

Each forgery here is built from the published format alone (``tests/forge.py``: git
plumbing, hashlib, json and ``cryptography``'s AES-SIV and Ed25519), by someone who holds
the team key (a teammate, or a thief of one machine's home): a line in another device's
folder, unsigned or signed with any other key; an old, validly signed line put back
after its device redacted it; a jump in a device's sequence.  Every machine refuses it
in one line and loses nothing, the victim included.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from memlog.eventlog.events import content_hash
from memlog.tests import forge
from memlog.tests.sync.helpers import (
    bare_remote,
    device_of,
    git,
    init,
    memlog,
    memlog_ok,
    observe,
    push_tampered,
    remote_file,
    tamperer,
)

SEGMENT = "00000000000000000001"
PIN = "Pin tool versions in CI."
SMALL = "Keep commits small."
SECRET = "hunter2hunter2"  # a password the secrets scan does not know: found later


def two_homes(tmp_path: Path) -> tuple[Path, Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    observe(a, PIN)
    observe(b, SMALL)
    for home in (a, b, a):
        init(home, remote)
    return a, b, remote


def team_key(home: Path) -> bytes:
    return forge.key_bytes(memlog_ok(home, "sync", "--print-key").output.strip())


def entries(home: Path) -> str:
    return memlog_ok(home, "list", "--json", "--status", "any").output


def refused_by(home: Path) -> str:
    """``memlog sync`` on ``home``: exit 1, its entries as they were, its log whole."""
    before = entries(home)
    result = memlog(home, "sync")
    assert result.exit_code == 1, result.output
    assert entries(home) == before
    assert memlog(home, "verify").exit_code == 0
    return result.output


def refusals(said: str) -> list[str]:
    return [line for line in said.splitlines() if line.startswith("refused")]


def chain_to_end(key: bytes, device: str, rows: list[bytes]) -> tuple[bytes, int]:
    """The chain digest after the last of a device's sealed lines, and its sequence."""
    digest, last = forge.chain_start(device), 0
    for row in rows:
        line = forge.opened(key, device, SEGMENT, row)
        digest = forge.chain_next(digest, line.get("gen"), line["prev"], line["seq"], line["body"])
        last = line["seq"]
    return digest, last


def signed_by(private: Ed25519PrivateKey, key: bytes, device: str, rows: list[bytes],
              body: bytes, seq: int | None = None) -> bytes:  # fmt: skip
    """A line of ``device`` after ``rows``, signed by ``private`` over the true chain."""
    digest, last = chain_to_end(key, device, rows)
    seq = last + 1 if seq is None else seq
    after = forge.chain_next(digest, 0, last, seq, body)
    signature = forge.sign(private, forge.line_message(device, 0, last, seq, after))
    link = digest if not rows else b""  # a segment's first line carries the digest before it
    return forge.seal_signed(key, device, SEGMENT, seq, last, body, 0, signature, link)


def teammate_key(home: Path) -> Ed25519PrivateKey:
    """A real teammate's own signing key, read from its home (published format)."""
    text = (home / "sync.device.key").read_text().strip()
    raw = base64.urlsafe_b64decode(text.split(".")[2] + "==")
    return Ed25519PrivateKey.from_private_bytes(raw)


def test_a_key_holder_cannot_write_a_line_as_another_device(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    key, victim = team_key(b), device_of(a)
    path = f"{victim}/{SEGMENT}.sealed"
    rows = remote_file(remote, path).splitlines(keepends=True)
    last = forge.opened(key, victim, SEGMENT, rows[-1])["seq"]
    body = forge.event("entry.retired", last + 1, entry_id=content_hash(PIN), reason="forged")
    forgeries = {
        "unsigned": forge.seal(key, victim, SEGMENT, last + 1, last, body),
        "another key": signed_by(Ed25519PrivateKey.generate(), key, victim, rows, body),
        "a teammate's own key": signed_by(teammate_key(b), key, victim, rows, body),
    }
    for name, forged in forgeries.items():
        for home in (a, b):  # the device itself (never adopted), and another machine
            push_tampered(remote, path, lambda data, line=forged: data + line)
            said = refused_by(home)
            assert len(refusals(said)) == 1, (name, said)
            why = (
                "unsigned, after a signed line" if name == "unsigned" else "signature does not hold"
            )
            assert f"{path} line {len(rows) + 1} (seq {last + 1}): " in said and why in said
            assert "took" not in said and "writes as device" not in said, said
            shown = json.loads(memlog_ok(home, "show", content_hash(PIN)[:10], "--json").output)
            assert shown["entry"]["status"] == "live"
            assert remote_file(remote, path) == b"".join(rows)  # its push put them right


def redacted_at_a(tmp_path: Path) -> tuple[Path, Path, str, list[bytes], list[bytes]]:
    """a wrote a secret, every home took it, a redacted it: the remote's sealed lines of
    a's segment before and after."""
    a, b, remote = two_homes(tmp_path)
    memlog_ok(a, "observe", "--name", "Staging", "--description", "Staging has a password.",
              "--category", "facts", "--reasoning",
              f"the staging password {SECRET} leaked")  # fmt: skip
    for home in (a, b):
        memlog_ok(home, "sync")
    path = f"{device_of(a)}/{SEGMENT}.sealed"
    old = remote_file(remote, path).splitlines(keepends=True)
    memlog_ok(a, "redact", "--match", SECRET, "--reason", "a password")
    for home in (a, b):
        memlog_ok(home, "sync")
    new = remote_file(remote, path).splitlines(keepends=True)
    return a, b, remote, old, new


def holds_secret(home: Path) -> bool:
    return any(SECRET.encode() in p.read_bytes() for p in home.rglob("*")
               if p.is_file() and "sync.git" not in p.parts)  # fmt: skip


def test_an_old_line_put_back_never_undoes_a_redaction(tmp_path: Path) -> None:
    """The pre-redaction sealed line, copied from an old commit into the current segment
    (push access is all it takes): it opens, and its old signature holds, but its device
    has signed that place again since (a new generation, named in its head)."""
    a, b, remote, old, new = redacted_at_a(tmp_path)
    path = f"{device_of(a)}/{SEGMENT}.sealed"
    changed = [i for i, (o, n) in enumerate(zip(old, new, strict=False)) if o != n]
    assert changed
    key = memlog_ok(a, "sync", "--print-key").output.strip()
    for put_back in (
        [old[i] if i == changed[0] else row for i, row in enumerate(new)],  # one line
        old,  # the whole file as it was
    ):
        c = tmp_path / f"c{len(put_back)}"  # a machine joining now
        for home in (c, b, a):
            push_tampered(remote, path, lambda data, rows=put_back: b"".join(rows))
            if home == c:
                said = memlog(c, "sync", "--init", remote, "--key", key)
                assert said.exit_code == 1
                said_text = said.output
            else:
                said_text = refused_by(home)
            assert f"an old version: device {device_of(a)} rewrote its lines" in said_text
            assert not holds_secret(home)
            if home != c:  # a machine that holds the device's lines puts them right
                assert remote_file(remote, path) == b"".join(new)
        memlog_ok(c, "sync")
        assert not holds_secret(c) and memlog(c, "verify").exit_code == 0
        assert (
            "[REDACTED]"
            in memlog_ok(c, "show", content_hash("Staging has a password.")[:10]).output
        )


def test_a_sequence_jump_is_refused_and_writes_go_on(tmp_path: Path) -> None:
    """seq 10^18 was taken (every later event numbered from there, verify failing for
    ever) and 9999999999999999999 broke every write with OverflowError."""
    a, b, remote = two_homes(tmp_path)
    key, victim = team_key(b), device_of(a)
    path = f"{victim}/{SEGMENT}.sealed"
    rows = remote_file(remote, path).splitlines(keepends=True)
    last = forge.opened(key, victim, SEGMENT, rows[-1])["seq"]
    for seq in (10**18, 9999999999999999999):
        body = forge.event("entry.retired", seq, entry_id=content_hash(PIN), reason="jump")
        for forged in (
            forge.seal(key, victim, SEGMENT, seq, last, body),
            signed_by(Ed25519PrivateKey.generate(), key, victim, rows, body, seq),
        ):
            for home in (a, b):
                push_tampered(remote, path, lambda data, line=forged: data + line)
                said = refused_by(home)
                assert len(refusals(said)) == 1 and f"(seq {seq})" in said, said
    observe(a, "Written after the jumps.")
    observe(b, "Also written after the jumps.")
    shown = json.loads(memlog_ok(a, "log", "--json").output.splitlines()[-1])
    assert shown["seq"] < 100
    for home in (a, b):
        memlog_ok(home, "sync")
    for home in (a, b):
        memlog_ok(home, "sync")
        assert memlog(home, "verify").exit_code == 0
        assert "Written after the jumps" in memlog_ok(home, "list").output


def test_a_roster_that_gives_a_device_another_key_is_refused(tmp_path: Path) -> None:
    """A holder of the team key rewrites the roster with a key of its own for device a
    (and signs a's lines with it): every machine that pinned a's key keeps it; a machine
    joining sees that b's head names another key for a, and takes none of a's lines."""
    a, b, remote = two_homes(tmp_path)
    memlog_ok(b, "sync")  # b's head names a's key
    key, victim = team_key(b), device_of(a)
    mallory = Ed25519PrivateKey.generate()
    public = forge.public_text(mallory)
    proof = forge.statement(mallory, "member", f"{victim}\0{public}".encode())

    def tamper() -> None:
        run = tamperer(remote)
        found = forge.open_roster(key, remote_file(remote, "roster.sealed", "memlog-roster"))
        found["devices"][victim] = {"key": public, "added": "2026-01-01T00:00:00Z", "proof": proof}
        blob = run("hash-object", "-w", "--stdin", data=forge.seal_roster(key, found))
        tree = run("mktree", data=f"100644 blob {blob}\troster.sealed\n".encode())
        commit = run("commit-tree", tree, "-p", run("rev-parse", "memlog-roster"), "-m", "x")
        run("update-ref", "refs/heads/memlog-roster", commit)

    tamper()
    said = memlog(b, "sync")
    assert "another signing key than the one pinned here" in said.output
    tamper()  # b put the pinned key back: the attacker does it again, for the next to join
    c = tmp_path / "c"
    joined = memlog(
        c, "sync", "--init", remote, "--key", memlog_ok(a, "sync", "--print-key").output.strip()
    )
    assert joined.exit_code == 1
    assert f"device {victim}'s signing key in the roster is not the one device" in joined.output
    assert memlog(c, "show", content_hash(PIN)[:10]).exit_code != 0  # none of a's lines
    assert "the pinned one stands" in memlog(a, "sync").output  # a's roster goes back
    again = memlog(c, "sync")
    assert "theirs is taken" in again.output, again.output
    assert memlog_ok(c, "show", content_hash(PIN)[:10])
    assert memlog(c, "sync").exit_code == 0


def test_a_key_holder_cannot_blank_a_teammates_text(tmp_path: Path) -> None:
    """A redaction of a's line made by b, pushed as a's line (sealed with the team key,
    unsigned or signed with b's own key): refused everywhere; a's text stays.  (``memlog
    redact`` on b makes a request a's owner confirms: ``test_engine``.)"""
    a, b, remote = two_homes(tmp_path)
    key, victim = team_key(b), device_of(a)
    path = f"{victim}/{SEGMENT}.sealed"
    rows = remote_file(remote, path).splitlines(keepends=True)
    first = forge.opened(key, victim, SEGMENT, rows[0])
    event = json.loads(first["body"])
    event.pop("sum")
    event.update(description="[REDACTED]", redacted=["description"], stable_id=content_hash(PIN))
    blank = forge.plain_line(event)
    for forged in (
        forge.seal(key, victim, SEGMENT, 1, 0, blank),
        signed_by(teammate_key(b), key, victim, [], blank, 1),
    ):
        for home in (a, b):
            push_tampered(remote, path, lambda data, line=forged: line + b"".join(rows[1:]))
            said = refused_by(home)
            assert f"{path} line 1 (seq 1): " in said, said
            shown = json.loads(memlog_ok(home, "show", content_hash(PIN)[:10], "--json").output)
            assert shown["entry"]["description"] == PIN


def test_a_segment_of_this_device_deleted_here_leaves_its_chain_as_signed(
    tmp_path: Path,
) -> None:
    """This device's first segment gone from ``events/``: the sync writes it back and signs
    only the new lines after the next one (no line signed again, no new generation), and
    the other homes take them."""
    from memlog.eventlog import devices

    a, b, remote = two_homes(tmp_path)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(devices, "ROLL_BYTES", 2 << 10)
        for i in range(8):
            observe(a, f"A's lesson number {i}, long enough to roll its segment over.")
    memlog_ok(a, "sync")
    own = sorted((a / "events" / device_of(a)).glob("*.jsonl"))
    assert len(own) >= 2
    first = own[0].read_bytes()
    own[0].unlink()
    observe(a, "Written after the first segment went.")
    done = memlog(a, "sync")
    assert done.exit_code == 0, done.output
    assert own[0].read_bytes() == first
    gens = {
        forge.opened(team_key(a), device_of(a), p.split("/")[1][:20], row).get("gen")
        for p in git("--git-dir", remote, "ls-tree", "-r", "--name-only", "memlog").stdout.split()
        if p.startswith(device_of(a) + "/") and p.endswith(".sealed")
        for row in remote_file(remote, p).splitlines(keepends=True)
    }
    assert gens == {0}  # nothing signed again
    said = memlog(b, "sync")
    assert said.exit_code == 0 and "refused" not in said.output, said.output
    assert memlog_ok(b, "show", content_hash("Written after the first segment went.")[:10])
