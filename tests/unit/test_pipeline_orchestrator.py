"""Stage inclusion per configuration, and the orchestrator's error containment."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest
from _support.pipeline_fakes import (
    ANSWERING,
    JUDGE,
    ScriptedModels,
    make_config,
    make_question,
    make_resources,
)

from verifleet.pipeline import Stage, StageOrchestrator, UsageTracker, VerificationContext
from verifleet.pipeline._stages import (
    DeepJudgmentAutoFailStage,
    DeepJudgmentRubricAutoFailStage,
    FinalizeResultStage,
)
from verifleet.schemas import (
    VerificationResultDeepJudgment,
    VerificationResultDeepJudgmentRubric,
)

TEMPLATE_CORE = [
    "ValidateTemplate",
    "GenerateAnswer",
    "RecursionLimitAutoFail",
    "TraceValidationAutoFail",
    "ParseTemplate",
    "VerifyTemplate",
    "EmbeddingCheck",
]


def _names(has_rubric: bool = False, **config: Any) -> list[str]:
    return StageOrchestrator.for_config(make_config(**config), has_rubric=has_rubric).stage_names


def test_template_only_defaults() -> None:
    assert _names() == [*TEMPLATE_CORE, "FinalizeResult"]


def test_template_only_with_every_check() -> None:
    names = _names(abstention_enabled=True, sufficiency_enabled=True, deep_judgment_enabled=True)
    assert names == [
        "ValidateTemplate",
        "GenerateAnswer",
        "RecursionLimitAutoFail",
        "TraceValidationAutoFail",
        "AbstentionCheck",
        "SufficiencyCheck",
        "ParseTemplate",
        "VerifyTemplate",
        "EmbeddingCheck",
        "DeepJudgmentAutoFail",
        "FinalizeResult",
    ]


def test_template_only_ignores_a_rubric() -> None:
    assert "RubricEvaluation" not in _names(has_rubric=True)


def test_template_and_rubric_includes_rubric_stages_only_with_traits() -> None:
    with_traits = _names(has_rubric=True, evaluation_mode="template_and_rubric")
    assert with_traits == [
        *TEMPLATE_CORE,
        "RubricEvaluation",
        "DeepJudgmentRubricAutoFail",
        "FinalizeResult",
    ]
    without = _names(has_rubric=False, evaluation_mode="template_and_rubric")
    assert without == [*TEMPLATE_CORE, "FinalizeResult"]


def test_rubric_only_has_no_template_stages() -> None:
    names = _names(
        has_rubric=True,
        evaluation_mode="rubric_only",
        abstention_enabled=True,
        sufficiency_enabled=True,
        deep_judgment_enabled=True,
    )
    assert names == [
        "GenerateAnswer",
        "RecursionLimitAutoFail",
        "TraceValidationAutoFail",
        "AbstentionCheck",
        "RubricEvaluation",
        "DeepJudgmentRubricAutoFail",
        "FinalizeResult",
    ]


# --- containment ----------------------------------------------------------------------


class _Recorder(Stage):
    name: ClassVar[str] = "Recorder"

    def __init__(
        self, label: str, ran: list[str], *, fail: bool = False, fatal: bool = True
    ) -> None:
        self._label, self._ran, self._fail, self._fatal = label, ran, fail, fatal

    @property
    def fatal(self) -> bool:  # type: ignore[override]
        return self._fatal

    def run(self, ctx: VerificationContext) -> None:
        self._ran.append(self._label)
        if self._fail:
            raise ValueError(f"{self._label} broke")


class _SoftRecorder(_Recorder):
    fatal: ClassVar[bool] = False


def _context(config: Any = None) -> VerificationContext:
    config = config or make_config()
    script = ScriptedModels({})
    tracker = UsageTracker()
    resources = make_resources(script)
    return VerificationContext(
        question=make_question(),
        answering=ANSWERING,
        parsing=JUDGE,
        config=config,
        judge=resources.caller(JUDGE, tracker=tracker, config=config),
        resources=resources,
        usage=tracker,
    )


def test_fatal_failure_skips_later_stages_but_finalizes() -> None:
    ran: list[str] = []
    orchestrator = StageOrchestrator(
        [_Recorder("a", ran, fail=True), _Recorder("b", ran), FinalizeResultStage()]
    )
    ctx = _context()
    result = orchestrator.run(ctx)
    assert ran == ["a"]
    assert result.metadata.completed_without_errors is False
    assert result.metadata.error == "stage failed: ValueError: a broke"


def test_non_fatal_failure_warns_and_continues(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    orchestrator = StageOrchestrator(
        [_SoftRecorder("a", ran, fail=True), _Recorder("b", ran), FinalizeResultStage()]
    )
    with caplog.at_level(logging.WARNING):
        result = orchestrator.run(_context())
    assert ran == ["a", "b"]
    assert result.metadata.completed_without_errors is True
    assert any("a broke" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


def test_missing_finalize_is_an_infrastructure_error() -> None:
    with pytest.raises(RuntimeError, match="produced no result"):
        StageOrchestrator([_Recorder("a", [])]).run(_context())


# --- auto-fail stages ------------------------------------------------------------------------


def test_deep_judgment_autofail_on_missing_excerpts(caplog: pytest.LogCaptureFixture) -> None:
    ctx = _context(make_config(deep_judgment_enabled=True))
    stage = DeepJudgmentAutoFailStage()
    ctx.verify_result = ctx.field_verification_result = True
    ctx.deep_judgment = VerificationResultDeepJudgment(
        deep_judgment_enabled=True, deep_judgment_performed=True, attributes_without_excerpts=[]
    )
    assert stage.should_run(ctx) is False
    ctx.deep_judgment = ctx.deep_judgment.model_copy(
        update={"attributes_without_excerpts": ["gene"]}
    )
    assert stage.should_run(ctx) is True
    ctx.abstention.detected = True
    assert stage.should_run(ctx) is False  # abstention already decided the result
    ctx.abstention.detected = False
    with caplog.at_level(logging.WARNING):
        stage.run(ctx)
    assert ctx.verify_result is False and ctx.field_verification_result is False
    assert any("gene" in r.getMessage() for r in caplog.records)


def test_deep_judgment_rubric_autofail_on_traits_without_excerpts() -> None:
    ctx = _context(make_config(evaluation_mode="template_and_rubric"))
    stage = DeepJudgmentRubricAutoFailStage()
    ctx.verify_result = True
    ctx.deep_judgment_rubric = VerificationResultDeepJudgmentRubric(
        deep_judgment_rubric_performed=True
    )
    assert stage.should_run(ctx) is False
    ctx.traits_without_valid_excerpts = ["clarity"]
    assert stage.should_run(ctx) is True
    stage.run(ctx)
    assert ctx.verify_result is False
