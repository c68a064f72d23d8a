"""The team's side of one sync: the roster taken, this device's key and head, what it
was asked (an eviction, the redaction policy, requests of other devices), and the
remote sealed again with a new team key.

Each step works on the sync's ``job.Exchange``; ``engine`` runs them in order.
"""

from __future__ import annotations

import functools
import time

import msgspec

from memlog.eventlog import devices
from memlog.eventlog.ids import utc_now
from memlog.sync import restore, sealed, setup, signing, team, versions
from memlog.sync.job import Exchange, once
from memlog.sync.repo import LOCAL_REF, SyncError
from memlog.sync.roster import Roster
from memlog.sync.sealed import FORMAT_FILE, SUFFIX, Key, Unopenable
from memlog.sync.sealing import device_of, is_head
from memlog.sync.setup import Fetched
from memlog.sync.signing import DeviceKey
from memlog.sync.state import Asking


def rotated_note(job: Exchange) -> str:
    return (
        f"made a new team key and sealed {job.url} with it (kept in this home's "
        "sync.key; the old one no longer opens what is pushed from now on).  Every "
        "other machine's sync now stops, saying the key changed, until it runs `memlog sync "
        f"--init {job.url} --key -` with the key `memlog sync --print-key` prints here (or "
        "MEMLOG_SYNC_KEY set to it); the remote's history from before stays sealed with the "
        "old key: make a new repository and --init it if that must go too"
    )


def resealed(job: Exchange, made: Key) -> tuple[str | None, str | None]:
    """The local branch and the roster sealed again with the new key ``made``, each
    committed on top of what was just pushed: (branch commit, roster commit)."""
    git, old = job.git, job.sealer.key
    head = git.ref(LOCAL_REF)
    tree = git.tree(head)
    blobs = git.blobs([e.oid for e in tree.values() if e.kind == "blob"])
    files: dict[str, str] = {}
    for path, entry in sorted(tree.items()):
        data = blobs.get(entry.oid, b"")
        if path == FORMAT_FILE:
            files[path] = git.write_blob(sealed.format_file(made, job.own, utc_now()))
        elif path.endswith(SUFFIX):
            segment = path.rsplit("/", 1)[1][: -len(SUFFIX)]
            files[path] = git.write_blob(sealed.reseal(old, made, device_of(path), segment, data))
        elif is_head(path):
            try:
                files[path] = git.write_blob(sealed.reseal_head(old, made, device_of(path), data))
            except Unopenable:
                continue  # it never opened: nothing of that device to keep
    branch = None
    if head is not None:
        branch = git.commit(git.write_tree(files), [head], "memlog: a new team key")
        git.update_ref(LOCAL_REF, branch, head)
    roster_commit = team.commit(git, made, job.team.roster, git.ref(team.REMOTE))
    return branch, roster_commit


def check_asks(job: Exchange) -> None:
    """SyncError, before anything changes, for an eviction this sync cannot make."""
    evict = job.asks.evict
    if evict is None:
        return
    if evict == job.own:
        raise SyncError("a machine cannot evict itself: run memlog sync --evict on another one")
    listed = set(job.trust.keys) | set(job.trust.roster.legacy or {})
    if evict not in listed and evict not in devices.device_dirs(job.log.home):
        raise SyncError(f"no device {evict} in the team (memlog sync --status lists them)")


def take_roster(job: Exchange, fetched: Fetched) -> None:
    """The remote's roster merged into this machine's pins: what a sync trusts from now."""
    if fetched.roster is not None and fetched.roster == job.state.roster_commit:
        theirs, why = None, ""  # the roster this machine left there: in its pins already
    else:
        theirs, why = team.remote_roster(job.git, job.sealer.key, fetched.roster)
    earlier = job.team.trust if job.team.roster.devices else team.take(job.state.pins, None).trust
    job.team = team.take(job.state.pins, theirs, job.own)
    job.sealer.trust = job.team.trust
    job.sealer.format_bytes = setup.format_bytes(job.git, fetched.branch, job.sealer.key)
    said = [why] if why else []
    if fetched.roster is None and fetched.branch is not None and job.state.pins.devices:
        said.append("the remote has no roster (its branch memlog-roster was deleted?): this "
                    "machine's pinned one is pushed back")  # fmt: skip
    job.outcome.refused += once(job, [*said, *job.team.refused])
    job.outcome.notes += once(job, [*job.team.notes, *team.changes(earlier, job.trust, job.own)])


def take_back(job: Exchange, branch: str | None) -> None:
    """This device's lines the remote holds that this home lacks, taken back; a home that
    cannot sign as its device (the roster holds another key of it) becomes a new one."""
    mine = job.trust.of(job.own)
    kept = signing.stored(job.log.home)
    keyless = mine is not None and (
        kept is None or kept.device != job.own
        or kept.public.public_bytes_raw() != mine.key.public_bytes_raw()
    )  # fmt: skip
    restored = restore.take_back(job.git, job.log, job.own, branch, job.sealer, keyless)
    job.outcome.notes += [restored.said] if restored.said else []
    job.own = job.outcome.device = job.sealer.own = restored.own


def signer_of(job: Exchange) -> DeviceKey:
    key, made = signing.for_device(job.log.home, job.own)
    if made:
        job.outcome.notes.append(
            "made this device's signing key (kept in sync.device.key, readable by you "
            "only, never sent): its public key goes in the team's roster, and every line this "
            "device sends is signed with it"
        )
    return key


def check_not_evicted(job: Exchange) -> None:
    eviction = job.trust.evictions.get(job.own)
    if eviction is not None:
        raise SyncError(
            f"this device ({job.own}) was evicted from the team by device {eviction.by} "
            f"({eviction.at[:10]}): every machine refuses its lines after seq {eviction.after}; "
            "its events stay here.  To sync again, ask a machine of the team for a new key "
            "and join as a new device: move this home's sync.device.key aside, then "
            "memlog sync --init URL --key -"
        )


def roster_to_push(
    job: Exchange, head: str | None, theirs: str | None, theirs_branch: str | None
) -> str | None:
    """The roster to push: the merged one, with this device's head, the evictions and
    policy asked for, and the old lines' last sequences when the remote takes this format;
    committed onto the roster branch (the commit, or the remote's when nothing changed)."""
    assert job.signer is not None and job.offered is not None and job.offered.chain is not None
    last = job.sealer.last_seqs(job.git.tree(head))
    previous = job.trust.heads.get(job.own)
    requests = team.requests_of(job.offered.asks, previous, job.trust)
    job.outcome.notes += once(job, [
        f"device {r.target} declined this home's request to take text out of its seq {r.seq}: "
        "this home keeps its own copy without it"
        for r in requests if team.answer_to(job.trust, r) == "declined"
    ])  # fmt: skip
    answers = _answers(job)
    seen = {device: seq for device, seq in last.items() if device != job.own}
    head_now = team.head_of(job.own, job.offered.chain, seen, requests, answers, previous,
                            job.team.roster)  # fmt: skip
    found = team.with_head(job.team.roster, job.signer, head_now, previous)
    found = _asked_changes(job, found, last)
    unsigned = {d: s for d, s in last.items() if d != job.own and job.trust.of(d) is None}
    if job.offered.chain.first > 1:
        unsigned[job.own] = job.offered.chain.first - 1
    found = team.with_legacy(found, unsigned)
    job.team = team.take(found, None, job.own)
    job.sealer.trust = job.team.trust
    claimed = functools.partial(job.sealer.claimed, job.git.tree(theirs_branch))
    job.outcome.refused += once(job, team.check_heads(job.trust, last, job.own, claimed))
    if not found.devices:
        return theirs
    return team.commit(job.git, job.sealer.key, found, theirs)


def _asked_changes(job: Exchange, found: Roster, last: dict[str, int]) -> Roster:
    """``found`` with the eviction and the redaction policy this sync was asked for."""
    from memlog.sync.roster import Eviction, Policy, sign_eviction, sign_policy

    assert job.signer is not None
    evict, policy = job.asks.evict, job.asks.redactions
    if evict is not None and evict not in found.evicted:
        eviction = Eviction(evict, job.own, utc_now(), last.get(evict, 0))
        found = msgspec.structs.replace(
            found, evicted={**found.evicted, evict: sign_eviction(job.signer, eviction)}
        )
    if policy is not None and job.trust.redactions != policy:
        made = Policy(policy, job.own, utc_now(), time.time_ns() // 1000)  # type: ignore[arg-type]
        found = msgspec.structs.replace(found, policy=sign_policy(job.signer, made))
    return found


def _answers(job: Exchange) -> dict[str, str]:
    """This device's answers to the requests other devices make of it (the ones waiting
    for its owner go into ``outcome.asked``)."""
    asked = team.asked_of(job.trust, job.own)
    state, asks = job.state, job.asks
    answers = {
        a.request.id: state.answers[a.request.id] for a in asked if a.request.id in state.answers
    }
    lines = _own_lines(job, {a.request.seq for a in asked}) if asked else {}
    job.outcome.asked = []
    for item in asked:
        ident = item.request.id
        status = team.checked(item, lines.get(item.request.seq))
        if status == "done" or answers.get(ident) == "declined":
            answers[ident] = answers.get(ident) or "done"
        elif status or ident in asks.decline or "all" in asks.decline:
            answers[ident] = "declined"
            why = status or "declined by this device's owner"
            job.outcome.notes += once(job, [f"declined device {item.by}'s request to take text "
                                             f"out of seq {item.request.seq}: {why}"])  # fmt: skip
        else:
            now = job.trust.redactions == "any" or ident in state.confirmed
            now = now or ident in asks.confirm or "all" in asks.confirm
            job.outcome.asked.append(Asking(id=ident, by=item.by, seq=item.request.seq,
                                            event=item.request.event, line=item.request.line,
                                            applied_without_asking=now))  # fmt: skip
    state.answers = answers
    state.confirmed = [a.id for a in job.outcome.asked if a.applied_without_asking]
    return answers


def _own_lines(job: Exchange, seqs: set[int]) -> dict[int, versions.Line]:
    """This device's lines at ``seqs``, as ``events/`` holds them."""
    found = {}
    for rel, path in sorted(job.files.paths().items()):
        if rel.startswith(job.own + "/"):
            try:
                lines = versions.parse(rel, path.read_bytes())
            except versions.Refused:
                continue
            found.update({line.seq: line for line in lines if line.seq in seqs})
    return found
