"""What sync refuses: tampered or diverged versions, secrets, anything but segments."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import msgspec

from memlog.eventlog import segments as seg
from memlog.eventlog.codec import decode_line, encode_line
from memlog.eventlog.events import content_hash
from memlog.tests.sync.helpers import (
    assert_same_views,
    bare_remote,
    device_of,
    memlog,
    memlog_ok,
    observe,
    push_tampered,
    remote_objects,
)

SEGMENT = "00000000000000000001.jsonl"


def two_homes(tmp_path: Path) -> tuple[Path, Path, str]:
    remote = str(bare_remote(tmp_path / "remote.git"))
    a, b = tmp_path / "a", tmp_path / "b"
    observe(a, "Pin tool versions in CI.")
    observe(b, "Keep commits small.")
    for home in (a, b, a):
        memlog_ok(home, "sync", "--init", remote)
    return a, b, remote


def sync_json(home: Path, code: int = 0) -> dict[str, object]:
    result = memlog(home, "sync", "--json")
    assert result.exit_code == code, result.output
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_a_tampered_segment_is_quarantined_never_applied(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    observe(a, "Name things for what they do.")
    memlog_ok(a, "sync")
    path = f"{device_of(a)}/{SEGMENT}"
    push_tampered(remote, path, lambda data: data.replace(b"Name things", b"Nome things"))
    before = (b / "events" / path).read_bytes()
    done = sync_json(b, code=1)
    assert done["refused"] and "checksum mismatch" in str(done["refused"])
    assert (b / "events" / path).read_bytes() == before  # nothing of it applied
    assert memlog(b, "show", content_hash("Name things for what they do.")[:10]).exit_code == 1
    quarantined = [r for r in seg.read_quarantine(b) if r.segment == path]
    assert quarantined and "from the remote" in quarantined[0].reason
    assert memlog(b, "verify").exit_code == 0
    again = sync_json(b)  # reported once; the version stays refused
    assert not again["refused"]
    # b pushed its own (older, good) version over it; the owner's next sync sends the rest
    owner = sync_json(a)
    assert not owner["refused"] and owner["sent"]
    sync_json(b)
    assert memlog_ok(b, "show", content_hash("Name things for what they do.")[:10])
    assert_same_views([a, b])


def test_a_diverged_segment_is_refused(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    path = f"{device_of(a)}/{SEGMENT}"

    def forge(data: bytes) -> bytes:  # another event under an existing sequence number
        lines = data.splitlines(keepends=True)
        event = decode_line(lines[0])
        lines[0] = encode_line(msgspec.structs.replace(event, id="forged-id"))
        return b"".join(lines)

    push_tampered(remote, path, forge)
    done = sync_json(b, code=1)
    assert "is event forged-id in the remote" in str(done["refused"])
    assert b"forged-id" not in (b / "events" / path).read_bytes()


def test_a_copied_home_is_caught(tmp_path: Path) -> None:
    """A copy writes as the same device: from the original's side it is a home restored
    from a backup (the remote holds events of its device it lacks, and it wrote others
    since), which nothing in the two logs tells apart.  The original takes the copy's
    events in as its own, puts its own after them and says so; nothing is lost."""
    a, b, remote = two_homes(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)  # the same device id on two machines
    observe(copy, "Copied homes write the same device.")
    memlog_ok(copy, "sync")
    observe(a, "The original writes too.")
    done = sync_json(a)
    assert not done["refused"]
    (said,) = [n for n in done["notes"] if "of this device that this home lacks" in n]
    assert "took them back" in said and "written here since now follow them" in said
    assert memlog(a, "verify").exit_code == 0
    memlog_ok(copy, "sync")
    for home in (a, copy):
        shown = memlog_ok(home, "log").output
        assert "Copied homes write" in shown and "The original writes" in shown


def test_a_secret_stays_home_with_what_follows(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    key = "AKIA" + "Q3EXAMPLEKEY7XYZ"
    memlog_ok(a, "observe", "--name", "Key", "--description", f"The deploy key is {key}.",
              "--category", "facts", "--no-redact")  # fmt: skip
    observe(a, "Later lessons wait behind it.")
    done = sync_json(a, code=1)
    assert done["held"] and "a secret" in str(done["held"])
    assert key.encode() not in remote_objects(remote)
    assert b"Later lessons" not in remote_objects(remote)
    status = json.loads(memlog_ok(a, "sync", "--status", "--json").output)
    assert status["unsent"] >= 2


def test_files_that_are_not_segments_are_refused(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    other = device_of(a)
    push_tampered(remote, "README.md", lambda data: b"# notes\n", new=True)
    push_tampered(remote, f"{other}/00000000000000000099.jsonl", lambda d: b"x", True, "120000")
    push_tampered(remote, f"{other}/00000000000000000199.jsonl", lambda d: d, True, "160000")
    done = sync_json(b, code=1)
    refused = "\n".join(str(r) for r in done["refused"])  # type: ignore[union-attr]
    assert refused.count("not a segment of a device") == 3, refused
    assert not (b / "events" / "README.md").exists()
    assert sorted(p.name for p in (b / "events" / other).iterdir()) == [SEGMENT]
    assert memlog(b, "verify").exit_code == 0


def test_a_damaged_copy_here_is_restored_and_kept(tmp_path: Path) -> None:
    a, b, remote = two_homes(tmp_path)
    path = b / "events" / device_of(a) / SEGMENT
    good = path.read_bytes()
    path.write_bytes(good.replace(b"Pin tool", b"Pin tocl"))  # bit rot on this machine
    done = sync_json(b, code=1)
    assert "checksum mismatch" in str(done["held"])  # never offered to the others
    assert path.read_bytes() == good
    kept = [r for r in seg.read_quarantine(b) if r.segment == f"{device_of(a)}/{SEGMENT}"]
    assert kept and b"Pin tocl" in base64.b64decode(kept[0].data)
    assert memlog(b, "verify").exit_code == 0
