"""The structured-output model interface, what a call costs, and the chain of models.

``StructuredModel.ask(system, prompt, schema, timeout)`` makes one call and
returns an ``Answer``: the JSON object the model gave (``None`` when it gave
none, or not one that parses: the caller counts that as an invalid answer
and may ask again) and the ``Usage`` of the call.  It raises
``ProviderUnavailable`` when the model cannot be used here (no CLI, no key,
no server), ``RateLimited`` when it refused for rate or load, and
``ProviderError`` for any other failure.

Costs are estimated from the tokens each API reports, at the published
prices per million tokens; ``claude -p`` reports its own estimate, which is
used as it is.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, NamedTuple

from memlog.errors import ProviderError, ProviderUnavailable, RateLimited
from memlog.eventlog.events import Usage

#: dollars per million (input, output) tokens, by model name prefix
PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-haiku-5": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "claude-sonnet": (3.0, 15.0),
    "claude-opus": (15.0, 75.0),
}
#: what an unknown Claude model is assumed to cost (Haiku's price)
DEFAULT_PRICE = PRICES["claude-haiku-4-5"]


def price_of(model: str) -> tuple[float, float]:
    for prefix, price in PRICES.items():
        if model.startswith(prefix):
            return price
    return DEFAULT_PRICE


def cost_micros(model: str, tokens_in: int, tokens_out: int) -> int:
    """The estimated cost in millionths of a dollar (a price per million tokens is
    conveniently millionths of a dollar per token)."""
    price_in, price_out = price_of(model)
    return round(tokens_in * price_in + tokens_out * price_out)


class Answer(NamedTuple):
    #: the JSON object answered (None: none was given, or it did not parse)
    data: Any
    usage: Usage
    #: why there is no data
    problem: str = ""


class StructuredModel(abc.ABC):
    """A model asked for one JSON object matching a schema."""

    name: ClassVar[str]
    #: whether calls cost money (the daily budget applies)
    paid: ClassVar[bool] = True
    model: str = ""

    @abc.abstractmethod
    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        """One call; see the module's description for what it returns and raises."""

    def estimate(self, tokens_in: int, tokens_out: int) -> int:
        """The cost in millionths of a dollar of a call of this size."""
        return cost_micros(self.model, tokens_in, tokens_out) if self.paid else 0

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the model holds."""


Factory = Callable[[], StructuredModel]


class Chain:
    """Models tried in order: one that is unavailable is skipped for the rest of the run."""

    def __init__(self, factories: Sequence[tuple[str, Factory]]) -> None:
        self.factories = list(factories)
        self.models: dict[str, StructuredModel] = {}
        self.unavailable: dict[str, str] = {}

    @property
    def empty(self) -> bool:
        return not self.factories

    def current(self) -> StructuredModel:
        """The first model that can be used; ``ProviderUnavailable`` naming why none can."""
        for name, factory in self.factories:
            if name in self.unavailable:
                continue
            if name not in self.models:
                try:
                    self.models[name] = factory()
                except ProviderUnavailable as exc:
                    self.unavailable[name] = str(exc)
                    continue
            return self.models[name]
        reasons = "; ".join(self.unavailable.values()) or "extraction is off"
        raise ProviderUnavailable(f"no extraction provider available: {reasons}")

    def ask(self, system: str, prompt: str, schema: dict[str, Any], timeout: float) -> Answer:
        """Ask the first usable model; move on when one turns out unavailable."""
        while True:
            model = self.current()
            try:
                return model.ask(system, prompt, schema, timeout)
            except ProviderUnavailable as exc:
                self.unavailable[model.name] = str(exc)

    def close(self) -> None:
        for model in self.models.values():
            model.close()


__all__ = [
    "Answer",
    "Chain",
    "ProviderError",
    "ProviderUnavailable",
    "RateLimited",
    "StructuredModel",
    "cost_micros",
]
