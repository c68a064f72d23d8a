"""What a prompt's recall ranks: the prompt's first words, when they say enough.

A prompt of fewer than ``MIN_PROMPT_TERMS`` distinct terms ("yes", "go on",
"thanks!") names no topic: no recall is ranked for it, and the hook asks no
one.  A long prompt (a pasted log) says little more past its first
``MAX_PROMPT_WORDS`` words.  Light: the hook decides before loading anything
else.
"""

from __future__ import annotations

from memlog.projections.terms import terms

#: the fewest distinct terms a prompt needs for a recall
MIN_PROMPT_TERMS = 3
#: the words of a prompt its recall ranks
MAX_PROMPT_WORDS = 200


def prompt_text(prompt: str) -> str | None:
    """The text a prompt's recall ranks, or None when the prompt says too little."""
    text = " ".join(prompt.split()[:MAX_PROMPT_WORDS])
    return text if len(set(terms(text))) >= MIN_PROMPT_TERMS else None
