"""The local provider: parity with sentence-transformers, model lookup, verification,
and the copy of the model memlog ships."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memlog.embeddings import bert, local
from memlog.embeddings.local import (
    BUNDLED_DIR,
    BUNDLED_SHA256,
    HF_REPO_DIR,
    LocalProvider,
    resolve_model_dir,
    sha256_file,
    verify_model_dir,
)
from memlog.errors import ProviderUnavailable
from memlog.tests.support import FIXTURES

REFERENCE = FIXTURES / "embeddings" / "minilm-l6-v2-reference.json"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> LocalProvider:
    """The real model as memlog ships it (inside the package: never missing)."""
    loaded = LocalProvider(BUNDLED_DIR, cache_dir=tmp_path_factory.mktemp("stamp"))
    loaded.load()
    return loaded


def fake_model(directory: Path, weights: bytes = b"weights") -> Path:
    """A model directory whose files have the right names and the wrong contents."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.safetensors").write_bytes(weights)
    (directory / "tokenizer.json").write_text("{}")
    (directory / "config.json").write_text("{}")
    return directory


@pytest.fixture
def pin_fake(monkeypatch: pytest.MonkeyPatch):
    """Pin the expected digests to those of a fake model directory."""

    def pin(directory: Path) -> None:
        expected = {name: sha256_file(directory / name)[:16] for name in local.EXPECTED_SHA256}
        monkeypatch.setattr(local, "EXPECTED_SHA256", expected)

    return pin


# -- parity with sentence-transformers ---------------------------------------


def test_reference_pins_the_same_files(reference: dict) -> None:
    assert reference["weights_sha256"].startswith(local.EXPECTED_SHA256["model.safetensors"])
    assert reference["tokenizer_sha256"].startswith(local.EXPECTED_SHA256["tokenizer.json"])
    assert (reference["dimensions"], reference["max_seq_length"]) == (384, local.MAX_TOKENS)


def test_every_reference_item_matches(provider: LocalProvider, reference: dict) -> None:
    texts = [item["text"] for item in reference["items"]]
    expected = np.array([item["embedding"] for item in reference["items"]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    cosines = np.sum(provider.embed_batch(texts) * expected, axis=1)
    worst = int(np.argmin(cosines))
    assert cosines[worst] >= 0.999, f"{texts[worst][:40]!r}: cosine {cosines[worst]:.5f}"


def test_reference_covers_the_hard_cases(provider: LocalProvider, reference: dict) -> None:
    texts = [item["text"] for item in reference["items"]]
    assert len(_model(provider).tokenizer.encode(max(texts, key=len))) == 256
    assert "" in texts and any(not text.isascii() for text in texts)


def test_batch_and_single_give_the_same_vectors(provider: LocalProvider, reference: dict) -> None:
    texts = [item["text"] for item in reference["items"]]
    batch = provider.embed_batch(texts)
    single = np.array([provider.embed(text) for text in texts])
    np.testing.assert_allclose(batch, single, atol=1e-5)


def test_embedding_is_deterministic(provider: LocalProvider, tmp_path: Path) -> None:
    text = "SQLite WAL mode lets readers proceed while one writer appends."
    again = LocalProvider(provider.model_path, cache_dir=tmp_path)
    assert np.array_equal(provider.embed(text), provider.embed(text))
    assert np.array_equal(provider.embed(text), again.embed(text))


def test_vectors_are_unit_float32_rows(provider: LocalProvider) -> None:
    vectors = provider.embed_batch(["one", "two words", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert provider.embed_batch([]).shape == (0, 384)


def test_erf_matches_the_standard_library() -> None:
    x = np.linspace(-5, 5, 2001, dtype=np.float32)
    expected = np.array([math.erf(value) for value in x.astype(np.float64)])
    np.testing.assert_allclose(bert.erf(x.copy()), expected, atol=1e-6)


def test_long_texts_are_grouped_apart_from_short_ones() -> None:
    # within 25% of the group's shortest: 7 is too long for a group that starts at 5
    assert list(bert.length_groups([256, 5, 7, 6, 250])) == [[1, 3], [2], [4, 0]]
    groups = list(bert.length_groups([200] * 50))
    assert sorted(sum(groups, [])) == list(range(50))
    assert all(len(group) * 200 <= bert._GROUP_TOKENS for group in groups)


# -- finding the model --------------------------------------------------------


def test_explicit_path_wins_over_the_cache(tmp_path: Path) -> None:
    fake_model(tmp_path / "hf" / "hub" / HF_REPO_DIR / "snapshots" / "abc")
    explicit = fake_model(tmp_path / "explicit")
    assert resolve_model_dir(explicit, {"HF_HOME": str(tmp_path / "hf")}) == explicit


def test_explicit_path_is_never_passed_over(tmp_path: Path) -> None:
    fake_model(tmp_path / "hf" / "hub" / HF_REPO_DIR / "snapshots" / "abc")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProviderUnavailable, match="lacks model.safetensors"):
        resolve_model_dir(tmp_path / "empty", {"HF_HOME": str(tmp_path / "hf")})


def test_hf_home_cache_is_found(tmp_path: Path) -> None:
    snapshot = fake_model(tmp_path / "hf" / "hub" / HF_REPO_DIR / "snapshots" / "abc")
    assert resolve_model_dir(None, {"HF_HOME": str(tmp_path / "hf")}) == snapshot


def test_hf_cache_prefers_refs_main_and_skips_incomplete_snapshots(tmp_path: Path) -> None:
    repo = tmp_path / "hub" / HF_REPO_DIR
    (repo / "snapshots" / "aaa").mkdir(parents=True)  # weights never downloaded
    fake_model(repo / "snapshots" / "bbb")
    main = fake_model(repo / "snapshots" / "ccc")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("ccc\n")
    assert resolve_model_dir(None, {"HF_HUB_CACHE": str(tmp_path / "hub")}) == main
    (repo / "refs" / "main").write_text("aaa\n")
    assert resolve_model_dir(None, {"HF_HUB_CACHE": str(tmp_path / "hub")}).name == "bbb"


def test_without_a_cache_the_bundled_copy_is_used(tmp_path: Path) -> None:
    assert resolve_model_dir(None, {"HF_HOME": str(tmp_path / "no-cache")}) == BUNDLED_DIR


def test_the_cache_wins_over_the_bundled_copy(tmp_path: Path) -> None:
    snapshot = fake_model(tmp_path / "hf" / "hub" / HF_REPO_DIR / "snapshots" / "abc")
    assert resolve_model_dir(None, {"HF_HOME": str(tmp_path / "hf")}) == snapshot


def test_a_copy_of_the_bundled_directory_is_a_valid_model_path(tmp_path: Path) -> None:
    for name in BUNDLED_SHA256:
        (tmp_path / name).symlink_to(BUNDLED_DIR / name)
    assert resolve_model_dir(tmp_path, {}) == tmp_path
    verify_model_dir(tmp_path, tmp_path / "home")


def test_nothing_found_names_the_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "BUNDLED_DIR", tmp_path / "missing")
    with pytest.raises(ProviderUnavailable, match="memory_embedding_model_path"):
        resolve_model_dir(None, {"HF_HOME": str(tmp_path)})


# -- the copy memlog ships ----------------------------------------------------


def test_bundled_files_match_their_pins(tmp_path: Path) -> None:
    assert {name: sha256_file(BUNDLED_DIR / name) for name in BUNDLED_SHA256} == BUNDLED_SHA256
    verify_model_dir(BUNDLED_DIR, tmp_path)


def test_bundled_copy_keeps_the_licence_and_says_what_changed() -> None:
    assert "Apache License" in (BUNDLED_DIR / "LICENSE").read_text()
    notice = (BUNDLED_DIR / "NOTICE").read_text()
    assert "all-MiniLM-L6-v2" in notice and "int8" in notice and "Apache" in notice


def test_a_changed_bundled_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    for name in BUNDLED_SHA256:
        (copy / name).write_bytes((BUNDLED_DIR / name).read_bytes())
    (copy / "vocab.txt").write_text("[PAD]\n")
    with pytest.raises(ProviderUnavailable, match=r"vocab\.txt has sha256"):
        verify_model_dir(copy, tmp_path / "home")


# -- verifying it -------------------------------------------------------------


def test_wrong_weights_are_refused_naming_the_file(tmp_path: Path) -> None:
    model_dir = fake_model(tmp_path / "model")
    with pytest.raises(ProviderUnavailable, match=r"model\.safetensors has sha256 .*refusing"):
        verify_model_dir(model_dir, tmp_path / "home")


def test_provider_refuses_a_wrong_model_on_first_embed(tmp_path: Path) -> None:
    provider = LocalProvider(fake_model(tmp_path / "model"), cache_dir=tmp_path / "home")
    with pytest.raises(ProviderUnavailable, match="model.safetensors"):
        provider.embed("anything")


def test_wrong_tokenizer_is_refused_naming_the_file(tmp_path: Path, pin_fake) -> None:
    model_dir = fake_model(tmp_path / "model")
    pin_fake(model_dir)
    (model_dir / "tokenizer.json").write_text('{"changed": true}')
    with pytest.raises(ProviderUnavailable, match=r"tokenizer\.json has sha256"):
        verify_model_dir(model_dir, tmp_path / "home")


def test_stamp_skips_hashing_an_unchanged_file(
    tmp_path: Path, pin_fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_dir = fake_model(tmp_path / "model")
    pin_fake(model_dir)
    verify_model_dir(model_dir, tmp_path / "home")
    assert (tmp_path / "home" / local.STAMP_FILE).is_file()
    monkeypatch.setattr(local, "sha256_file", _must_not_hash)
    verify_model_dir(model_dir, tmp_path / "home")


def test_stamp_rechecks_a_file_changed_in_place(tmp_path: Path, pin_fake) -> None:
    model_dir = fake_model(tmp_path / "model", weights=b"weights")
    pin_fake(model_dir)
    verify_model_dir(model_dir, tmp_path / "home")
    weights = model_dir / "model.safetensors"
    before = weights.stat()
    weights.write_bytes(b"WEIGHTS")  # same size, mtime put back
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ProviderUnavailable, match="model.safetensors"):
        verify_model_dir(model_dir, tmp_path / "home")


def test_stamp_rechecks_a_replaced_file(tmp_path: Path, pin_fake) -> None:
    model_dir = fake_model(tmp_path / "model")
    pin_fake(model_dir)
    verify_model_dir(model_dir, tmp_path / "home")
    fake_model(tmp_path / "other", weights=b"other weights")
    os.replace(tmp_path / "other" / "model.safetensors", model_dir / "model.safetensors")
    with pytest.raises(ProviderUnavailable, match="model.safetensors"):
        verify_model_dir(model_dir, tmp_path / "home")


def test_damaged_stamp_is_ignored_and_rewritten(tmp_path: Path, pin_fake) -> None:
    model_dir = fake_model(tmp_path / "model")
    pin_fake(model_dir)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / local.STAMP_FILE).write_text('{"version": 1, "files": [')
    verify_model_dir(model_dir, tmp_path / "home")
    stamp = json.loads((tmp_path / "home" / local.STAMP_FILE).read_text())
    assert str((model_dir / "model.safetensors").resolve()) in stamp["files"]


def test_unwritable_stamp_only_costs_time(tmp_path: Path, pin_fake) -> None:
    model_dir = fake_model(tmp_path / "model")
    pin_fake(model_dir)
    (tmp_path / "home").write_text("a file where the home should be")
    verify_model_dir(model_dir, tmp_path / "home")


def test_import_loads_nothing() -> None:
    code = (
        "import sys, memlog.embeddings.local as m; m.LocalProvider(); "
        "assert 'threadpoolctl' not in sys.modules, 'threadpoolctl imported'; "
        "assert m._open_verified.cache_info().currsize == 0"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _model(provider: LocalProvider) -> bert.Encoder:
    provider.load()
    assert provider._model is not None
    return provider._model


def _must_not_hash(path: Path) -> str:
    raise AssertionError(f"{path} hashed again although unchanged")
