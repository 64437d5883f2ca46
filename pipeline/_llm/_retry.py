"""Retrying transient model errors with exponential backoff and jitter.

The loop is tenacity's; what is ours is which errors are transient
(:func:`classify_error`), the backoff of the :class:`RetryPolicy` with the server's
``Retry-After`` when longer, and the unit deadline, which no attempt starts after
and no backoff sleep crosses.

Transient means the same request may well succeed later: HTTP 408/409/429/5xx,
timeouts, refused or reset connections. Everything else (bad request, bad key,
unknown model) fails at once: retrying would only burn the unit's deadline.
"""

from __future__ import annotations

import email.utils
import http
import logging
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from verifleet.errors import VerifleetError
from verifleet.schemas import RetryPolicy

from .._llm_protocol import ModelCallError

__all__ = [
    "MAX_ENDPOINT_PAUSE",
    "ErrorInfo",
    "call_with_retry",
    "classify_error",
    "endpoint_pause",
    "is_rate_limited",
]

#: The longest pause one ``Retry-After`` imposes on a whole endpoint (seconds): a
#: header asking for more, or a bogus date, must not idle a fleet for hours; the
#: 429'd call itself still waits the full time the server asked for.
MAX_ENDPOINT_PAUSE = 300.0

_log = logging.getLogger(__name__)

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


@dataclass(frozen=True)
class ErrorInfo:
    """What a failed call tells us.

    Attributes:
        transient: Whether retrying the same request makes sense.
        description: A short human-readable cause, e.g. ``429 Too Many Requests``.
        retry_after: Seconds the server asked us to wait, when it said so.
    """

    transient: bool
    description: str
    retry_after: float | None = None


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _headers_of(exc: BaseException) -> Any:
    response = getattr(exc, "response", None)
    return getattr(response, "headers", None)


def _parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (delta or HTTP date)."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000.0)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def is_rate_limited(exc: BaseException | None) -> bool:
    """True when ``exc`` is the endpoint saying 429 Too Many Requests (an
    exception exposing ``status_code``, directly or on ``.response``)."""
    return exc is not None and _status_of(exc) == 429


def endpoint_pause(exc: BaseException | None) -> float:
    """Seconds every caller of an endpoint should hold off after ``exc``: the
    ``Retry-After`` (or ``retry-after-ms``) of a 429, at most
    :data:`MAX_ENDPOINT_PAUSE`; 0.0 for anything else or a 429 without one.

    A server that says when to come back says it for the endpoint, not for the one
    call that asked; the endpoint gates apply it to every caller.
    """
    if exc is None or _status_of(exc) != 429:
        return 0.0
    return min(_parse_retry_after(_headers_of(exc)) or 0.0, MAX_ENDPOINT_PAUSE)


def _status_text(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def _detail(exc: BaseException) -> str | None:
    """The server's own error message (openai-style ``body``), shortened."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if isinstance(message, str) and message.strip():
            return message.strip().splitlines()[0][:300]
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def classify_error(exc: BaseException) -> ErrorInfo:
    """Decide whether ``exc`` from a model call is worth retrying.

    Works on openai/httpx exceptions and on any provider exception that exposes
    ``status_code`` (directly or on ``.response``), so providers reached through
    ``init_chat_model`` are classified without importing their SDKs.
    """
    # An openai exception exists only once openai was imported (a langchain
    # model loaded it): a process that calls endpoints over plain HTTP need not
    # import it to classify its errors.
    openai: Any = sys.modules.get("openai")
    timeouts: tuple[type[BaseException], ...] = (httpx.TimeoutException, TimeoutError)
    connection: tuple[type[BaseException], ...] = (httpx.TransportError, ConnectionError)
    if openai is not None:
        timeouts += (openai.APITimeoutError,)
        connection += (openai.APIConnectionError,)
    # Timeouts first: openai's APITimeoutError is a subclass of APIConnectionError.
    if isinstance(exc, timeouts):
        return ErrorInfo(True, "request timed out")
    status = _status_of(exc)
    # A 2xx "status" comes from an exception about a successful response (e.g. a
    # structured reply cut off at max_tokens): the exception itself says what.
    if status is not None and status >= 400:
        transient = status in _TRANSIENT_STATUS or status >= 500
        if transient:
            return ErrorInfo(True, _status_text(status), _parse_retry_after(_headers_of(exc)))
        # A client error will not fix itself: say what the server objected to.
        detail = _detail(exc)
        return ErrorInfo(
            False, f"{_status_text(status)}: {detail}" if detail else _status_text(status)
        )
    if isinstance(exc, connection):
        return ErrorInfo(True, f"connection error ({_first_line(exc)})")
    return ErrorInfo(False, _first_line(exc))


def call_with_retry(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    deadline: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rand: Callable[[], float] = random.random,
    label: str = "model call",
) -> T:
    """Run ``fn`` until it succeeds, retrying transient errors per ``policy``.

    Args:
        fn: The call; any exception it raises is classified by :func:`classify_error`.
        policy: Attempts and backoff. A server's ``Retry-After`` wins when longer.
        deadline: Absolute ``time.monotonic()`` after which no attempt starts and no
            backoff sleep is begun that would end past it.
        sleep: Injected for tests.
        rand: Jitter source in ``[0, 1)``; injected for tests.
        label: Names the call in log lines.

    Returns:
        What ``fn`` returned.

    Raises:
        ModelCallError: a non-transient error (at once), transient errors through
            the last attempt (message ``"<cause> after <n> attempts"``), or the
            deadline. A :class:`ModelCallError` raised by ``fn`` passes through.
    """

    def wait(state: RetryCallState) -> float:
        info = _info_of(state)
        delay = policy.delay_before(state.attempt_number + 1, rand())
        if info.retry_after is not None and info.retry_after > delay:
            delay = info.retry_after
        if deadline is not None and time.monotonic() + delay >= deadline:
            raise ModelCallError(
                f"{info.description} after {state.attempt_number} attempts "
                f"(next retry in {delay:.1f}s would pass the unit deadline)",
                transient=True,
                attempts=state.attempt_number,
            ) from _error_of(state)
        _log.warning(
            "%s failed (%s), attempt %d of %d; retrying in %.2fs",
            label,
            info.description,
            state.attempt_number,
            policy.max_attempts,
            delay,
        )
        return delay

    def give_up(state: RetryCallState) -> T:
        info, attempt = _info_of(state), state.attempt_number
        noun = "attempt" if attempt == 1 else "attempts"
        raise ModelCallError(
            f"{info.description} after {attempt} {noun}", transient=True, attempts=attempt
        ) from _error_of(state)

    def guarded() -> T:
        if deadline is not None and time.monotonic() >= deadline:
            raise _DeadlinePassed
        return fn()

    retrying = Retrying(
        retry=retry_if_exception(_retryable),
        stop=stop_after_attempt(policy.max_attempts),
        wait=wait,
        sleep=sleep,
        retry_error_callback=give_up,
        reraise=True,
    )
    try:
        return retrying(guarded)
    except _DeadlinePassed:
        attempt = retrying.statistics.get("attempt_number", 1)
        raise ModelCallError(
            f"unit deadline exceeded before attempt {attempt} of {label}",
            transient=True,
            attempts=attempt - 1,
        ) from None
    except ModelCallError:
        raise
    except Exception as exc:  # not transient: no retry was worth it
        info = classify_error(exc)
        attempt = retrying.statistics.get("attempt_number", 1)
        raise ModelCallError(info.description, transient=False, attempts=attempt) from exc


class _DeadlinePassed(VerifleetError):
    """The unit deadline passed before an attempt started (a signal inside
    :func:`call_with_retry`, turned into a :class:`ModelCallError` there)."""


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, ModelCallError | _DeadlinePassed) or not isinstance(exc, Exception):
        return False
    return classify_error(exc).transient


def _error_of(state: RetryCallState) -> BaseException | None:
    return state.outcome.exception() if state.outcome is not None else None


def _info_of(state: RetryCallState) -> ErrorInfo:
    error = _error_of(state)
    assert isinstance(error, Exception)  # tenacity calls these after a failed attempt
    return classify_error(error)
