"""``POST /get_reward``: OpenRLHF's remote reward model protocol (``--remote_rm_url``;
OpenRLHF 0.11, ``openrlhf/utils/agent.py``). docs/reward.md ("OpenRLHF") lists
the fields it posts and reads; OpenRLHF retries anything but a 2xx (5 tries, 1 s
apart), then the rollout has no reward.

Here each query becomes a verify request: the response is the query after its
prompt, with end-of-sequence markers cut off its end; the question is the one
the label names (a question id, or an object with ``question_id``), else the
one whose text equals the prompt. The rollouts are scored as ``/verify/batch``
scores them. A rollout that could not be verified for an infrastructure reason
answers the whole request with that failure's status (502 judge, 503 executor,
504 deadline), never a number OpenRLHF would train on: its client retries.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI

from verifleet.reward import RewardScorer

from ._admission import Admission
from ._batch import BatchReply, score_rollouts
from ._protocol import OnDisconnect
from ._routes import FAILURE_STATUS, BodyRoute, decode_json
from ._scoring import Receive

__all__ = ["END_MARKERS", "OPENRLHF_PATH", "declare_openrlhf", "openrlhf_route"]

OPENRLHF_PATH = "/get_reward"

#: End-of-sequence markers of common chat templates, cut off a response's end
#: (OpenRLHF decodes the query with its special tokens).
END_MARKERS = (
    "</s>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
    "<|end|>",
    "<eos>",
    "<end_of_turn>",
    "<|end_of_text|>",
)


def _column(data: Mapping[str, Any], key: str, count: int) -> list[Any] | str:
    """``data[key]``, a list of ``count`` entries (None each when absent), or what is wrong."""
    value = data.get(key)
    if value is None:
        return [None] * count
    if not isinstance(value, list) or len(value) != count:
        return f"'{key}' must be a list with one entry per query ({count})"
    return value


def response_text(query: str, prompt: str | None) -> str | None:
    """The response inside ``query``: what follows its prompt (the whole query
    without a prompt), end markers and surrounding whitespace cut off; None when
    the prompt is not in the query."""
    if prompt:
        at = query.find(prompt)
        if at < 0:
            return None
        query = query[at + len(prompt) :]
    text = query.strip()
    cut = True
    while cut:
        cut = False
        for marker in END_MARKERS:
            if text.endswith(marker):
                text = text[: -len(marker)].rstrip()
                cut = True
    return text


def _question_id(label: Any) -> str | None:
    if isinstance(label, Mapping):
        label = label.get("question_id")
    if label is None or isinstance(label, bool) or label == "":
        return None
    return str(label) if isinstance(label, str | int) else None


def _body(query: Any, prompt: Any, label: Any) -> dict[str, Any] | str:
    """The verify request of one query, or what is wrong with it ("" for an
    empty response)."""
    if not isinstance(query, str):
        return "a query must be a string"
    if prompt is not None and not isinstance(prompt, str):
        return "a prompt must be a string"
    text = response_text(query, prompt)
    if text is None:
        return "its prompt is not part of its query: the response cannot be told apart"
    if not text:
        return ""
    qid = _question_id(label)
    if qid is not None:
        return {"question_id": qid, "response": text}
    if not prompt:
        return "no question: the label names no question id and there is no prompt to match"
    return {
        "responses_create_params": {"input": prompt},
        "response": {"output": [{"type": "message", "role": "assistant", "content": text}]},
    }


def _extra_logs(entries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per-query numbers OpenRLHF logs: the template verdict and each reward
    component, where every query has one."""
    logs: dict[str, list[float]] = {}
    verdicts = [e.get("verify_result") for e in entries]
    if all(isinstance(v, bool) for v in verdicts):
        logs["verifleet_verify_result"] = [1.0 if v else 0.0 for v in verdicts]
    components = [e.get("reward_components") or {} for e in entries]
    for name in components[0]:
        values = [c.get(name) for c in components]
        numbers = [
            float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        if len(numbers) == len(values):
            logs[f"verifleet_{name}"] = numbers
    return logs


async def score_openrlhf(
    raw: bytes,
    receive: Receive,
    on_disconnect: OnDisconnect | None,
    *,
    scorer: RewardScorer,
    admission: Admission,
    timeout: float,
    max_batch: int,
) -> BatchReply:
    """Score an OpenRLHF request body (a :data:`BodyRoute` once the service's
    scorer, admission and limits are bound: :func:`openrlhf_route`); the
    rollouts are admitted and scored as :func:`score_rollouts` does.

    Returns:
        (status, payload, extra headers), or None when the client left. 200
        with ``rewards``, ``scores`` and ``extra_logs``; 400 for a body that is
        not JSON; 422 for one of the wrong shape or a query that cannot be
        verified (the message names it); 404 for an unknown question; 502, 503
        or 504 when a query could not be verified for an infrastructure reason;
        413 or 503 as ``/verify/batch`` admits a batch.
    """
    try:
        data = decode_json(raw)
    except ValueError:
        return 400, {"message": "the request body is not valid JSON"}, {}
    if not isinstance(data, dict) or not isinstance(data.get("query"), list):
        return 422, {"message": 'an OpenRLHF request is {"query": [...], "prompts", "labels"}'}, {}
    queries: list[Any] = data["query"]
    columns = [_column(data, key, len(queries)) for key in ("prompts", "labels")]
    for column in columns:
        if isinstance(column, str):
            return 422, {"message": column}, {}
    bodies = [_body(q, p, lab) for q, p, lab in zip(queries, *columns, strict=True)]
    for index, body in enumerate(bodies):
        if isinstance(body, str) and body:
            return 422, {"message": f"query {index}: {body}"}, {}
    sent = [b for b in bodies if isinstance(b, dict)]
    reply = await score_rollouts(
        sent,
        scorer,
        admission,
        timeout=timeout,
        max_batch=max_batch,
        receive=receive,
        on_disconnect=on_disconnect,
    )
    if reply is None or reply[0] != 200:
        return reply
    scored = iter(reply[1]["results"])
    # An empty response says nothing right: the config's error_reward, unsent.
    empty: dict[str, Any] = {"reward": scorer.reward_config.error_reward}
    entries = [next(scored) if isinstance(b, dict) else empty for b in bodies]
    for index, entry in enumerate(entries):
        if entry.get("error") is not None:
            error = entry["error"]
            return error["status"], {"message": f"query {index}: {error['message']}"}, {}
        failure = entry.get("failure")
        if failure is not None:
            status = FAILURE_STATUS[failure["kind"]]
            message = f"query {index} not verified ({failure['kind']}): {failure['reason']}"
            return status, {"message": message, "failure": failure}, {"retry-after": "1"}
    rewards = [entry["reward"] for entry in entries]
    return 200, {"rewards": rewards, "scores": rewards, "extra_logs": _extra_logs(entries)}, {}


def openrlhf_route(
    scorer: RewardScorer, admission: Admission, *, timeout: float, max_batch: int
) -> BodyRoute:
    """The ``/get_reward`` handler of a service (its scorer, admission and limits)."""
    return functools.partial(
        score_openrlhf, scorer=scorer, admission=admission, timeout=timeout, max_batch=max_batch
    )


def declare_openrlhf(app: FastAPI) -> None:
    """``/get_reward`` as the OpenAPI document shows it (served by the fast routes)."""

    @app.post(
        OPENRLHF_PATH,
        responses={
            400: {"description": "body is not JSON"},
            404: {"description": "a label names an unknown question"},
            413: {"description": "more queries than --max-batch or --max-inflight"},
            422: {"description": "not an OpenRLHF request, or a query without a response"},
            502: {"description": "the judge was unreachable or refused"},
            503: {"description": "over --max-inflight (Retry-After), or an executor failed"},
            504: {"description": "scoring took longer than the time limit"},
        },
    )
    async def get_reward(body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - docs
        """OpenRLHF's remote reward protocol: ``{"query", "prompts", "labels"}`` in,
        ``{"rewards", "scores", "extra_logs"}`` out, one entry per query."""
        raise NotImplementedError
