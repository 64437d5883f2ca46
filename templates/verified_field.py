"""``VerifiedField``: a pydantic field that carries its ground truth and primitive.

The verification metadata rides on the field's ``json_schema_extra`` as a callable
carrier: pydantic calls it while building a JSON schema and it adds nothing but the
caller's own extras, so the expected answer cannot reach any schema (the judge's or
anyone else's) by construction.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny
from pydantic.json_schema import JsonDict

from .primitives import VerificationPrimitive

__all__ = ["VERIFICATION_KEY", "VerificationMeta", "VerifiedField", "verified_fields_of"]

#: Key the original framework used for this metadata inside schemas; schemas are
#: still scrubbed of it in case a hand-written template puts it there.
VERIFICATION_KEY = "__verification__"


class VerificationMeta(BaseModel):
    """What a ``VerifiedField`` knows that the judge must not see."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    ground_truth: object
    verify_with: SerializeAsAny[VerificationPrimitive]
    weight: float = Field(default=1.0, ge=0.0)
    extraction_hint: str | None = None

    @property
    def is_trace(self) -> bool:
        """Whether the field is checked on the raw response (and hidden from the judge)."""
        return self.verify_with.is_trace


def VerifiedField(
    description: str,
    ground_truth: object,
    verify_with: VerificationPrimitive,
    weight: float = 1.0,
    extraction_hint: str | None = None,
    **kwargs: Any,
) -> Any:  # like pydantic's Field, so that `x: int = VerifiedField(...)` type-checks
    """A pydantic ``Field`` with its ground truth and verification primitive attached.

    Args:
        description: What the judge must extract (it is the judge's only guidance).
        ground_truth: The expected value (for trace primitives: whether the
            condition must hold).
        verify_with: The primitive that compares extracted value and ground truth.
        weight: The field's share of ``verify_granular()`` (default 1.0, >= 0).
        extraction_hint: Extra formatting guidance appended to the judge's
            description.
        **kwargs: Passed to ``pydantic.Field`` (``default``, ``examples``, ...).

    Returns:
        The ``FieldInfo`` to assign to the class attribute.

    Raises:
        ValueError: ``description`` is blank, ``verify_with`` is not a primitive,
            or ``weight`` is negative.
    """
    if not isinstance(description, str) or not description.strip():
        raise ValueError("VerifiedField needs a non-empty description: the judge relies on it")
    if not isinstance(verify_with, VerificationPrimitive):
        raise ValueError(
            "VerifiedField needs verify_with=<a primitive instance>, e.g. ExactMatch(), "
            f"got {type(verify_with).__name__}"
        )
    if weight < 0:
        raise ValueError(f"VerifiedField weight must be >= 0, got {weight}")
    meta = VerificationMeta(
        ground_truth=ground_truth,
        verify_with=verify_with,
        weight=weight,
        extraction_hint=extraction_hint,
    )
    carrier = _MetaCarrier(meta, kwargs.pop("json_schema_extra", None))
    return Field(description=description, json_schema_extra=carrier, **kwargs)


class _MetaCarrier:
    """``json_schema_extra`` callable that holds the metadata and shows only the
    caller's own extras (a dict, or a callable taking the schema)."""

    __slots__ = ("meta", "user_extra")

    def __init__(self, meta: VerificationMeta, user_extra: object) -> None:
        self.meta = meta
        self.user_extra = user_extra

    def __call__(self, schema: JsonDict) -> None:
        if isinstance(self.user_extra, dict):
            schema.update(self.user_extra)
        elif callable(self.user_extra):
            self.user_extra(schema)


def verified_fields_of(model: type[BaseModel]) -> dict[str, VerificationMeta]:
    """The ``VerifiedField`` metadata of ``model``'s fields, in field order."""
    found: dict[str, VerificationMeta] = {}
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra
        if isinstance(extra, _MetaCarrier):
            found[name] = extra.meta
    return found
