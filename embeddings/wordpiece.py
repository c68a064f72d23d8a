"""A pure-Python BERT WordPiece tokenizer matching ``tokenizers`` for all-MiniLM-L6-v2.

It reproduces the pipeline stored in the model's ``tokenizer.json``:

* special tokens (``[PAD] [UNK] [CLS] [SEP] [MASK]``) written literally in the
  text are matched first, case-sensitively, and are not normalised;
* ``BertNormalizer(clean_text, handle_chinese_chars, strip_accents=None ->
  lowercase, lowercase)``: drop NUL, U+FFFD and control/format/unassigned
  characters (category C*, except tab/newline/CR), map whitespace to a space,
  surround CJK ideographs with spaces, NFD + drop non-spacing marks (Mn), then
  lowercase each character;
* ``BertPreTokenizer``: split on whitespace, isolate every punctuation
  character (ASCII punctuation or Unicode category P*);
* ``WordPiece``: greedy longest-match-first with ``##`` continuations; a word
  of more than 100 characters, or one that cannot be covered, is ``[UNK]``;
* ``[CLS] … [SEP]`` with truncation to ``max_length`` (256) tokens.

Everything that depends on a character alone is computed once per distinct
character and kept in a ``str.translate`` table, so a text is normalised and
pre-split by a single C-level ``translate`` plus ``split``; WordPiece results
are cached per word.

Why not the ``tokenizers`` package: it pulls ``huggingface_hub`` (and with it
``hf_xet``, ``fsspec``, ``filelock``, ``tqdm``: ~35 MB installed) into every
install, and on the knowledge bank's 265 texts this encodes in 0.3-0.4× its
time (12-17 ms against 40 ms) and loads in 7 ms against 18 ms.  Checked
against ``tokenizers`` 0.23 with the model's tokenizer.json on every code
point, 20,000 random Unicode mixes, the knowledge bank and the reference
texts: no mismatch (``tests/embeddings/test_wordpiece.py`` keeps a sample).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TextIO

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_SPECIAL_RE = re.compile("(" + "|".join(re.escape(s) for s in SPECIAL) + ")")

# Rust char::is_whitespace (Unicode White_Space) plus \t \n \r
_WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_CJK = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip
#: code points whose Unicode data differ between Python's unicodedata and the
#: tables compiled into tokenizers 0.23 (older Unicode), found by the exhaustive
#: check in check_tokenizer.py against unicodedata 14.0.0 (Python 3.11); gen_overrides.py
#: (first, last, kind): K kept as a letter, I isolated like punctuation, D dropped
_OVERRIDE_RANGES = (
    (0x61D, 0x61D, "K"),
    (0x7FD, 0x7FD, "K"),
    (0x890, 0x891, "K"),
    (0x898, 0x89F, "K"),
    (0x8CA, 0x8E2, "K"),
    (0x9FD, 0x9FE, "K"),
    (0xA76, 0xA76, "K"),
    (0xAFA, 0xAFF, "K"),
    (0xB55, 0xB55, "K"),
    (0xC04, 0xC04, "K"),
    (0xC3C, 0xC3C, "K"),
    (0xC77, 0xC77, "K"),
    (0xC84, 0xC84, "K"),
    (0xD00, 0xD00, "K"),
    (0xD3B, 0xD3C, "K"),
    (0xD81, 0xD81, "K"),
    (0xEBA, 0xEBA, "K"),
    (0x166D, 0x166D, "I"),
    (0x1734, 0x1734, "D"),
    (0x180F, 0x180F, "K"),
    (0x1885, 0x1886, "K"),
    (0x1ABF, 0x1ACE, "K"),
    (0x1B7D, 0x1B7E, "K"),
    (0x1DF6, 0x1DFB, "K"),
    (0x2E43, 0x2E4F, "K"),
    (0x2E52, 0x2E5D, "K"),
    (0xA82C, 0xA82C, "K"),
    (0xA8C5, 0xA8C5, "K"),
    (0xA8FF, 0xA8FF, "K"),
    (0xA9BD, 0xA9BD, "K"),
    (0x10D24, 0x10D27, "K"),
    (0x10EAB, 0x10EAD, "K"),
    (0x10F46, 0x10F50, "K"),
    (0x10F55, 0x10F59, "K"),
    (0x10F82, 0x10F89, "K"),
    (0x11070, 0x11070, "K"),
    (0x11073, 0x11074, "K"),
    (0x110C2, 0x110C2, "K"),
    (0x110CD, 0x110CD, "K"),
    (0x111C9, 0x111C9, "I"),
    (0x111CF, 0x111CF, "K"),
    (0x1123E, 0x1123E, "K"),
    (0x1133B, 0x1133B, "K"),
    (0x11438, 0x1143F, "K"),
    (0x11442, 0x11444, "K"),
    (0x11446, 0x11446, "K"),
    (0x1144B, 0x1144F, "K"),
    (0x1145A, 0x1145B, "K"),
    (0x1145D, 0x1145E, "K"),
    (0x11660, 0x1166C, "K"),
    (0x116B9, 0x116B9, "K"),
    (0x1182F, 0x11837, "K"),
    (0x11839, 0x1183B, "K"),
    (0x1193B, 0x1193C, "K"),
    (0x1193E, 0x1193E, "K"),
    (0x11943, 0x11946, "K"),
    (0x119D4, 0x119D7, "K"),
    (0x119DA, 0x119DB, "K"),
    (0x119E0, 0x119E0, "K"),
    (0x119E2, 0x119E2, "K"),
    (0x11A01, 0x11A0A, "K"),
    (0x11A33, 0x11A38, "K"),
    (0x11A3B, 0x11A47, "K"),
    (0x11A51, 0x11A56, "K"),
    (0x11A59, 0x11A5B, "K"),
    (0x11A8A, 0x11A96, "K"),
    (0x11A98, 0x11A9C, "K"),
    (0x11A9E, 0x11AA2, "K"),
    (0x11C30, 0x11C36, "K"),
    (0x11C38, 0x11C3D, "K"),
    (0x11C3F, 0x11C3F, "K"),
    (0x11C41, 0x11C45, "K"),
    (0x11C70, 0x11C71, "K"),
    (0x11C92, 0x11CA7, "K"),
    (0x11CAA, 0x11CB0, "K"),
    (0x11CB2, 0x11CB3, "K"),
    (0x11CB5, 0x11CB6, "K"),
    (0x11D31, 0x11D36, "K"),
    (0x11D3A, 0x11D3A, "K"),
    (0x11D3C, 0x11D3D, "K"),
    (0x11D3F, 0x11D45, "K"),
    (0x11D47, 0x11D47, "K"),
    (0x11D90, 0x11D91, "K"),
    (0x11D95, 0x11D95, "K"),
    (0x11D97, 0x11D97, "K"),
    (0x11EF3, 0x11EF4, "K"),
    (0x11EF7, 0x11EF8, "K"),
    (0x11FFF, 0x11FFF, "K"),
    (0x12FF1, 0x12FF2, "K"),
    (0x13430, 0x13438, "K"),
    (0x16E97, 0x16E9A, "K"),
    (0x16F4F, 0x16F4F, "K"),
    (0x16FE2, 0x16FE2, "K"),
    (0x16FE4, 0x16FE4, "K"),
    (0x1CF00, 0x1CF2D, "K"),
    (0x1CF30, 0x1CF46, "K"),
    (0x1E000, 0x1E006, "K"),
    (0x1E008, 0x1E018, "K"),
    (0x1E01B, 0x1E021, "K"),
    (0x1E023, 0x1E024, "K"),
    (0x1E026, 0x1E02A, "K"),
    (0x1E130, 0x1E136, "K"),
    (0x1E2AE, 0x1E2AE, "K"),
    (0x1E2EC, 0x1E2EF, "K"),
    (0x1E944, 0x1E94A, "K"),
    (0x1E95E, 0x1E95F, "K"),
)
_OVERRIDES: dict[int, str] = {
    cp: {"K": chr(cp), "I": f" {chr(cp)} ", "D": ""}[kind]
    for first, last, kind in _OVERRIDE_RANGES
    for cp in range(first, last + 1)
}


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs")


def char_map(cp: int) -> str:
    """What one input character becomes: '' dropped, ' ' a split, ' x ' isolated."""
    if cp in _OVERRIDES:
        return _OVERRIDES[cp]
    ch = chr(cp)
    if cp == 0 or cp == 0xFFFD or _is_control(ch):
        return ""
    if ch in _WHITESPACE:
        return " "
    cjk = _is_cjk(cp)
    stripped = "".join(
        c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c) != "Mn"
    )
    out = []
    for c in stripped.lower():
        if c in _WHITESPACE:
            out.append(" ")
        elif _is_punct(c):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = "".join(out)
    return f" {text} " if cjk else text


class _Table(dict[int, str]):
    """A ``str.translate`` table that computes each character's mapping on first sight."""

    def __missing__(self, cp: int) -> str:
        value = char_map(cp)
        self[cp] = value
        return value


class WordPieceTokenizer:
    """ids for texts, equal to ``tokenizers`` with the model's tokenizer.json."""

    def __init__(self, vocab: Sequence[str], max_length: int = 256, max_word_chars: int = 100):
        self.vocab = dict(zip(vocab, range(len(vocab)), strict=True))
        self.unk = self.vocab["[UNK]"]
        self.cls = self.vocab["[CLS]"]
        self.sep = self.vocab["[SEP]"]
        self.max_length = max_length
        self.max_word_chars = max_word_chars
        self._table = _Table()
        for cp in range(128):
            self._table[cp] = char_map(cp)
        self._words: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_vocab_file(cls, path: str, **kwargs: int) -> WordPieceTokenizer:
        with open(path, encoding="utf-8") as handle:
            return cls(_lines(handle), **kwargs)

    @classmethod
    def from_tokenizer_json(cls, path: str, **kwargs: int) -> WordPieceTokenizer:
        import json

        with open(path, encoding="utf-8") as handle:
            vocab = json.load(handle)["model"]["vocab"]
        ordered = sorted(vocab, key=vocab.__getitem__)
        return cls(ordered, **kwargs)

    def word_ids(self, word: str) -> tuple[int, ...]:
        """WordPiece ids of one pre-tokenised word (cached)."""
        found = self._words.get(word)
        if found is not None:
            return found
        vocab = self.vocab
        if len(word) > self.max_word_chars:
            ids: tuple[int, ...] = (self.unk,)
        else:
            pieces = []
            start, n = 0, len(word)
            while start < n:
                end = n
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    token = vocab.get(piece)
                    if token is not None:
                        pieces.append(token)
                        break
                    end -= 1
                else:
                    pieces = [self.unk]
                    break
                start = end
            ids = tuple(pieces)
        if len(self._words) < 200_000:
            self._words[word] = ids
        return ids

    def _text_ids(self, text: str, out: list[int]) -> None:
        word_ids = self.word_ids
        for word in text.translate(self._table).split(" "):
            if word:
                out.extend(word_ids(word))

    def encode(self, text: str) -> list[int]:
        """``[CLS] ids… [SEP]``, truncated to ``max_length``."""
        out = [self.cls]
        if "[" in text and _SPECIAL_RE.search(text):
            for i, part in enumerate(_SPECIAL_RE.split(text)):
                if i % 2:
                    out.append(self.vocab[part])
                elif part:
                    self._text_ids(part, out)
        else:
            self._text_ids(text, out)
        limit = self.max_length - 1
        if len(out) > limit:
            del out[limit:]
        out.append(self.sep)
        return out

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]


def _lines(handle: TextIO) -> list[str]:
    """The file's lines without their ends (one read and one split: a tenth of the time
    of a loop over 30k lines, which every process pays before its first query)."""
    lines = handle.read().split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines
