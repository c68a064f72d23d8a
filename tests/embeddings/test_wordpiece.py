"""The pure-Python WordPiece tokenizer gives the ids of the model's own tokenizer.

The expected ids were produced by ``tokenizers`` 0.23 with all-MiniLM-L6-v2's
tokenizer.json (truncation at 256, no padding); they cover case folding,
identifiers and punctuation, special tokens written in the text, accents,
CJK, full-width letters, emoji, zero-width and no-break spaces, a word over
100 characters, the empty text and control whitespace.
"""

from __future__ import annotations

import pytest

from memlog.embeddings.local import BUNDLED_DIR
from memlog.embeddings.wordpiece import WordPieceTokenizer

EXPECTED = {
    "SQLite WAL mode: readers proceed while one writer appends.": [
        101, 29296, 4221, 24547, 5549, 1024, 8141, 10838, 2096, 2028, 3213, 10439, 10497, 2015,
        1012, 102,
    ],
    "camelCase_and-snake/paths.py [SEP] [MASK]": [
        101, 19130, 18382, 1035, 1998, 1011, 7488, 1013, 10425, 1012, 1052, 2100, 102, 103, 102,
    ],
    "Ünïcödé naïve café — 東京 ＡＢＣ 😀 \u200b zero\u00a0width": [
        101, 27260, 15743, 7668, 1517, 1879, 1755, 100, 100, 5717, 9381, 102,
    ],
    "x" * 120 + " end": [101, 100, 2203, 102],
    "": [101, 102],
    "élan\tTabs\nnewlines\r\n": [101, 3449, 2319, 21628, 2015, 2047, 12735, 102],
}  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab_file(str(BUNDLED_DIR / "vocab.txt"), max_length=256)


@pytest.mark.parametrize("text", sorted(EXPECTED))
def test_ids_equal_the_model_tokenizer(tokenizer: WordPieceTokenizer, text: str) -> None:
    assert tokenizer.encode(text) == EXPECTED[text]


def test_long_text_is_cut_at_256_with_the_separator_kept(tokenizer: WordPieceTokenizer) -> None:
    ids = tokenizer.encode("word " * 400)
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102


def test_batch_equals_one_by_one(tokenizer: WordPieceTokenizer) -> None:
    texts = sorted(EXPECTED)
    assert tokenizer.encode_batch(texts) == [tokenizer.encode(t) for t in texts]
