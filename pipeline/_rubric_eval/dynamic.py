"""Dynamic rubrics: traits that are evaluated only when their concept is present.

One presence-check judge call covers every non-agentic dynamic trait (its concept
is the trait's ``summary``, else its ``description``). Present traits are promoted
and evaluated with the static ones; absent traits are recorded in
``dynamic_rubric_skipped_traits`` with the reason. Agentic dynamic traits are
skipped because verifleet has no agent runtime.

Failure behaviour: a dynamic trait named like a static trait raises
:class:`RubricError` before any call. A presence reply that never matches the
schema skips every dynamic trait (with that reason) instead of guessing; a trait
missing from the reply is skipped the same way. :class:`ModelCallError`
propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from verifleet.pipeline._llm_protocol import ChatCaller, StructuredOutputError
from verifleet.schemas import RubricError

from .llm_traits import STAGE
from .prompts import presence_messages, presence_schema
from .traitset import TraitSet

__all__ = ["AGENTIC_SKIP_REASON", "DynamicResolution", "check_name_conflicts", "resolve_dynamic"]

logger = logging.getLogger(__name__)

AGENTIC_SKIP_REASON = "agentic trait not evaluated: no agent runtime was given to rubric evaluation"
#: Why a dynamic rubric's agentic traits are never promoted (as in the original).
DYNAMIC_AGENTIC_REASON = (
    "agentic traits of a dynamic rubric are not presence-checked, so never promoted"
)
ABSENT_REASON = "concept not present in the response (presence check)"


@dataclass
class DynamicResolution:
    """What the presence check decided."""

    promoted: TraitSet = field(default_factory=TraitSet)
    promoted_names: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    model_calls: int = 0


def check_name_conflicts(static: TraitSet, dynamic: TraitSet) -> None:
    """Refuse dynamic traits that share a name with a static trait.

    Raises:
        RubricError: naming every clashing trait.
    """
    clashes = sorted(set(static.names()) & set(dynamic.names()))
    if clashes:
        raise RubricError(
            "dynamic rubric traits clash with static rubric traits: " + ", ".join(clashes)
        )


def resolve_dynamic(
    judge: ChatCaller,
    *,
    question: str,
    response: str,
    dynamic: TraitSet,
    instructions: Sequence[str | None] = (),
) -> DynamicResolution:
    """Run the presence check over ``dynamic`` and split it into promoted / skipped.

    Raises:
        ModelCallError: the judge call failed for good.
    """
    result = DynamicResolution()
    for trait in dynamic.agentic:
        result.skipped[trait.name] = DYNAMIC_AGENTIC_REASON
    candidates = dynamic.without_agentic()
    names = candidates.names()
    if not names:
        return result
    traits = candidates.traits()
    result.model_calls = 1
    try:
        reply = judge.invoke_json(
            presence_messages(question, response, traits, instructions=instructions),
            stage=STAGE,
            schema=presence_schema(names),
            schema_name="concept_presence",
        )
    except StructuredOutputError as exc:
        logger.warning("dynamic rubric presence check failed: %s", exc)
        for name in names:
            result.skipped[name] = f"presence check failed: {exc}"
        return result
    present: list[str] = []
    for name in names:
        verdict = reply.get(name)
        if verdict is True:
            present.append(name)
        elif verdict is False:
            result.skipped[name] = ABSENT_REASON
        else:
            result.skipped[name] = f"presence check gave no verdict (got {verdict!r})"
    result.promoted = candidates.only(present)
    result.promoted_names = present
    return result
