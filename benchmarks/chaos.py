"""A model-based chaos run: three homes, one bare remote, random operations, kills and clocks.

    python benchmarks/chaos.py [--minutes 30] [--seed N] [--keep] [--memlog PATH]

Every step runs a batch of operations at once, two or more processes per
home: ``observe`` (one entry, or a ``--from`` batch), ``import`` of a
knowledge-bank file, the SessionStart and UserPromptSubmit hooks, ``catch-up``,
``sync``, ``redact``, ``retire``, ``replay``, ``list`` and ``search``; some of
them get SIGKILL at a random moment.  Between batches a step may copy one home
over another (``cp -a``, once the one copied over has synced), delete a
segment of a home (once it has synced), damage the middle of a ``memory.db``,
or set a home's wall clock hours or a year off (``sitecustomize`` in the
processes of that home shifts ``time.time``).

After every step each home is compared with a replay of its own log: its
views caught up (``memlog catch-up``, which checks every page and block),
then rebuilt aside and compared, content for content, as ``memlog verify``
compares them; every observation a command acknowledged (exit 0) is in the
home's log (or, for a home copied over, was synced first and is checked at
the end); reading commands and the hooks never fail.  At the end every home
syncs until nothing moves (the first time through confirming, as their
owner would, the redactions other homes asked of its lines, the team letting
any machine confirm them: a device no home writes as any more never will),
and all of them must hold the same events and views, every acknowledged
observation, and no text a redaction removed.

The run prints its seed; ``--seed`` runs the same operations again (the
moments of the kills and of the processes' interleaving are the machine's).
Exit 0 when nothing was found.  ``tests/test_chaos.py`` runs it for about two
minutes in the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HOMES = 3
HOUR = 3600.0
YEAR = 365 * 24 * HOUR
SKEWS = (0.0, 0.0, 0.0, 3 * HOUR, -5 * HOUR, -YEAR, YEAR)
CATEGORIES = ("patterns", "anti-patterns", "heuristics")
SHIM = """
import os, time
_skew = float(os.environ.get("MEMLOG_CHAOS_SKEW", "0") or 0)
if _skew:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _skew
    time.time_ns = lambda: _time_ns() + int(_skew * 1e9)
"""
KB = """# Patterns

Approaches that have worked well.

---

## Development Patterns
{entries}
"""
KB_ENTRY = """
### Pattern: {name}
{description}
- Used in: Feature #{feature}
- Observation count: {count}
"""


class Found(Exception):
    """What the run found: the step, and why."""


@dataclass
class Home:
    path: Path
    project: Path
    skew: float = 0.0
    #: entry ids of observations a command acknowledged here
    acknowledged: set[str] = field(default_factory=set)


@dataclass
class Run:
    folder: Path
    memlog: str
    rng: random.Random
    homes: list[Home]
    remote: str
    shim: Path
    log: list[str] = field(default_factory=list)
    #: acknowledged anywhere (checked in every home once they have synced)
    everywhere: set[str] = field(default_factory=set)
    #: texts a redaction removed (no file of any home may hold them at the end)
    redacted: set[str] = field(default_factory=set)
    secrets: list[str] = field(default_factory=list)
    descriptions: list[str] = field(default_factory=list)
    counter: int = 0
    steps: int = 0
    kills: int = 0
    ops: int = 0

    def env(self, home: Home) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_")}
        env.update(
            MEMLOG_HOME=str(home.path), MEMLOG_EMBEDDING_PROVIDER="hashing",
            MEMLOG_EXTRACTION_PROVIDER="off", MEMLOG_RESIDENT_MINUTES="0",
            MEMLOG_CHAOS_SKEW=str(home.skew), MEMLOG_LOCK_WAIT_SECONDS="60",
            PYTHONPATH=os.pathsep.join([str(self.shim), env.get("PYTHONPATH", "")]),
            HOME=str(self.folder / "user-home"), CLAUDE_CONFIG_DIR=str(self.folder / "claude"),
        )  # fmt: skip
        return env

    def say(self, line: str) -> None:
        self.log.append(line)


@dataclass
class Op:
    """One process of a batch: its home, what it runs, and what its success means."""

    home: Home
    name: str
    args: list[str]
    stdin: bytes | None = None
    #: entry ids an exit 0 acknowledges
    acknowledges: set[str] = field(default_factory=set)
    #: a read or a hook: it must not fail
    must_succeed: bool = False
    killable: bool = True
    process: subprocess.Popen[bytes] | None = None
    killed: bool = False


def content_hash(description: str) -> str:
    from memlog.eventlog.events import content_hash as hashed

    return hashed(description)


# -- the operations -----------------------------------------------------------------------


def new_lesson(run: Run, secret: bool = False) -> str:
    run.counter += 1
    token = f"Sekret{run.counter}x{run.rng.randrange(10**6)}" if secret else ""
    words = ("cache", "lock", "retry", "parser", "schema", "deploy", "index", "queue")
    pick = run.rng.sample(words, 3)
    text = f"Lesson {run.counter}: the {pick[0]} keeps the {pick[1]} away from the {pick[2]}"
    text += f" {token}." if secret else "."
    if secret:
        run.secrets.append(token)  # (observed once: a redaction must leave it nowhere)
    else:
        run.descriptions.append(text)
    return text


def lesson_for(run: Run) -> str:
    if run.descriptions and run.rng.random() < 0.3:
        return run.rng.choice(run.descriptions)
    return new_lesson(run, secret=run.rng.random() < 0.15)


def observe(run: Run, home: Home) -> Op:
    text = lesson_for(run)
    args = ["observe", "--name", text[:24], "--description", text, "--category",
            run.rng.choice(CATEGORIES), "--no-redact"]  # fmt: skip
    return Op(home, "observe", args, acknowledges={content_hash(text)})


def observe_batch(run: Run, home: Home) -> Op:
    texts = [lesson_for(run) for _ in range(run.rng.randint(2, 5))]
    rows = [{"name": t[:24], "description": t, "category": run.rng.choice(CATEGORIES)}
            for t in texts]  # fmt: skip
    path = run.folder / f"batch-{run.counter}-{run.rng.randrange(10**9)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = {content_hash(t) for t in texts}
    return Op(home, "observe --from", ["observe", "--from", str(path), "--no-redact"],
              acknowledges=ids)  # fmt: skip


def import_kb(run: Run, home: Home) -> Op:
    texts = [new_lesson(run) for _ in range(run.rng.randint(1, 3))]
    entries = "".join(
        KB_ENTRY.format(name=f"Imported {t[:20]}", description=t, feature=run.rng.randint(1, 99),
                        count=run.rng.randint(1, 4))
        for t in texts
    )  # fmt: skip
    folder = run.folder / f"kb-{run.counter}-{run.rng.randrange(10**9)}"
    folder.mkdir()
    (folder / "patterns.md").write_text(KB.format(entries=entries))
    ids = {content_hash(t) for t in texts}
    return Op(home, "import", ["import", str(folder)], acknowledges=ids)


def session_start(run: Run, home: Home) -> Op:
    payload = {"session_id": f"s-{run.rng.randrange(10**9)}", "cwd": str(home.project),
               "hook_event_name": "SessionStart", "source": "startup",
               "transcript_path": str(home.project / "t.jsonl")}  # fmt: skip
    return Op(home, "hook session-start", ["hook", "session-start"],
              json.dumps(payload).encode(), must_succeed=True)  # fmt: skip


def user_prompt(run: Run, home: Home) -> Op:
    payload = {"session_id": f"s-{run.rng.randrange(10**9)}", "cwd": str(home.project),
               "hook_event_name": "UserPromptSubmit",
               "prompt": "how should the parser keep the cache and the lock apart?"}  # fmt: skip
    return Op(home, "hook user-prompt", ["hook", "user-prompt"],
              json.dumps(payload).encode(), must_succeed=True)  # fmt: skip


def simple(name: str, *args: str, must: bool = False) -> Callable[[Run, Home], Op]:
    def made(run: Run, home: Home) -> Op:
        return Op(home, name, [name, *args] if not args or args[0] != "-" else [name],
                  must_succeed=must)  # fmt: skip

    return made


def redact(run: Run, home: Home) -> Op:
    held = [s for s in run.secrets if s not in run.redacted]
    if not held:
        return observe(run, home)
    token = run.rng.choice(held)
    return Op(home, "redact", ["redact", "--match", token, "--reason", "chaos"])


def retire(run: Run, home: Home) -> Op:
    if not run.descriptions:
        return observe(run, home)
    entry = content_hash(run.rng.choice(run.descriptions))
    return Op(home, "retire", ["retire", entry, "--reason", "chaos"])


def search(run: Run, home: Home) -> Op:
    return Op(home, "search", ["search", "cache", "lock"], must_succeed=True)


OPERATIONS: list[tuple[float, Callable[[Run, Home], Op]]] = [
    (6, observe), (2, observe_batch), (1, import_kb), (2, session_start), (1, user_prompt),
    (1, simple("catch-up")), (3, simple("sync")), (0.6, redact), (1, retire),
    (0.5, simple("replay")), (1, simple("list", "--limit", "5", must=True)), (1, search),
]  # fmt: skip


def pick(run: Run) -> Callable[[Run, Home], Op]:
    weights = [w for w, _ in OPERATIONS]
    return run.rng.choices([f for _, f in OPERATIONS], weights)[0]


# -- running a batch ----------------------------------------------------------------------


def start(run: Run, op: Op) -> None:
    op.process = subprocess.Popen(
        [run.memlog, *op.args], env=run.env(op.home), cwd=op.home.project,
        stdin=subprocess.PIPE if op.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    if op.stdin is not None and op.process.stdin is not None:
        try:
            op.process.stdin.write(op.stdin)
            op.process.stdin.close()
        except BrokenPipeError:
            pass
        op.process.stdin = None  # (written: ``communicate`` has nothing more to send)


def batch(run: Run) -> None:
    ops: list[Op] = []
    for home in run.homes:
        for _ in range(run.rng.randint(2, 3)):  # two or more processes per home at once
            ops.append(pick(run)(run, home))
    kills = {id(op): run.rng.uniform(0.05, 2.0) for op in ops if run.rng.random() < 0.2}
    for op in ops:
        start(run, op)
    began = time.monotonic()
    while any(op.process is not None and op.process.poll() is None for op in ops):
        now = time.monotonic() - began
        for op in ops:
            due = kills.get(id(op))
            if due is None or op.killed or now < due:
                continue
            if op.process and op.process.poll() is None:  # (counted once: it may not be reaped yet)
                op.process.send_signal(signal.SIGKILL)
                op.killed = True
                run.kills += 1
        time.sleep(0.01)
    for op in ops:
        settle(run, op)


def settle(run: Run, op: Op) -> None:
    assert op.process is not None
    out, err = op.process.communicate()
    code = op.process.returncode
    run.ops += 1
    home = run.homes.index(op.home)
    run.say(f"  home {home}: {op.name}{' (killed)' if op.killed else ''} -> {code}")
    if op.killed:
        return
    text = (out + err).decode("utf-8", "replace")
    if "Traceback" in text or "internal error" in text:
        raise Found(f"home {home}: {op.name} crashed: {text[-2000:]}")
    if op.must_succeed and code != 0:
        raise Found(f"home {home}: {op.name} exited {code}: {text[-1000:]}")
    if op.name.startswith("hook"):
        check_hook(home, op.name, out)
    if code == 0:
        op.home.acknowledged |= op.acknowledges
        if op.name == "redact":
            run.redacted.add(op.args[2])
    elif op.name == "sync" and code == 1 and not benign_sync(text):
        said = [ln for ln in text.splitlines() if "refus" in ln or "held" in ln or "hold" in ln]
        raise Found(f"home {home}: sync refused or held something: {said or text[-1500:]}")
    elif op.name.startswith("observe") and code != 0 and "waiting for the log" not in text:
        raise Found(f"home {home}: {op.name} exited {code}: {text[-1000:]}")


def benign_sync(text: str) -> bool:
    """A sync that exits 1 for what concurrent work here explains (another sync running, a
    file written here meanwhile, an append in progress), or for what the run did to this
    home on purpose and the same sync restored (a copy of another device's segment that a
    copied or damaged home held otherwise than its device wrote it)."""
    if "changed here during sync" in text or "another sync is still running" in text:
        return True
    lines = text.splitlines()
    held = [ln for ln in lines if ln.startswith("held back: ")]
    refused = [ln for ln in lines if ln.startswith("refused and quarantined: ")]
    restored = "(this home's copy is in the quarantine file)"
    return bool(held) and not refused and all(ln.endswith(restored) for ln in held)


def check_hook(home: int, name: str, out: bytes) -> None:
    """A start prints one JSON line; a prompt one, or nothing when it adds nothing."""
    lines = out.decode("utf-8", "replace").splitlines()
    if len(lines) != 1 and not (name == "hook user-prompt" and not lines):
        raise Found(f"home {home}: {name} printed {len(lines)} lines")
    for line in lines:
        json.loads(line)


# -- the steps between batches -----------------------------------------------------------


def sync_now(run: Run, home: Home) -> bool:
    done = subprocess.run([run.memlog, "sync"], env=run.env(home), cwd=home.project,
                          capture_output=True)  # fmt: skip
    return done.returncode == 0


def copy_home(run: Run) -> None:
    source, target = run.rng.sample(run.homes, 2)
    if not sync_now(run, target):
        return
    run.everywhere |= target.acknowledged
    settled(target.path)
    shutil.rmtree(target.path)
    shutil.copytree(source.path, target.path, symlinks=True)
    target.acknowledged = set(source.acknowledged)
    run.say(f"  copied home {run.homes.index(source)} over home {run.homes.index(target)}")


def delete_segment(run: Run) -> None:
    home = run.rng.choice(run.homes)
    if not sync_now(run, home):
        return
    segments = sorted((home.path / "events").glob("*/*.jsonl"))
    if len(segments) < 2:
        return
    victim = run.rng.choice(segments)
    run.everywhere |= home.acknowledged
    home.acknowledged = set()  # (the synced ones come back with the next sync)
    victim.unlink()
    run.say(f"  deleted {victim.relative_to(home.path)} of home {run.homes.index(home)}")


def damage_database(run: Run) -> None:
    home = run.rng.choice(run.homes)
    path = home.path / "memory.db"
    if not path.exists() or path.stat().st_size < 64 << 10:
        return
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, min(middle + 16384, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    run.say(f"  damaged the middle of memory.db of home {run.homes.index(home)}")


def skew_clock(run: Run) -> None:
    home = run.rng.choice(run.homes)
    home.skew = run.rng.choice(SKEWS)
    run.say(f"  home {run.homes.index(home)}'s clock is now {home.skew / HOUR:+.0f} h off")


BETWEEN: list[tuple[float, Callable[[Run], None]]] = [
    (0.08, copy_home), (0.08, delete_segment), (0.08, damage_database), (0.12, skew_clock),
]  # fmt: skip


# -- the checks ---------------------------------------------------------------------------


def settled(home: Path) -> None:
    """Wait for what the hooks left running in the background (their recorders)."""
    from memlog.home import Home as MemlogHome
    from memlog.hooks.recorder import settled as recorded

    recorded(MemlogHome(home), timeout=60)


def check_home(run: Run, index: int) -> None:
    home = run.homes[index]
    settled(home.path)
    done = subprocess.run([run.memlog, "catch-up"], env=run.env(home), cwd=home.project,
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise Found(f"home {index}: catch-up exited {done.returncode}: {done.stderr[-1000:]}")
    from memlog.home import Home as MemlogHome
    from memlog.projections.audit import audit
    from memlog.vocabulary import DEFAULT_SPACES

    found = audit(MemlogHome(home.path), DEFAULT_SPACES["hashing"])
    if not found.clean:
        raise Found(f"home {index}: the views differ from a replay: {found.drift[:5]}")
    missing = home.acknowledged - entry_ids(home.path)
    if missing:
        raise Found(f"home {index}: acknowledged observations missing: {sorted(missing)[:5]}")


def entry_ids(home: Path) -> set[str]:
    from memlog.eventlog.events import Observed
    from memlog.eventlog.log import EventLog

    return {r.event.entry_id for r in EventLog(home).read() if isinstance(r.event, Observed)}


def final_round(run: Run) -> None:
    """Every home syncs until nothing moves; then all agree and nothing is lost."""
    for home in run.homes:
        home.skew = home.skew if abs(home.skew) < YEAR else home.skew  # clocks stay as they are
    for round_no in range(3):
        for home in run.homes:
            settled(home.path)
            # the first time through, each owner confirms the redactions asked of its lines,
            # and the team lets any machine confirm them (a device no home writes as any more,
            # its home copied over, never will)
            confirm = ["--confirm", "all"] if round_no == 0 else []
            if round_no == 0 and home is run.homes[0]:
                confirm += ["--redactions", "any"]
            done = subprocess.run([run.memlog, "sync", *confirm], env=run.env(home),
                                  cwd=home.project, capture_output=True, text=True)  # fmt: skip
            if done.returncode != 0 and not benign_sync(done.stdout + done.stderr):
                raise Found(f"final sync of {home.path.name}: {done.stdout + done.stderr}")
    wanted = run.everywhere | {i for home in run.homes for i in home.acknowledged}
    digests = []
    for index, home in enumerate(run.homes):
        check_home(run, index)
        lost = wanted - entry_ids(home.path)
        if lost:
            raise Found(f"home {index} lacks acknowledged observations: {sorted(lost)[:5]}")
        digests.append(logical(home.path))
        for text in run.redacted:
            holder = holding(home.path, text)
            if holder:
                raise Found(f"home {index}: {holder} still holds redacted text {text}")
    if any(d != digests[0] for d in digests[1:]):
        raise Found("the homes did not converge: " + str([sorted(d.items())[:2] for d in digests]))


def logical(home: Path) -> dict[str, str]:
    """Every event id and the views' content (what two homes holding the same events agree
    on, whatever order they came in)."""
    import hashlib

    from memlog.eventlog.log import EventLog
    from memlog.home import Home as MemlogHome
    from memlog.projections.markdown_view.writer import markdown_files
    from memlog.projections.sqlite_view.digest import sqlite_digest

    events = sorted(f"{r.event.id}:{r.event.seq}" for r in EventLog(home).read())
    found = {"events": hashlib.sha256("\n".join(events).encode()).hexdigest()}
    found["memory.db"] = sqlite_digest(MemlogHome(home))
    found.update(markdown_files(MemlogHome(home)))
    return found


def holding(home: Path, text: str) -> str:
    for path in home.rglob("*"):
        if "sync.git" in path.parts or not path.is_file() or path.is_symlink():
            continue
        if text.encode() in path.read_bytes():
            return str(path.relative_to(home))
    return ""


# -- the run ------------------------------------------------------------------------------


def setup(folder: Path, memlog: str, seed: int) -> Run:
    shim = folder / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SHIM)
    remote = folder / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
    homes = []
    for n in range(HOMES):
        project = folder / f"project-{n}"
        (project / ".claude").mkdir(parents=True)
        homes.append(Home(folder / f"home-{n}", project))
    (folder / "user-home").mkdir()
    run = Run(folder, memlog, random.Random(seed), homes, str(remote), shim)
    key = ""
    for home in homes:
        op = observe(run, home)
        subprocess.run([memlog, *op.args], env=run.env(home), cwd=home.project, check=True,
                       capture_output=True)  # fmt: skip
        home.acknowledged |= op.acknowledges
        args = ["sync", "--init", run.remote, *(["--key", key] if key else [])]
        subprocess.run([memlog, *args], env=run.env(home), cwd=home.project, check=True,
                       capture_output=True)  # fmt: skip
        if not key:
            printed = subprocess.run([memlog, "sync", "--print-key"], env=run.env(home),
                                     capture_output=True, text=True, check=True)  # fmt: skip
            key = printed.stdout.strip()
    return run


def step(run: Run) -> None:
    run.steps += 1
    run.say(f"step {run.steps}")
    for chance, between in BETWEEN:
        if run.rng.random() < chance:
            between(run)
    batch(run)
    for index in range(HOMES):
        check_home(run, index)


def chaos(seed: int, seconds: float, memlog: str, keep: bool = False) -> tuple[bool, Run]:
    """One run of ``seconds`` from ``seed`` (then the final round); whether nothing was
    found, and the run."""
    folder = Path(tempfile.mkdtemp(prefix=f"memlog-chaos-{seed}-"))
    run = setup(folder, memlog, seed)
    began = time.monotonic()
    try:
        while time.monotonic() - began < seconds:
            step(run)
        final_round(run)
    except Found as found:
        print("\n".join(run.log[-40:]), flush=True)
        print(f"seed {seed}: FOUND at step {run.steps}: {found}", flush=True)
        print(f"the homes are kept in {folder}", flush=True)
        return False, run
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return True, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the homes of a clean run")
    found = shutil.which("memlog") or str(Path(sys.executable).with_name("memlog"))
    parser.add_argument("--memlog", default=found)
    args = parser.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    runs = clean = 0
    while time.monotonic() < deadline or runs == 0:
        seed = args.seed if args.seed is not None else random.randrange(1 << 30)
        left = max(deadline - time.monotonic(), 30.0)
        length = left if args.seed is not None else min(left, 300.0)
        print(f"seed {seed}: running {length:.0f} s", flush=True)
        ok, run = chaos(seed, length, args.memlog, args.keep)
        runs, clean = runs + 1, clean + ok
        print(f"seed {seed}: {run.steps} steps, {run.ops} operations, {run.kills} killed: "
              f"{'nothing found' if ok else 'FOUND'}", flush=True)  # fmt: skip
        if not ok or args.seed is not None:
            break
    print(f"{clean} of {runs} runs found nothing")
    sys.exit(0 if clean == runs else 1)


if __name__ == "__main__":
    main()
