"""``/verify`` is fair between callers: one caller's slow inline templates never
hold the executors another caller's benchmark questions need.

Four connections (two executors' worth, and two waiting) send inline questions whose ``verify()`` spins for seconds (in
the sandbox, which is what an attacker controls); meanwhile another caller asks
about the benchmark's question. With the inline questions on executors of their
own (the service's default in ``verifleet serve``), the other caller's replies
all come back before the first slow one; the honest control is the same load
with the executors shared (``inline_executors=0``, the old behaviour), where the
other caller waits behind the slow templates. Only the order of completions is
compared, never a duration.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from _support.asgi_thread import serve_in_thread
from _support.reward import CORRECT, JUDGE_ANSWERS, geo_benchmark

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.reward import RewardConfig, reward_resources
from verifleet.reward.serve import create_app
from verifleet.schemas import ModelConfig

pytestmark = pytest.mark.integration

#: ``verify()`` spins for 6 s of wall time (templates may not import ``time``: a clock loop).
SLOW_TEMPLATE = """
import datetime


class Answer(BaseAnswer):
    value: str = Field(description="Any value")

    def verify(self) -> bool:
        end = datetime.datetime.now() + datetime.timedelta(seconds=6)
        while datetime.datetime.now() < end:
            pass
        return True
"""

ATTACKERS = 4
ANSWERS = {
    **JUDGE_ANSWERS,
    **{f"slow {i}": {"fields": {"value": "x"}} for i in range(ATTACKERS)},
}


@pytest.fixture(scope="module")
def judge() -> Iterator[RunningEndpoint]:
    with run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as endpoint:
        yield endpoint


def _completion_order(judge: RunningEndpoint, inline_executors: int) -> list[str]:
    """Run the attack and the victim's requests; the order their replies came in."""
    app = create_app(
        geo_benchmark(),
        [ModelConfig.parse(f"{judge.base_url}#judge")],
        RewardConfig(),
        resources=reward_resources(),
        inline_executors=inline_executors,
        request_timeout=120,
    )
    order: list[str] = []
    lock = threading.Lock()
    with serve_in_thread(app, lifespan="off") as served:

        def post(label: str, body: dict[str, object]) -> None:
            reply = httpx.post(served.url + "/verify", json=body, timeout=120, trust_env=False)
            assert reply.status_code == 200, reply.text
            with lock:
                order.append(label)

        # The benchmark's template is compiled before the attack (a warm server).
        post("warm-up", {"question_id": "geo", "response": CORRECT})
        start = judge.stats().calls
        attackers = [
            threading.Thread(
                target=post,
                args=(
                    "attacker",
                    {
                        "question": {
                            "id": f"slow-{uuid.uuid4().hex[:8]}",
                            "text": f"Anything {i}?",
                            "answer_template": SLOW_TEMPLATE,
                        },
                        "response": f"slow {i}",
                    },
                ),
            )
            for i in range(ATTACKERS)
        ]
        for thread in attackers:
            thread.start()
        # Every attacker has its parsed answer (the judge answered it): their
        # templates are running or queued for an executor before the victim asks.
        deadline = time.monotonic() + 120
        while judge.stats().calls - start < ATTACKERS:
            assert time.monotonic() < deadline, "the attackers never reached the judge"
            time.sleep(0.02)
        for _ in range(2):
            post("victim", {"question_id": "geo", "response": CORRECT})
        for thread in attackers:
            thread.join(timeout=180)
    return order


def test_slow_inline_templates_do_not_delay_another_callers_benchmark_requests(
    judge: RunningEndpoint,
) -> None:
    fair = _completion_order(judge, inline_executors=2)
    shared = _completion_order(judge, inline_executors=0)
    assert fair.count("attacker") == shared.count("attacker") == ATTACKERS
    # Two executors run two slow templates while the other two wait for them.
    # Own executors: the victim's replies come before the waiting slow ones
    # (those run only once the first two are done).
    last_victim = len(fair) - 1 - fair[::-1].index("victim")
    assert fair[:last_victim].count("attacker") <= 2, fair
    # Control, shared executors: the victim's first request waits behind every
    # slow template that asked before it, the queued ones included.
    assert shared[: shared.index("victim")].count("attacker") >= 3, shared
