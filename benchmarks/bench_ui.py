"""How fast the page answers on a large home, against the library calls it makes.

    python benchmarks/bench_ui.py --entries 10000 --events 100000 --repeats 7

Writes a synthetic log (``synthetic.py``) into a temporary home, catches the
views up, then times each page through Starlette's test client (the guard,
the route, the API call, the template) and, as its baseline in the same
process, the library call alone.  Prints medians in milliseconds and the
ratio page / baseline (what HTML rendering and the guard add).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from synthetic import generate  # the script's own folder is on sys.path

from memlog.api import browsing
from memlog.api.reading import Filters
from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.projections.sqlite_view import queries
from memlog.ui.app import create_app
from memlog.workspace import Workspace

PORT = 40999
TOKEN = "bench"


def median_ms(action: Callable[[], object], repeats: int) -> float:
    action()  # warm
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    from starlette.testclient import TestClient

    with tempfile.TemporaryDirectory() as work:
        home = Path(work) / "home"
        generate(home, args.entries, args.events, seed=1)
        ws = Workspace.open(Path(work), home=home)
        catch_up(home, ws.space)
        view = browsing.View(ws, home)
        known = queries.entries(Home(home), vectors=False)
        some = known[len(known) // 2]
        client = TestClient(create_app(ws, TOKEN, PORT, Path(work) / "s"),
                            base_url=f"http://127.0.0.1:{PORT}")  # fmt: skip
        client.cookies.set(f"memlog_ui_{PORT}", TOKEN)
        cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("list", lambda: client.get("/"), lambda: browsing.entries(view, Filters())),
            ("list filtered", lambda: client.get("/", params={"category": "patterns"}),
             lambda: browsing.entries(view, Filters(category="patterns"))),
            ("search", lambda: client.get("/", params={"q": "retry network timeout"}),
             lambda: browsing.ranked(view, "retry network timeout", Filters())),
            ("entry detail", lambda: client.get(f"/entry/{some.id}"),
             lambda: browsing.detail(view, some.id)),
            ("log", lambda: client.get("/log"), lambda: browsing.events(view, (), 100)),
        ]  # fmt: skip
        print(f"{args.entries} entries, {args.events} events, median of {args.repeats}")
        print(f"{'page':<14} {'page ms':>9} {'api ms':>9} {'ratio':>6}")
        for name, page, api in cases:
            answer = page()
            assert getattr(answer, "status_code", 200) == 200, name
            shown, alone = median_ms(page, args.repeats), median_ms(api, args.repeats)
            print(f"{name:<14} {shown:>9.1f} {alone:>9.1f} {shown / alone:>6.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
