"""The hook with the local all-MiniLM-L6-v2 query embedding, at 10k entries.

Fresh processes, interleaved: ``python -c "import numpy"`` (the floor any
numpy-using hook pays), the hook without a query embedding (vector weight
0), and the hook embedding its query with the bundled local model — cold
(the verification stamp removed first, so the model files are hashed) and
warm (stamp in place, as on every start after the first).  The 10k entries
carry synthetic unit vectors in the local space (their content does not
change the cost).  Then the same starts answered by the home's resident
ranker (``memlog hook resident``, started by a first start and warmed),
interleaved with the same baseline.  Then the time to import the larger public knowledge-bank
fixture with write-time embeddings, against the same import with embedding
unavailable.

    python benchmarks/bench_local_hook.py --repeats 15
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from memlog.home import Home
from memlog.projections.runner import catch_up
from memlog.vocabulary import DEFAULT_SPACE

HERE = Path(__file__).resolve().parent
FIXTURE = HERE.parent / "tests" / "fixtures" / "knowledge-bank-6bb5ea25"


def sibling(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def stamps(home: Path) -> list[Path]:
    return [p for p in home.iterdir() if "stamp" in p.name or "verified" in p.name]


def import_seconds(home: Path, provider: str) -> float:
    env = {**os.environ, "MEMLOG_HOME": str(home), "MEMLOG_EMBEDDING_PROVIDER": provider}
    env["MEMLOG_KEYWORD_PROVIDER"] = "local"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "memlog", "import", str(FIXTURE)], env=env,
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - started


def resident_runs(
    bench: ModuleType, home: Path, work: Path, with_vec: Path, no_vec: Path, repeats: int
) -> None:
    """Starts answered by a warm resident, against ``import numpy`` in the same rounds."""
    from memlog.hooks import resident

    env = {**bench.hook_env(home), "MEMLOG_RESIDENT_MINUTES": "30"}
    bench.run_once(bench.HOOK, bench.payload(with_vec, 0), with_vec, env)  # starts it
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and resident.call(Home(home), "status") is None:
        time.sleep(0.1)  # it answers once warmed
    runs = {
        "python -c 'import numpy'": (bench.NUMPY, b"", work, env),
        "resident, no query embedding": (bench.HOOK, bench.payload(no_vec, 1), no_vec, env),
        "resident + local query": (bench.HOOK, bench.payload(with_vec, 1), with_vec, env),
    }
    try:
        wall, _ = bench.interleaved(runs, repeats)
        status = resident.call(Home(home), "status") or {}
    finally:
        resident.call(Home(home), "stop")
    base = statistics.median(wall["python -c 'import numpy'"])
    print(f"resident ranker: it served {status.get('served', 0)} of {2 * repeats} starts")
    for name, values in wall.items():
        median = statistics.median(values)
        print(f"  {name:<30} {median:7.1f} ms [min {min(values):6.1f}]  ×{median / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    bench = sibling("bench_hook")
    synthetic = sibling("synthetic")
    work = Path(tempfile.mkdtemp(prefix="memlog-bench-local-"))
    try:
        home = work / "home"
        synthetic.generate(home, entries=args.entries, events=3 * args.entries, seed=1)
        catch_up(home, DEFAULT_SPACE)
        with_vec = bench.prepare_project(work, "vec", "memory_embedding_provider: local\n")
        no_vec = bench.prepare_project(
            work, "novec", "memory_vector_weight: 0\nmemory_fusion_vector_weight: 0\n"
        )
        env = bench.hook_env(home)
        print("check:", bench.check_hook_output(home, with_vec))
        runs = {
            "python -c 'import numpy'": (bench.NUMPY, b"", work, env),
            "hook, no query embedding": (bench.HOOK, bench.payload(no_vec, 1), no_vec, env),
            "hook + local query (warm)": (bench.HOOK, bench.payload(with_vec, 1), with_vec, env),
        }
        wall, _ = bench.interleaved(runs, args.repeats)
        cold = []
        for n in range(max(3, args.repeats // 3)):
            for path in stamps(home):
                path.unlink()
            cold.append(bench.run_once(bench.HOOK, bench.payload(with_vec, n), with_vec, env)[0])
        base = statistics.median(wall["hook, no query embedding"])
        for name, values in [*wall.items(), ("hook + local query (cold)", cold)]:
            median = statistics.median(values)
            print(f"  {name:<30} {median:7.1f} ms [min {min(values):6.1f}]  ×{median / base:.2f}")
        resident_runs(bench, home, work, with_vec, no_vec, args.repeats)
        print("import of", FIXTURE.name)
        for provider in ("local", "openai"):  # openai has no key here: embedding unavailable
            fresh = work / f"import-{provider}"
            took = import_seconds(fresh, provider)
            print(f"  with {provider:<8} embeddings {took * 1000:7.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
