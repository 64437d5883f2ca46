"""verifleet rewards as a TRL reward function (``GRPOTrainer(reward_funcs=...)``).

TRL passes ``prompts``, ``completions`` (strings, or chat messages for a
conversational dataset), ``completion_ids`` and every other dataset column
(e.g. ``question_id``) as keyword arguments, and expects one float or None per
completion; it leaves a None (NaN) out of the group's baseline, so a completion
verifleet could not verify for an infrastructure reason gets None and advantage
0, never a made-up 0.0. docs/reward.md ("TRL") states what is logged, when
``empty_reward`` applies and what raises.

Two ways to score: :func:`trl_reward` sends each call's completions to a running
``verifleet serve`` in ``POST /verify/batch`` requests; :func:`trl_reward_local`
scores them in this process with a :class:`RewardScorer`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from pydantic import TypeAdapter, ValidationError

from verifleet.schemas import VerifleetError

from ._request import (
    InvalidRequestError,
    PlainVerifyRequest,
    ResponsesVerifyRequest,
    UnknownQuestionError,
    VerifyRequest,
)
from ._scorer import RewardScorer

__all__ = ["TRLReward", "VerifleetRewardError", "trl_reward", "trl_reward_local"]

_log = logging.getLogger(__name__)

_REQUEST: TypeAdapter[ResponsesVerifyRequest | PlainVerifyRequest] = TypeAdapter(VerifyRequest)

#: Scores a list of verify request bodies: one entry per body, in order, shaped
#: as ``/verify/batch`` entries (verdict fields, or ``reward: null`` with
#: ``failure`` or ``error``).
BatchScorer = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


class VerifleetRewardError(VerifleetError, RuntimeError):
    """The reward function could not get rewards: the server refused the
    requests, stayed unreachable, or a completion names an unknown question."""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) if isinstance(part, Mapping) else str(part)
            for part in content
        )
    return "" if content is None else str(content)


def _output_items(completion: Any) -> list[dict[str, Any]]:
    """A TRL completion as Responses-API output items.

    A string is one assistant message; a list of chat messages keeps its tool
    calls (``function_call``) and tool replies (``function_call_output``), so a
    tool-using completion is verified as a trace.
    """
    if isinstance(completion, str):
        return [{"type": "message", "role": "assistant", "content": completion}]
    items: list[dict[str, Any]] = []
    for message in completion:
        role = str(message.get("role") or "assistant")
        content = _text(message.get("content"))
        if role == "tool":
            call_id = message.get("tool_call_id") or message.get("name") or ""
            items.append({"type": "function_call_output", "call_id": call_id, "output": content})
            continue
        if content or not message.get("tool_calls"):
            items.append({"type": "message", "role": role, "content": content})
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            items.append(
                {
                    "type": "function_call",
                    "call_id": call.get("id") or "",
                    "name": function.get("name", ""),
                    "arguments": arguments,
                }
            )
    return items


def _has_text(items: list[dict[str, Any]]) -> bool:
    return any(
        i["type"] == "message" and i["role"] == "assistant" and i["content"].strip() for i in items
    )


class TRLReward:
    """A TRL reward function backed by verifleet (see the module docstring).

    Build it with :func:`trl_reward` or :func:`trl_reward_local`. Its
    ``__name__`` is what TRL logs the rewards under (``rewards/<name>/mean``).

    Args:
        score: Scores request bodies (one ``/verify/batch``-shaped entry each).
        name: The function's name in TRL's logs.
        question_id_column: The dataset column naming each prompt's question;
            without it (or where it is empty) the question is the one whose text
            equals the prompt's last user message.
        empty_reward: The reward of a completion with no text.
    """

    def __init__(
        self,
        score: BatchScorer,
        *,
        name: str = "verifleet",
        question_id_column: str = "question_id",
        empty_reward: float = 0.0,
    ) -> None:
        if not name.strip():
            raise ValueError("the reward function's name is empty")
        self._score = score
        self.__name__ = name
        self.question_id_column = question_id_column
        self.empty_reward = empty_reward

    def rollouts(
        self, prompts: Sequence[Any], completions: Sequence[Any], question_ids: Sequence[Any] | None
    ) -> list[dict[str, Any] | None]:
        """The verify request body of each completion; None for one with no text.

        Raises:
            ValueError: ``prompts``, ``completions`` and the question ids differ
                in length.
        """
        if len(prompts) != len(completions) or (
            question_ids is not None and len(question_ids) != len(completions)
        ):
            raise ValueError(
                f"{len(completions)} completions for {len(prompts)} prompts"
                + ("" if question_ids is None else f" and {len(question_ids)} question ids")
            )
        bodies: list[dict[str, Any] | None] = []
        for index, (prompt, completion) in enumerate(zip(prompts, completions, strict=True)):
            items = _output_items(completion)
            if not _has_text(items):
                bodies.append(None)
                continue
            prompt_input = prompt if isinstance(prompt, str) else list(prompt)
            body: dict[str, Any] = {
                "responses_create_params": {"input": prompt_input},
                "response": {"output": items},
            }
            qid = question_ids[index] if question_ids is not None else None
            if qid is not None and str(qid) != "":
                body["question_id"] = str(qid)
            bodies.append(body)
        return bodies

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        """One reward per completion (None where it could not be verified).

        Raises:
            VerifleetRewardError: a completion names an unknown question, the
                server refused a request, or stayed unreachable past its timeout.
        """
        question_ids = kwargs.get(self.question_id_column)
        bodies = self.rollouts(prompts, completions, question_ids)
        sent = [b for b in bodies if b is not None]
        entries = iter(self._score(sent) if sent else [])
        rewards: list[float | None] = []
        kinds: list[str | None] = []
        for index, body in enumerate(bodies):
            if body is None:
                rewards.append(self.empty_reward)
                kinds.append(None)
                continue
            entry = next(entries)
            error = entry.get("error")
            if error is not None:
                raise VerifleetRewardError(
                    f"completion {index}: verifleet answered {error.get('status')}: "
                    f"{error.get('message')}"
                )
            failure = entry.get("failure")
            reward = entry.get("reward")
            rewards.append(None if reward is None else float(reward))
            kinds.append(failure.get("kind") if failure else None)
        self._report(kinds, kwargs)
        return rewards

    def _report(self, kinds: list[str | None], kwargs: Mapping[str, Any]) -> None:
        failed = [k for k in kinds if k is not None]
        log_metric, log_extra = kwargs.get("log_metric"), kwargs.get("log_extra")
        if callable(log_metric):
            log_metric(f"{self.__name__}/unverified", len(failed) / max(len(kinds), 1))
        if callable(log_extra):
            log_extra(f"{self.__name__}_failure", kinds)
        if failed:
            _log.warning(
                "%s: %d of %d completions could not be verified (%s); their reward is None, "
                "which TRL leaves out of the advantages",
                self.__name__,
                len(failed),
                len(kinds),
                ", ".join(sorted(set(failed))),
            )


class _HttpBatches:
    """``POST /verify/batch`` to a running ``verifleet serve``, in chunks,
    retrying 503 (after ``Retry-After``) and connection errors until ``timeout``."""

    def __init__(
        self, url: str, token: str | None, batch_size: int, timeout: float, trust_env: bool
    ) -> None:
        if batch_size <= 0 or timeout <= 0:
            raise ValueError("batch_size and timeout must be positive")
        self.url = url.rstrip("/") + "/verify/batch"
        self.headers = {"authorization": f"Bearer {token}"} if token else {}
        self.batch_size = batch_size
        self.timeout = timeout
        self.trust_env = trust_env
        self._client: httpx.Client | None = None

    def __getstate__(self) -> dict[str, Any]:
        # TRL may pickle reward functions; a client (sockets, locks) cannot be.
        return {**self.__dict__, "_client": None}

    def _post(self, rollouts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout, trust_env=self.trust_env)
        give_up = time.monotonic() + self.timeout
        pause = 0.5
        while True:
            problem: str
            try:
                reply = self._client.post(
                    self.url, json={"rollouts": rollouts}, headers=self.headers
                )
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if reply.status_code == 200:
                    results: list[dict[str, Any]] = reply.json()["results"]
                    return results
                message = _message(reply)
                if reply.status_code != 503:
                    raise VerifleetRewardError(
                        f"{self.url} answered {reply.status_code}: {message}"
                    )
                problem = f"503: {message}"
                pause = _retry_after(reply, pause)
            if time.monotonic() + pause > give_up:
                raise VerifleetRewardError(
                    f"{self.url}: no rewards within {self.timeout:g}s (last: {problem})"
                )
            _log.info("%s: %s; retrying in %.1fs", self.url, problem, pause)
            time.sleep(pause)
            pause = min(pause * 2, 30.0)

    def __call__(self, rollouts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        for start in range(0, len(rollouts), self.batch_size):
            results.extend(self._post(rollouts[start : start + self.batch_size]))
        return results


def _message(reply: httpx.Response) -> str:
    try:
        return str(reply.json().get("message", reply.text))
    except (ValueError, AttributeError):
        return reply.text[:500]


def _retry_after(reply: httpx.Response, default: float) -> float:
    try:
        return max(float(reply.headers.get("retry-after", default)), 0.1)
    except ValueError:
        return default


class _LocalBatches:
    """Scores request bodies with a scorer in this process, ``concurrency`` at once."""

    def __init__(self, scorer: RewardScorer, concurrency: int) -> None:
        if concurrency <= 0:
            raise ValueError("concurrency must be positive")
        self.scorer = scorer
        self.concurrency = concurrency

    def _one(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            request = _REQUEST.validate_python(body)
            return self.scorer.score(request).verdict_fields()
        except ValidationError as exc:
            return {"reward": None, "error": {"status": 422, "message": str(exc)}}
        except InvalidRequestError as exc:
            status = 404 if isinstance(exc, UnknownQuestionError) else 422
            return {"reward": None, "error": {"status": status, "message": str(exc)}}

    def __call__(self, rollouts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="trl-reward") as pool:
            return list(pool.map(self._one, rollouts))


def trl_reward(
    url: str,
    *,
    token: str | None = None,
    name: str = "verifleet",
    question_id_column: str = "question_id",
    empty_reward: float = 0.0,
    batch_size: int = 256,
    timeout: float = 600.0,
    trust_env: bool = True,
) -> TRLReward:
    """A TRL reward function scoring through a running ``verifleet serve``.

    Each call sends its completions in ``POST /verify/batch`` requests of at
    most ``batch_size`` (keep it at or under the server's ``--max-batch``).

    Args:
        url: The server's base URL, e.g. ``http://127.0.0.1:8080``.
        token: The server's bearer token; None: ``VERIFLEET_SERVE_TOKEN`` if set.
        name: The name TRL logs the rewards under.
        question_id_column: The dataset column naming each prompt's question.
        empty_reward: The reward of a completion with no text.
        batch_size: Rollouts per request.
        timeout: Seconds one call may spend, retries included; a 503 (the server
            at its ``--max-inflight``) is retried after its ``Retry-After``, a
            connection error after a growing pause.
        trust_env: Whether httpx reads proxy settings from the environment.

    Raises:
        ValueError: an empty name, or a batch size or timeout that is not positive.
    """
    if token is None:
        token = os.environ.get("VERIFLEET_SERVE_TOKEN") or None
    batches = _HttpBatches(url, token, batch_size, timeout, trust_env)
    return TRLReward(
        batches, name=name, question_id_column=question_id_column, empty_reward=empty_reward
    )


def trl_reward_local(
    scorer: RewardScorer,
    *,
    name: str = "verifleet",
    question_id_column: str = "question_id",
    empty_reward: float = 0.0,
    concurrency: int = 8,
) -> TRLReward:
    """A TRL reward function scoring in this process (no server).

    Args:
        scorer: The benchmark's scorer (its judges, reward config and caches).
        name: The name TRL logs the rewards under.
        question_id_column: The dataset column naming each prompt's question.
        empty_reward: The reward of a completion with no text.
        concurrency: Completions verified at once (threads; judge calls wait).

    Raises:
        ValueError: an empty name or a concurrency that is not positive.
    """
    return TRLReward(
        _LocalBatches(scorer, concurrency),
        name=name,
        question_id_column=question_id_column,
        empty_reward=empty_reward,
    )
