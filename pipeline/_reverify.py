"""Re-verification: judge stored answers again without calling the answering model.

A stored result carries its answer (text, trace, agent metrics, the answer's
usage) and what each judge stage produced. :func:`reverify_unit` runs the
pipeline with that answer and, for a parsing model that judged it before, the
stored result as ``previous``: the parse is reused when the judge, template,
system prompt and evaluation input are the same, and LLM rubric traits it scored
keep their scores, so only the stages whose inputs changed ask a model. Each new
result records the stored one it derives from (``metadata.derived_from``).
Scenario runs are judged again turn by turn by
:func:`~verifleet.pipeline.run_scenario` with a ``ScenarioReplay`` of the turns
:func:`group_stored_scenarios` finds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from verifleet.schemas import (
    DynamicRubric,
    ModelConfig,
    ModelIdentity,
    Question,
    Rubric,
    VerificationConfig,
    VerificationResult,
)

from ._answer import CachedAnswer
from ._llm_protocol import Message
from ._resources import PipelineResources
from ._run import verify_question

__all__ = [
    "StoredUnitKey",
    "answering_model_of",
    "group_stored",
    "group_stored_scenarios",
    "reverify_unit",
    "stored_answer",
]

#: (question id, answering model canonical key, replicate) of a stored unit.
StoredUnitKey = tuple[str, str, int | None]

_ANSWER_STAGE = "answer_generation"


def group_stored(
    results: Iterable[VerificationResult],
) -> dict[StoredUnitKey, list[VerificationResult]]:
    """Stored results by unit (scenario turns are left out: see
    :func:`group_stored_scenarios`)."""
    groups: dict[StoredUnitKey, list[VerificationResult]] = defaultdict(list)
    for result in results:
        meta = result.metadata
        if meta.scenario_id is not None:
            continue
        groups[(meta.question_id, meta.answering.canonical_key, meta.replicate)].append(result)
    return dict(groups)


def group_stored_scenarios(
    results: Iterable[VerificationResult],
) -> dict[StoredUnitKey, list[list[VerificationResult]]]:
    """Stored scenario runs by (scenario id, answering model canonical key,
    replicate): each run's turn results, one list per turn in turn order."""
    turns: dict[StoredUnitKey, dict[int, list[VerificationResult]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for result in results:
        meta = result.metadata
        if meta.scenario_id is None or meta.scenario_turn is None:
            continue
        key = (meta.scenario_id, meta.answering.canonical_key, meta.replicate)
        turns[key][meta.scenario_turn].append(result)
    return {key: [by_turn[t] for t in sorted(by_turn)] for key, by_turn in turns.items()}


def stored_answer(results: Sequence[VerificationResult]) -> CachedAnswer:
    """The answer the unit's stored results share; an answer that failed (or a
    result that holds none) is an answer error, so nothing calls the model."""
    for result in results:
        template = result.template
        if template is not None and (template.raw_llm_response or template.trace_messages):
            usage = (template.usage_metadata or {}).get(_ANSWER_STAGE)
            return CachedAnswer(
                raw_llm_response=template.raw_llm_response,
                trace_messages=list(template.trace_messages),
                recursion_limit_reached=template.recursion_limit_reached,
                agent_metrics=template.agent_metrics,
                answering_mcp_servers=template.answering_mcp_servers,
                usage=dict(usage) if usage else None,
                few_shot_example_count=result.metadata.few_shot_example_count,
                # The stored answering call stays on record: it is the answer judged.
                calls=[c for c in template.model_calls if c.stage == _ANSWER_STAGE],
            )
    first = results[0].metadata if results else None
    why = first.error if first is not None and first.error else "no answer was stored"
    return CachedAnswer(error=f"the stored result has no answer to re-verify ({why})")


def answering_model_of(identity: ModelIdentity, system_prompt: str | None) -> ModelConfig:
    """A model configuration that records ``identity`` in results; it is never
    called (its answers come from the stored results)."""
    tools = {name: "stored:" for name in identity.tools} or None
    # Built without validation: an endpoint model would need its URL, which a
    # result does not keep and which nothing here uses.
    return ModelConfig.model_construct(
        model_name=identity.model_name,
        interface=identity.interface,
        system_prompt=system_prompt,
        mcp_urls_dict=tools,
    )


def reverify_unit(
    question: Question,
    answering: ModelConfig,
    parsing_models: Sequence[ModelConfig],
    config: VerificationConfig,
    stored: Sequence[VerificationResult],
    *,
    source: str,
    replicate: int | None,
    rubric: Rubric | None = None,
    dynamic_rubric: DynamicRubric | None = None,
    resources: PipelineResources | None = None,
    deadline: float | None = None,
    conversation: Sequence[Message] = (),
) -> list[VerificationResult]:
    """Judge one stored unit again with ``parsing_models`` under ``config``.

    Args:
        question: The question as the (possibly changed) benchmark has it.
        answering: The answering model (never called).
        parsing_models: The judges; one result each.
        config: The new configuration.
        stored: The unit's stored results (any parsing models).
        source: Names the stored run in ``derived_from`` (a path or ``job:<id>``).
        replicate: The unit's replicate.
        rubric, dynamic_rubric, resources, deadline: as :func:`verify_question`.
        conversation: A scenario turn's earlier messages, as :func:`verify_question`.

    Returns:
        One result per parsing model, each with ``metadata.derived_from``;
        content failures are inside them, as with :func:`verify_question`.
    """
    previous = {r.metadata.parsing.canonical_key: r for r in stored}
    results = verify_question(
        question,
        answering,
        parsing_models,
        config,
        replicate=replicate,
        rubric=rubric,
        dynamic_rubric=dynamic_rubric,
        resources=resources,
        cached_answer=stored_answer(stored),
        deadline=deadline,
        previous=previous,
        conversation=conversation,
    )
    origin = stored[0] if stored else None
    out = []
    for result in results:
        match = previous.get(result.metadata.parsing.canonical_key, origin)
        derived = f"{source}#{match.metadata.result_id}" if match is not None else source
        meta = result.metadata.model_copy(update={"derived_from": derived})
        out.append(result.model_copy(update={"metadata": meta}))
    return out
