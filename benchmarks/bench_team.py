"""Time ``memlog sync`` in a team: N homes of E entries each, sharing one bare remote.

    python benchmarks/bench_team.py [--devices 20] [--entries 500] [--repeats 3]
                                    [--compare DEVICES] [--memlog PATH] [--seed 1]
                                    [--baseline PYTHON]

Every home gets a synthetic log of ``--entries`` entries (``synthetic.py``,
three events per entry, vectors in the hashing space, a year of history that
ends a minute ago, one seed per home).  The last home's history ends eight
days ago: it plays the machine that was offline.  The team is built as it
would stand after every home ran ``memlog sync --init`` to one bare
repository on disk in turn and synced once more, so each holds every event:

* the first home runs ``memlog sync --init`` (it makes the key);
* every home the rounds do not use (all but the first, the second and the
  last) is a device whose log is signed, sealed and committed by memlog's own
  sync code (``local.offer``: checked, signed with a key of its own, sealed,
  its key and head put in the roster, as its first sync would), each commit
  on top of the last, and pushed to the remote; its home is then deleted;
* the second and the last home join with ``memlog sync --init --key``, the
  first and the second sync once more (every event taken), and every
  device's head is written again, having seen them all, as the second round
  of syncs would leave it.

So only the homes the rounds time run ``memlog sync``, and building the team
costs a few replays of the team's events instead of one per home.  The
commands are the installed ``memlog`` (``--memlog``, by default the one
beside this interpreter), with the hashing provider and the resident off,
each in a process of its own as a user runs them.

Then, ``--repeats`` rounds of, each timed:

* plain git: ``git fetch`` + ``git push`` of one small commit, in a clone of the
  same remote (the baseline: what any sync pays to talk to the remote);
* a sync that takes nothing (the first home, everything already taken);
* a home that just observed one entry (``memlog observe``) syncs it (sends one);
* another home syncs and takes that one event;
* the offline home writes one event dated a week back and sends it; the first
  home's sync takes this late event (it sorts before events it has folded):
  once a new lesson, once a lesson the team has held for a year, seen again;
* a new machine joins (``sync --init --key`` on an empty home), against
  ``memlog replay`` of the same events on that home right after: the whole
  join, and the part of it that built the views (``views_seconds`` of
  ``sync --json``).

Figures are medians over the rounds, with the median of each round's ratio to
the plain git fetch + push; the remote's size closes the table, and each
sync's ``views`` as ``sync --json`` reported it.  ``--compare DEVICES`` builds a
second team of DEVICES homes of the same size and times, round after round in
both teams, a sync on a home that just observed one entry: the large team's
median over the small one's.

``--baseline PYTHON`` builds a second team of the same size with the memlog
installed for ``PYTHON`` (an install of an earlier commit in a scratch venv:
its own sync code builds it, in a process of its own, and the ``memlog``
beside ``PYTHON`` runs its syncs), and times every round in both teams, one
after the other: the table gains that memlog's medians and the median of
each round's ratio (this / baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import synthetic

from memlog.eventlog import devices as device_dirs
from memlog.eventlog.events import EventBase, Observed
from memlog.eventlog.log import EventLog
from memlog.home import Home
from memlog.sync import keys, local, setup
from memlog.sync.repo import BRANCH, LOCAL_REF, Git
from memlog.sync.sealing import Sealer

try:  # the roster and signed lines (a memlog before them builds its team as it did)
    from memlog.sync import roster, signing, team
except ImportError:  # pragma: no cover - run by an earlier memlog as a baseline
    roster = signing = team = None  # type: ignore[assignment]
from memlog.vocabulary import DEFAULT_SPACES

SPACE = DEFAULT_SPACES["hashing"]
#: how far back the offline machine's history ends, and its late event's date
OFFLINE = timedelta(days=8)
LATE = timedelta(days=7)
ENV = {"MEMLOG_EMBEDDING_PROVIDER": SPACE.provider, "MEMLOG_RESIDENT_MINUTES": "0"}
GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


class Memlog:
    """The installed command line, run against one home at a time."""

    def __init__(self, command: str, work: Path) -> None:
        self.command = command
        self.cwd = work  # a folder with no project configuration

    def run(self, home: Path, *args: str) -> tuple[float, str]:
        env = {**os.environ, **ENV, "MEMLOG_HOME": str(home)}
        began = time.perf_counter()
        done = subprocess.run(
            [self.command, *args], env=env, cwd=self.cwd, capture_output=True, text=True
        )
        took = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"memlog {' '.join(args)} failed in {home}:\n{done.stderr}")
        return took, done.stdout

    def sync(self, home: Path, *args: str) -> tuple[float, dict[str, Any]]:
        took, out = self.run(home, "sync", *args, "--json")
        found: dict[str, Any] = json.loads(out)
        if found.get("refused") or found.get("held"):
            raise SystemExit(f"memlog sync in {home} refused or held: {found}")
        return took, found


class LateLog(synthetic.SyntheticLog):
    """A log whose next events carry a time of our choosing: a machine that wrote while
    offline, whose clock said so then."""

    def __init__(self, home: Path, when: datetime) -> None:
        super().__init__(home, seed=0, total=1)
        self.when = when

    def _restamped(self, event: Any) -> Any:
        ts = self.when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return msgspec.structs.replace(synthetic.SyntheticLog._restamped(self, event), ts=ts)


def generate(home: Path, entries: int, seed: int, end: datetime) -> None:
    """A synthetic log of ``entries`` entries whose year of history ends at ``end``."""
    synthetic.START_TIME = end - synthetic.SPAN
    synthetic.generate(home, entries, 3 * entries, seed, space=SPACE)


class Team:
    """``devices`` homes through one bare remote."""

    def __init__(
        self, work: Path, memlog: Memlog, devices: int, entries: int, seed: int,
        built: bool = False,
    ) -> None:  # fmt: skip
        self.work, self.memlog = work, memlog
        if built:  # built by another memlog (``--build``): its homes and key, as it left them
            kept = json.loads((work / "team.json").read_text())
            self.remote, self.key = work / "remote.git", kept["key"]
            self.homes = [Path(h) for h in kept["homes"]]
            self.plain, self.joined = work / "plain", 0
            return
        self.remote = work / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(self.remote)], check=True)
        self.homes = [work / f"home{i:03d}" for i in range(devices)]
        now = datetime.now(UTC) - timedelta(minutes=1)
        first, second, offline = self.homes[0], self.homes[1], self.homes[-1]
        generate(first, entries, seed * 1000, now)
        memlog.sync(first, "--init", str(self.remote))
        self.key = memlog.run(first, "sync", "--print-key")[1].strip()
        builder = Builder(work / "builder", self.key, str(self.remote))
        for i, home in enumerate(self.homes[2:-1], start=2):
            generate(home, entries, seed * 1000 + i, now)
            builder.commit(home)
            shutil.rmtree(home)
        builder.push()
        for i, home in dict.fromkeys([(1, second), (devices - 1, offline)]):  # one, of two
            generate(home, entries, seed * 1000 + i, now - OFFLINE if home == offline else now)
            memlog.sync(home, "--init", str(self.remote), "--key", self.key)
        for home in (first, second):
            memlog.sync(home)
        builder.heads()  # the others' second sync: their heads have seen every device
        for home in (first, second):
            held = memlog.sync(home)[1]["devices"]
            if held != devices:
                raise SystemExit(f"{home} holds {held} devices' events, not {devices}")
        shutil.rmtree(builder.home)
        self.plain = work / "plain"
        subprocess.run(
            ["git", "clone", "-q", "--branch", "memlog", str(self.remote), str(self.plain)],
            check=True,
        )
        self.joined = 0
        kept = {"key": self.key, "homes": [str(h) for h in self.homes]}
        (work / "team.json").write_text(json.dumps(kept))

    def plain_git(self, round_no: int) -> float:
        """``git fetch`` + ``git push`` of one small commit, in a plain clone of the remote."""
        (self.plain / "note.txt").write_text(f"round {round_no}\n")
        env = {**os.environ, **GIT_ENV}
        for args in (["add", "note.txt"], ["commit", "-qm", f"round {round_no}"]):
            subprocess.run(["git", "-C", str(self.plain), *args], check=True, env=env)
        began = time.perf_counter()
        for args in (["fetch", "-q", "origin"], ["push", "-q", "origin", "HEAD:refs/heads/plain"]):
            subprocess.run(["git", "-C", str(self.plain), *args], check=True, env=env)
        return time.perf_counter() - began

    def observe_and_sync(self, home: Path, round_no: int) -> tuple[float, dict[str, Any]]:
        description = f"Round {round_no}: check the remote's branch before pushing by hand."
        self.memlog.run(home, "observe", "--name", f"Team lesson {round_no}",
                        "--description", description, "--category", "patterns")  # fmt: skip
        return self.memlog.sync(home)

    def send_late(self, round_no: int, again: bool) -> None:
        """The offline home writes one event dated a week back and sends it: a new lesson,
        or (``again``) one the team has held for a year, seen again."""
        offline = self.homes[-1]
        when = datetime.now(UTC) - LATE + timedelta(seconds=round_no)
        event: EventBase = Observed(
            name=f"Offline lesson {round_no}",
            description=f"Written offline ({round_no}): pin the mirror before a release.",
            category="heuristics",
            reasoning="Found on a train, synced a week later.",
        )
        if again:
            event = next(r.event for r in EventLog(offline).read() if isinstance(r.event, Observed))
        LateLog(offline, when).append([event])
        self.memlog.sync(offline)

    def join(self) -> tuple[float, float, dict[str, Any]]:
        """A new machine joins: its ``sync --init``, then ``memlog replay`` on it."""
        self.joined += 1
        home = self.work / f"new{self.joined}"
        took, found = self.memlog.sync(home, "--init", str(self.remote), "--key", self.key)
        replay, _ = self.memlog.run(home, "replay")
        shutil.rmtree(home)
        return took, replay, found


class Builder:
    """Devices whose first sync is made with memlog's own sync code, in one repository
    pushed to the remote: each device's segments checked, signed, sealed and committed,
    its key and head put in the roster, on top of the devices before it, as if each had
    joined in turn."""

    def __init__(self, home: Path, key: str, remote: str) -> None:
        given = keys.given(key)
        assert given is not None
        self.home, self.remote = home, remote
        home.mkdir()
        self.git = Git(Home(home), "builder")
        self.git.init()
        self.sealer = Sealer(given, self.git, {})
        self.devices: list[str] = []
        self.signed: dict[str, tuple[Any, Any]] = {}  # device → (its key, its chain)
        self.roster_commit: str | None = None
        self.fetch()

    def fetch(self) -> None:
        """The local branch at the remote's (and the roster's, where there is one)."""
        fetched = setup.fetch(self.git, self.remote)
        commit = fetched.branch if hasattr(fetched, "branch") else fetched
        assert commit is not None
        self.git.run("update-ref", LOCAL_REF, commit)
        if team is not None:
            self.roster_commit = fetched.roster
            found, _ = team.remote_roster(self.git, self.sealer.key, fetched.roster)
            self.roster = found or roster.Roster()

    def push(self) -> None:
        refspecs = [f"{LOCAL_REF}:refs/heads/{BRANCH}"]
        if team is not None:
            self.put_heads()
            refspecs.append(f"{team.LOCAL}:refs/heads/{roster.BRANCH}")
        self.git.run("push", "--quiet", "--atomic", self.remote, *refspecs)

    def commit(self, home: Path) -> None:
        """Commit the log of ``home`` as its device's first sync would."""
        log = EventLog(home, command="sync")
        with log._locked():
            device_dirs.to_devices(log.home)
        own = device_dirs.device_id(log.home)
        files = local.Files(log.home, {})
        if team is None:
            offered = local.offer(self.git, files, own, self.sealer)  # type: ignore[call-arg]
        else:
            signer = signing.DeviceKey.generate(own)
            offered = local.offer(self.git, files, own, self.sealer, signer)
            self.signed[own] = (signer, offered.chain)
        if offered.problems:
            raise SystemExit(f"{home}: " + "; ".join(offered.problems))
        self.devices.append(own)

    def put_heads(self) -> None:
        """Each device built here into the roster with its head, having seen every device
        the local branch holds, committed on the roster's branch."""
        assert team is not None
        last = self.sealer.last_seqs(self.git.tree(self.git.ref(LOCAL_REF)))
        found = self.roster
        if found.legacy is None:
            found = msgspec.structs.replace(found, legacy={})
        for device, (signer, chain) in self.signed.items():
            seen = {d: s for d, s in last.items() if d != device}
            head = team.head_of(device, chain, seen, (), {}, None, found)
            found = team.with_head(found, signer, head, None)
        self.roster = found
        self.roster_commit = team.commit(self.git, self.sealer.key, found, self.roster_commit)

    def heads(self) -> None:
        """Write again the head of every device the builder committed, having seen every
        device the remote now holds (each device's second sync), and push it."""
        self.fetch()
        if team is not None:
            self.put_heads()
            self.git.run("push", "--quiet", self.remote, f"{team.LOCAL}:refs/heads/{roster.BRANCH}")
            return
        head = self.git.ref(LOCAL_REF)
        committed = self.git.tree(head)
        tree = {path: entry.oid for path, entry in committed.items()}
        for device in self.devices:
            self.sealer.finish(tree, device)  # type: ignore[call-arg]
        if tree != {path: entry.oid for path, entry in committed.items()}:
            commit = self.git.commit(
                self.git.write_tree(tree), [head] if head else [], "memlog: heads"
            )
            self.git.update_ref(LOCAL_REF, commit, head)
            self.git.run("push", "--quiet", self.remote, f"{LOCAL_REF}:refs/heads/{BRANCH}")


def remote_bytes(remote: Path) -> int:
    return sum(p.stat().st_size for p in remote.rglob("*") if p.is_file())


def one_round(
    team: Team, round_no: int, figures: dict[str, list[float]], views: dict[str, set[str]]
) -> None:
    def put(name: str, took: float, found: dict[str, Any] | None = None) -> None:
        figures.setdefault(name, []).append(took)
        if found is not None:
            views.setdefault(name, set()).add(str(found.get("views")))

    first, other = team.homes[0], team.homes[1]
    put(BASELINE, team.plain_git(round_no))
    put("sync that takes nothing", *team.memlog.sync(first))
    put("sync of a home that just observed one entry (sends it)",
        *team.observe_and_sync(first, round_no))  # fmt: skip
    put("sync that takes that one event", *team.memlog.sync(other))
    for again, name in ((False, "a new lesson"), (True, "a lesson held for a year, seen again")):
        team.send_late(round_no, again)
        put(f"sync that takes one late event dated a week back: {name}",
            *team.memlog.sync(first))  # fmt: skip
        team.memlog.sync(other)  # every home holds it before the next round
    joined, replay, found = team.join()
    put("a new machine joins (sync --init)", joined, found)
    put("… of which building its views", float(found["views_seconds"]))
    put("memlog replay of the same events on it", replay)


BASELINE = "plain git fetch + git push (baseline)"
RATIOS = {
    "a new machine joins (sync --init)": "memlog replay of the same events on it",
    "… of which building its views": "memlog replay of the same events on it",
}


def report(
    team: Team, figures: dict[str, list[float]], views: dict[str, set[str]],
    earlier: tuple[Team, dict[str, list[float]]] | None = None,
) -> None:  # fmt: skip
    """The table; with ``earlier`` (the baseline's team and figures), its medians and the
    median of each round's ratio to it."""
    rounds = len(figures[BASELINE])
    extra = " baseline | vs baseline |" if earlier else ""
    print(f"\n| {'median of ' + str(rounds):<56} | time | vs git fetch+push | views |{extra}")
    print("|---|---|---|---|" + ("---|---|" if earlier else ""))
    base = figures[BASELINE]
    for name, values in figures.items():
        ratio = statistics.median(v / b for v, b in zip(values, base, strict=True))
        against = RATIOS.get(name)
        note = ", ".join(sorted(views.get(name, ())))
        if against is not None:
            vs = statistics.median(v / r for v, r in zip(values, figures[against], strict=True))
            note += f"; {vs:.2f}× the replay"
        shown = "" if name == BASELINE else f"{ratio:.1f}×"
        line = f"| {name:<56} | {statistics.median(values):.2f} s | {shown} | {note} |"
        if earlier is not None:
            before = earlier[1][name]
            each = statistics.median(v / b for v, b in zip(values, before, strict=True))
            line += f" {statistics.median(before):.2f} s | {each:.2f}× |"
        print(line)
    size = f"| the remote's size | {remote_bytes(team.remote) / 1e6:.1f} MB | | |"
    if earlier is not None:
        old = remote_bytes(earlier[0].remote)
        size += f" {old / 1e6:.1f} MB | {remote_bytes(team.remote) / old:.2f}× |"
    print(size)


def compare(large: Team, small: Team, repeats: int) -> None:
    """A sync on a home that just observed one entry, in both teams, round after round."""
    took: dict[int, list[float]] = {len(large.homes): [], len(small.homes): []}
    for round_no in range(repeats):
        for team in (small, large):
            took[len(team.homes)].append(team.observe_and_sync(team.homes[0], 100 + round_no)[0])
    big, little = (statistics.median(took[len(t.homes)]) for t in (large, small))
    print(f"\nsync of a home that just observed one entry, median of {repeats}: "
          f"{len(large.homes)} homes {big:.2f} s, {len(small.homes)} homes {little:.2f} s, "
          f"ratio {big / little:.2f}×")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=20)
    parser.add_argument("--entries", type=int, default=500, help="entries per home")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--compare", type=int, metavar="DEVICES", help="a smaller team to compare")
    parser.add_argument("--memlog", default=str(Path(sys.executable).with_name("memlog")))
    parser.add_argument("--baseline", metavar="PYTHON", help="another memlog's interpreter")
    parser.add_argument("--build", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.devices < 2:
        raise SystemExit("--devices must be at least 2")
    if args.build:  # the baseline's team, built by its own memlog (``--baseline``)
        work = Path(args.build)
        Team(work / "team", Memlog(args.memlog, work), args.devices, args.entries, args.seed)
        return
    with tempfile.TemporaryDirectory(prefix="memlog-bench-team-") as tmp:
        memlog = Memlog(args.memlog, Path(tmp))
        began = time.perf_counter()
        team = Team(Path(tmp) / "large", memlog, args.devices, args.entries, args.seed)
        git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
        print(f"{args.devices} homes × {args.entries} entries ({args.devices * args.entries} in "
              f"all) built in {time.perf_counter() - began:.0f} s; {git}; "
              f"python {sys.version.split()[0]}")  # fmt: skip
        if args.compare:
            small = Team(Path(tmp) / "small", memlog, args.compare, args.entries, args.seed)
            compare(team, small, args.repeats)
            return
        earlier = built_by(args, Path(tmp)) if args.baseline else None
        figures: dict[str, list[float]] = {}
        views: dict[str, set[str]] = {}
        before: dict[str, list[float]] = {}
        for round_no in range(args.repeats):
            one_round(team, round_no, figures, views)
            if earlier is not None:
                one_round(earlier, round_no, before, {})
        report(team, figures, views, (earlier, before) if earlier is not None else None)


def built_by(args: argparse.Namespace, tmp: Path) -> Team:
    """The baseline's team: built by the memlog of ``args.baseline`` in a process of its
    own, its syncs run by the ``memlog`` beside that interpreter."""
    command = str(Path(args.baseline).with_name("memlog"))
    work = tmp / "baseline"
    work.mkdir()
    began = time.perf_counter()
    subprocess.run([args.baseline, __file__, "--build", str(work), "--devices", str(args.devices),
                    "--entries", str(args.entries), "--seed", str(args.seed), "--memlog", command],
                   check=True)  # fmt: skip
    print(f"the baseline's team built in {time.perf_counter() - began:.0f} s")
    return Team(work / "team", Memlog(command, tmp), args.devices, args.entries, args.seed, True)


if __name__ == "__main__":
    main()
