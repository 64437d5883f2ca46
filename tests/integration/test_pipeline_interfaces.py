"""Model interfaces registered by name: a registered one serves a real run, an
unknown one fails its unit's first call with a clear error, never the run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _support.pipeline_fakes import TEMPLATE, make_question
from pydantic import ValidationError
from test_pipeline_openai_http import _endpoint

from bench.endpoint import RunningEndpoint
from verifleet.pipeline import (
    CallerOptions,
    ChatCaller,
    OpenAIHttpChatCaller,
    PipelineResources,
    register_interface,
    registered_interfaces,
    verify_question,
)
from verifleet.pipeline._llm import _route
from verifleet.schemas import ModelConfig, VerificationConfig, interface_names
from verifleet.schemas._config import _INTERFACES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    with _endpoint() as running:
        yield running


@pytest.fixture
def gateway(endpoint: RunningEndpoint) -> Iterator[list[str]]:
    """A 'gateway' interface: models named without an address, routed to the
    endpoint by the factory (what an in-house model gateway plug-in does)."""
    built: list[str] = []

    def factory(model: ModelConfig, options: CallerOptions) -> ChatCaller:
        built.append(model.model_name)
        routed = model.model_copy(
            update={"interface": "openai_endpoint", "endpoint_base_url": endpoint.base_url}
        )
        return OpenAIHttpChatCaller(routed, **vars(options))

    register_interface("gateway", factory)
    yield built
    _route._REGISTERED.pop("gateway")
    _INTERFACES.pop("gateway")


def test_builtins_are_registered_and_names_are_not_taken_twice() -> None:
    assert {"langchain", "openai_endpoint", "openrouter", "manual"} <= set(registered_interfaces())
    with pytest.raises(ValueError, match="already registered"):
        register_interface("langchain", lambda model, options: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ValueError, match="needs a name"):
        register_interface(" ", lambda model, options: None)  # type: ignore[arg-type,return-value]


def test_a_registered_interface_serves_a_run(gateway: list[str], endpoint: RunningEndpoint) -> None:
    answering = ModelConfig(model_name="answerer", interface="gateway")
    judge = ModelConfig(model_name="judge", interface="gateway")
    config = VerificationConfig(answering_models=[answering], parsing_models=[judge])
    endpoint.reset()
    [result] = verify_question(
        make_question(TEMPLATE),
        answering,
        [judge],
        config,
        replicate=None,
        resources=PipelineResources(),
    )
    assert result.metadata.completed_without_errors, result.metadata.error
    assert result.template is not None and result.template.verify_result is True
    assert "judge" in gateway and "answerer" in gateway
    assert len(endpoint.app.requests) == 2  # the answer and the parse, both routed


def test_an_unknown_interface_is_refused_when_the_config_loads() -> None:
    with pytest.raises(ValidationError, match="unknown interface 'nobody-registered-this'"):
        ModelConfig(model_name="answerer", interface="nobody-registered-this")
    assert "nobody-registered-this" not in interface_names()
