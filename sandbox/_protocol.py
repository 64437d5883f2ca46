"""The messages between the host and an executor, and inside the executor.

One JSON object per line, in both directions, and nothing else crosses. Every
message is one of the models below; both sides encode and decode with the same
type adapters, so a field renamed on one side cannot silently go missing on the
other. Requests carry an ``op`` that picks their model.

Template requests name the template twice: ``template_id`` (MD5 of the
normalised source, the spec's id, what the template's class is compiled under)
and ``digest`` (SHA-256 of the exact source). Executors keep sources and
compiled templates by ``(scope, digest)`` (:func:`source_digest`, re-exported here): an MD5 collision cannot hand one
template's compiled class to another, and a scope (a job) never shares a
template process with another scope.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from verifleet.templates import source_digest

__all__ = [
    "CheckTraitRequest",
    "CompiledAnswer",
    "DescribeRequest",
    "DescribeResult",
    "ErrorKind",
    "EvaluateRequest",
    "EvaluateResult",
    "Failure",
    "Hello",
    "PingRequest",
    "PingResult",
    "RegexTraitRequest",
    "Reply",
    "Request",
    "ScenarioCodeRequest",
    "ScenarioCodeResult",
    "StaticCheckRequest",
    "StaticCheckResult",
    "TraitRequest",
    "TraitResult",
    "Verification",
    "decode_reply",
    "decode_request",
    "encode",
    "source_digest",
]


class _Message(BaseModel):
    # NaN and infinities cross as JSON's common extension (a granular score can be
    # NaN), as the standard library writes them.
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="constants")


#: Why a request failed. ``template``/``trait``: the code is invalid or raised;
#: ``untrusted``: pickled code without trust; ``need_source``: send the source
#: again; ``timeout``: the call overran its wall-clock limit (its process was
#: killed); ``crash``: the code exhausted or killed its process; ``protocol`` and
#: ``internal``: a bug, never the template's doing.
ErrorKind = Literal[
    "template",
    "trait",
    "scenario",
    "untrusted",
    "need_source",
    "timeout",
    "crash",
    "protocol",
    "internal",
]


class Failure(_Message):
    """Why one request failed (no traceback crosses)."""

    kind: ErrorKind
    message: str


# --- requests -------------------------------------------------------------------------


class _Request(_Message):
    id: int


class PingRequest(_Request):
    """Liveness, and the executor's CPU seconds so far (its processes included)."""

    op: Literal["ping"] = "ping"


class _TemplateRequest(_Request):
    template_id: str
    digest: str
    scope: str = ""
    question_id: str = ""
    source: str | None = None


class DescribeRequest(_TemplateRequest):
    """Validate a template and describe it."""

    op: Literal["describe"] = "describe"


class EvaluateRequest(_TemplateRequest):
    """Validate a judge's output into the template and run its verification."""

    op: Literal["evaluate"] = "evaluate"
    data: dict[str, Any] = Field(default_factory=dict)
    raw_trace: str = ""


class TraitRequest(_Request):
    """Run a callable trait on a text."""

    op: Literal["trait"] = "trait"
    trait: dict[str, Any]
    text: str = ""
    scope: str = ""


class CheckTraitRequest(_Request):
    """Load a callable trait once."""

    op: Literal["check_trait"] = "check_trait"
    trait: dict[str, Any]
    scope: str = ""


class RegexTraitRequest(_Request):
    """Search a text with a regex trait."""

    op: Literal["regex_trait"] = "regex_trait"
    trait: dict[str, Any]
    text: str = ""


class StaticCheckRequest(_Request):
    """Parse and guard many templates (none of their code runs): a shared
    process serves these, as it does regex traits."""

    op: Literal["static_check"] = "static_check"
    sources: list[str]


class ScenarioCodeRequest(_Request):
    """Run one piece of a scenario's code (``sandbox/_scenario_code.py``):
    ``role`` says what it is and what ``args`` hold."""

    op: Literal["scenario_code"] = "scenario_code"
    role: Literal["state_update", "condition", "evaluate", "handover"]
    source: str
    args: dict[str, Any] = Field(default_factory=dict)
    scope: str = ""


Request = Annotated[
    PingRequest
    | DescribeRequest
    | EvaluateRequest
    | TraitRequest
    | CheckTraitRequest
    | RegexTraitRequest
    | StaticCheckRequest
    | ScenarioCodeRequest,
    Field(discriminator="op"),
]

# --- results ----------------------------------------------------------------------------


class PingResult(_Message):
    """CPU seconds used so far by the executor and every process it started,
    and how many templates its router had template processes compile."""

    cpu_seconds: float
    compiled: int = 0


class DescribeResult(_Message):
    """What the host may know of a template (all JSON data)."""

    class_name: str
    judge_schema: dict[str, Any]
    judge_fields: list[str]
    ground_truth: dict[str, Any] | None
    composition_strategy: str | None
    defines_granular: bool


class Verification(_Message):
    """The template's verdict on one parsed answer (see ``TemplateVerification``)."""

    composition_strategy: str | None
    field_ok: bool
    error: str | None = None
    field_results: dict[str, bool] | None = None
    field_results_error: str | None = None
    regex: dict[str, Any] | None = None
    regex_error: str | None = None
    granular: Any = None
    granular_error: str | None = None


class EvaluateResult(_Message):
    """``invalid`` when the judge's output does not fit, else parsed values and verdict."""

    invalid: str | None = None
    parsed: dict[str, Any] | None = None
    verification: Verification | None = None


class TraitResult(_Message):
    """A trait's value (bool, int or class index; ``True`` for a check)."""

    value: Any


class StaticCheckResult(_Message):
    """Per source of a :class:`StaticCheckRequest`, in order: what the static
    checks found wrong with it, or None."""

    problems: list[str | None]


class ScenarioCodeResult(_Message):
    """What a scenario's code returned, as JSON data."""

    value: Any = None


class CompiledAnswer(_Message):
    """A template process's first line: its pid, then whether the source compiled."""

    pid: int
    error: Failure | None = None


# --- replies ----------------------------------------------------------------------------


class Reply(_Message):
    """The answer to request ``id``: ``result`` when ``ok``, else ``error``."""

    id: int | None
    ok: bool
    result: dict[str, Any] | None = None
    error: Failure | None = None

    @classmethod
    def success(cls, request_id: int, result: BaseModel) -> Reply:
        return cls(id=request_id, ok=True, result=result.model_dump(mode="json"))

    @classmethod
    def failure(cls, request_id: int | None, kind: ErrorKind, message: str) -> Reply:
        return cls(id=request_id, ok=False, error=Failure(kind=kind, message=message))


class Hello(_Message):
    """The executor's first line: started (with or without seccomp), or ``fatal``."""

    seccomp: bool = False
    pid: int = 0
    uid: int | None = None
    """The uid the executor runs as (in its own user namespace, if any)."""
    fatal: str | None = None


_REQUEST: TypeAdapter[Request] = TypeAdapter(Request)


def decode_request(line: bytes) -> Request:
    """Parse one request line.

    Raises:
        pydantic.ValidationError: not a request.
    """
    return _REQUEST.validate_json(line)


def decode_reply(line: bytes) -> Reply:
    """Parse one reply line.

    Raises:
        pydantic.ValidationError: not a reply.
    """
    return Reply.model_validate_json(line)


def encode(message: BaseModel) -> bytes:
    """One message as a JSON line (NaN and infinities allowed, as Python's json)."""
    return message.model_dump_json().encode("utf-8") + b"\n"
