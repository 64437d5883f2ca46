"""Model prices: what a token costs, from a table the user supplies.

No price is compiled into verifleet: prices change, differ by contract and by
provider, so a run has costs only when it is given a table (``--pricing FILE`` or
``pricing:`` in the config). A table is YAML or JSON::

    as_of: 2025-06-01            # when these prices were read (shown in summaries)
    models:
      gpt-4.1-mini: {input: 0.40, output: 1.60, cached_input: 0.10}
      claude-sonnet-4: {input: 3.00, output: 15.00}

Prices are US dollars per million tokens. ``cached_input`` is the price of input
tokens the provider served from its prompt cache (reported in the usage as
``cached_tokens`` / ``cache_read``); without it they cost ``input``. A bare
mapping of model names to prices (no ``models:`` key) is accepted too.

Token counts come from model endpoints, which a job does not control: a judge
behind a gateway may report ``prompt_tokens: -10000000``, ``NaN`` or a string.
Every count read from a reply goes through :func:`token_count` (a finite integer
in ``[0, MAX_TOKENS]``) and every cost through :func:`usd_amount` (finite, never
negative), so no reply can lower what a job has spent or cancel its budget.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from verifleet.errors import ConfigError

__all__ = ["MAX_TOKENS", "ModelPrice", "PriceTable", "load_pricing", "token_count", "usd_amount"]

#: The most tokens one reported count may hold: far above any real call, well
#: inside a signed 64-bit counter (Redis ``HINCRBY``) and a float's exact range.
MAX_TOKENS = 10**12


def token_count(value: object) -> int:
    """A token count reported by an endpoint as a finite integer in
    ``[0, MAX_TOKENS]``.

    Never raises: ``None``, a non-number (a string, a list, ``True``), ``NaN`` and
    a negative count read as 0; infinity and counts over :data:`MAX_TOKENS` read
    as :data:`MAX_TOKENS` (so a bogus huge count spends the budget rather than
    overflowing a counter); a fraction is rounded down.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float):
        if math.isnan(value):
            return 0
        if math.isinf(value):
            return MAX_TOKENS if value > 0 else 0
    return max(0, min(int(value), MAX_TOKENS))


def usd_amount(value: object) -> float:
    """A cost as a finite, non-negative float; anything else (``None``, a
    non-number, ``NaN``, a negative or infinite amount) reads as 0.0. Never
    raises."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    amount = float(value)
    return amount if math.isfinite(amount) and amount > 0 else 0.0


_PER = 1_000_000


class ModelPrice(BaseModel):
    """One model's prices in USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0.0)
    output: float = Field(ge=0.0)
    cached_input: float | None = Field(default=None, ge=0.0)

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """USD of one call: uncached input, cached input and output tokens at their
        prices. ``cached_input_tokens`` is part of ``input_tokens`` (as providers
        report it) and is clamped to it. Every count is clamped by
        :func:`token_count`, so the cost is never negative."""
        input_tokens, output_tokens = token_count(input_tokens), token_count(output_tokens)
        cached = min(token_count(cached_input_tokens), input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return (
            (input_tokens - cached) * self.input
            + cached * cached_price
            + output_tokens * self.output
        ) / _PER


class PriceTable(BaseModel):
    """Prices per model name, with the date they were read.

    A model is found by its exact ``model_name``, else case-insensitively, else
    by the part after a provider prefix (``openai:gpt-4.1`` finds ``gpt-4.1``)
    or after the last ``/`` (``openai/gpt-4.1`` on a router finds ``gpt-4.1``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    as_of: str | None = None
    currency: str = "USD"
    models: dict[str, ModelPrice] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_mapping(cls, data: object) -> object:
        # A table of model name -> prices without the "models:" wrapper.
        if isinstance(data, dict) and "models" not in data:
            rest = {k: v for k, v in data.items() if k not in ("as_of", "currency")}
            head = {k: data[k] for k in ("as_of", "currency") if k in data}
            return {**head, "models": rest}
        return data

    @model_validator(mode="after")
    def _usd_only(self) -> PriceTable:
        if self.currency.upper() != "USD":
            raise ValueError(f"currency {self.currency!r}: prices must be in USD")
        return self

    def price_for(self, model_name: str) -> ModelPrice | None:
        """The price of ``model_name``, or None when the table has none."""
        found = self.models.get(model_name)
        if found is not None:
            return found
        lowered = {name.lower(): price for name, price in self.models.items()}
        for candidate in (
            model_name,
            model_name.split(":", 1)[-1],
            model_name.rsplit("/", 1)[-1],
        ):
            found = lowered.get(candidate.lower())
            if found is not None:
                return found
        return None

    def cost(
        self, model_name: str, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
    ) -> float | None:
        """USD of one call of ``model_name``, None when the model has no price."""
        price = self.price_for(model_name)
        if price is None:
            return None
        return price.cost(input_tokens, output_tokens, cached_input_tokens)


def load_pricing(path: str | Path) -> PriceTable:
    """Read a price table from a YAML or JSON file.

    Raises:
        ConfigError: the file cannot be read, is not YAML/JSON, or a price is
            missing, negative or not a number (the message names the model).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the price table: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: the price table is not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: expected a mapping of model names to prices")
    if "as_of" in data and data["as_of"] is not None:
        data["as_of"] = str(data["as_of"])  # YAML reads 2025-06-01 as a date
    try:
        return PriceTable.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{path}: invalid price table: {problems}") from None
