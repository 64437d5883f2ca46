"""Rubric evaluation through the real langchain ``ChatCaller``.

The judge is langchain's ``GenericFakeChatModel`` replaying reply texts (no model
can be told to name a class that does not exist on demand), so the caller's real
prompting, schema checking, re-ask and usage accounting run against our schemas.
"""

from __future__ import annotations

from collections.abc import Iterator

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from verifleet.pipeline._llm import ChatModelCache, LangchainChatCaller, UsageTracker
from verifleet.pipeline._rubric_eval import evaluate_rubric
from verifleet.schemas import LLMRubricTrait, ModelConfig, RetryPolicy, Rubric, VerificationConfig

MODEL = ModelConfig(
    model_name="judge", interface="openai_endpoint", endpoint_base_url="http://x/v1"
)
CONFIG = VerificationConfig(
    parsing_models=[MODEL], parsing_only=True, evaluation_mode="rubric_only"
)
RUBRIC = Rubric(
    llm_traits=[
        LLMRubricTrait(name="clarity", kind="score", min_score=1, max_score=5),
        LLMRubricTrait(name="tone", kind="literal", classes=["casual", "formal"]),
    ]
)


def replies(*texts: str) -> Iterator[AIMessage]:
    for text in texts:
        yield AIMessage(
            content=text,
            usage_metadata={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
        )


def caller(chat: GenericFakeChatModel, tracker: UsageTracker) -> LangchainChatCaller:
    cache = ChatModelCache()
    cache.put(MODEL, chat, request_timeout=30.0)
    return LangchainChatCaller(
        MODEL,
        tracker=tracker,
        clients=cache,
        policy=RetryPolicy(max_attempts=1),
        request_timeout=30.0,
    )


def test_batch_reply_is_parsed_and_usage_recorded_under_rubric_evaluation() -> None:
    tracker = UsageTracker()
    chat = GenericFakeChatModel(messages=replies('{"clarity": 7, "tone": "formal"}'))
    outcome = evaluate_rubric(
        caller(chat, tracker),
        question="q",
        response="A formal answer.",
        rubric=RUBRIC,
        config=CONFIG,
        question_id="q1",
    )
    # the caller does not enforce "maximum", so the clamp is what keeps 7 in range
    assert outcome.rubric.llm_trait_scores == {"clarity": 5, "tone": 1}
    assert outcome.rubric.llm_trait_labels == {"tone": "formal"}
    usage = tracker.summary()
    assert usage is not None
    assert usage["rubric_evaluation"]["total_tokens"] == 25


def test_a_class_outside_the_enum_sinks_the_batch_and_traits_are_asked_one_by_one() -> None:
    tracker = UsageTracker()
    chat = GenericFakeChatModel(
        messages=replies(
            '{"clarity": 4, "tone": "sarcastic"}',  # refused by the enum ...
            '{"clarity": 4, "tone": "sarcastic"}',  # ... and again after the re-ask
            '{"clarity": 4}',
            '{"tone": "casual"}',
        )
    )
    outcome = evaluate_rubric(
        caller(chat, tracker),
        question="q",
        response="hey there",
        rubric=RUBRIC,
        config=CONFIG,
        question_id="q1",
    )
    assert outcome.rubric.llm_trait_scores == {"clarity": 4, "tone": 0}
    assert outcome.failed_traits == {}
    assert outcome.model_calls == 3  # one batch request (re-asked inside the caller) + two
    usage = tracker.summary()
    assert usage is not None
    assert usage["rubric_evaluation"]["total_tokens"] == 4 * 25
