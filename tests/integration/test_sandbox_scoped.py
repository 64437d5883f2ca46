"""What one job stores or compiles is never used for another job's template.

Real executors (strict mode). Two attacks from issue 20: a job stores a false
description of someone else's template at submission (the fleet primes worker
processes with it), and two different sources share one template id (it is MD5
of the source with trailing whitespace stripped, so a trailing space inside a
string literal is enough: no MD5 collision needs computing to show that the
template id cannot be what compiled classes and descriptions are keyed by).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.schemas import TemplateValidationError, compute_template_id

pytestmark = pytest.mark.integration

VICTIM = """
from verifleet.templates import BaseAnswer, VerifiedField, ExactMatch


class Answer(BaseAnswer):
    city: str = VerifiedField(description="the capital", ground_truth="Paris", verify_with=ExactMatch())
"""

#: ``@@`` becomes trailing spaces (one variant) or nothing (the other): the
#: template id strips them, Python does not.
TWIN = '''
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": """Paris@@
"""}

    def verify(self) -> bool:
        return self.value == self.correct["value"]
'''
SPACED, PLAIN = TWIN.replace("@@", "   "), TWIN.replace("@@", "")


@pytest.fixture
def pool() -> Iterator[SandboxPool]:
    sandbox = SandboxPool(SandboxSettings(pool_size=1, timeout=5))
    yield sandbox
    sandbox.close()


def test_a_primed_description_counts_only_for_the_job_that_stored_it(pool: SandboxPool) -> None:
    honest = SandboxPool(SandboxSettings(pool_size=1, timeout=5))
    try:
        truth = honest.load_template(VICTIM, "q").description()
    finally:
        honest.close()
    planted = dict(truth, ground_truth={"city": "Berlin"}, judge_fields=["planted"])
    pool.prime(VICTIM, {"problem": "planted refusal"}, scope="attacker-refusal")
    pool.prime(VICTIM, planted, scope="attacker")
    assert pool.knows(VICTIM, scope="attacker") and not pool.knows(VICTIM, scope="victim")
    assert not pool.knows(VICTIM) and pool.description(VICTIM) is None  # not its own word

    with pool.scoped("attacker-refusal"), pytest.raises(TemplateValidationError, match="planted"):
        pool.load_template(VICTIM, "q")
    with pool.scoped("attacker"):
        assert pool.load_template(VICTIM, "q").judge_fields == ("planted",)
    assert pool.stats().described == 0

    # The victim's units, in their own scope or none, get what an executor says.
    with pool.scoped("victim"):
        handle = pool.load_template(VICTIM, "q1")
    assert handle.description() == truth and handle.ground_truth() == {"city": "Paris"}
    assert pool.stats().described == 1
    # Described in the victim's template process, after whatever the victim's
    # other templates' code did there: the victim's word only.
    assert pool.knows(VICTIM, scope="victim") and not pool.knows(VICTIM)
    assert not pool.knows(VICTIM, scope="third") and pool.description(VICTIM) is None
    with pool.scoped("victim"):
        assert pool.description(VICTIM) == truth
    assert pool.load_template(VICTIM, "q2").description() == truth
    assert pool.stats().described == 2
    assert pool.description(VICTIM) == truth
    # What this process described in a process of that source alone is shared
    # by every scope, the attacker's included: it is the template's own word.
    with pool.scoped("attacker"):
        assert pool.load_template(VICTIM, "q").description() == truth
    assert pool.stats().described == 2


def test_two_sources_with_one_template_id_share_nothing(pool: SandboxPool) -> None:
    assert SPACED != PLAIN and compute_template_id(SPACED) == compute_template_id(PLAIN)
    reply = {"value": "Paris   \n"}
    spaced = pool.load_template(SPACED, "q")
    first = pool.evaluate(spaced, reply, "")
    plain = pool.load_template(PLAIN, "q")  # the same (only) executor
    second = pool.evaluate(plain, reply, "")
    assert spaced.ground_truth() == {"value": "Paris   \n"}
    assert plain.ground_truth() == {"value": "Paris\n"}
    assert first.verification is not None and first.verification.verify_result is True
    assert second.verification is not None and second.verification.verify_result is False
    assert pool.stats().described == 2


REMEMBERS = """
from verifleet.templates import BaseAnswer

SEEN = []


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "NAME"}

    def verify(self) -> bool:
        SEEN.append(self.value)
        return len(SEEN) == 1
"""


def test_a_jobs_template_process_is_replaced_after_its_share_of_templates() -> None:
    # Each compiled class stays in its job's template process: past
    # templates_per_process (3 here) a fresh process takes over, so a job of
    # many templates cannot grow one without bound. Seen through a template
    # that remembers its calls (job mode: a job's templates and calls share
    # the process).
    sandbox = SandboxPool(
        SandboxSettings(pool_size=1, timeout=5, fresh_state="job", templates_per_process=3)
    )
    try:
        with sandbox.scoped("job"):
            first = sandbox.load_template(REMEMBERS.replace("NAME", "first"), "q0")
            verdicts = [sandbox.evaluate(first, {"value": "first"}, "") for _ in range(2)]
            # Two more templates fill the process (3 classes) ...
            for name in ("second", "third"):
                handle = sandbox.load_template(REMEMBERS.replace("NAME", name), name)
                verdicts.append(sandbox.evaluate(handle, {"value": name}, ""))
            # ... still the same process: the first template remembers.
            verdicts.append(sandbox.evaluate(first, {"value": "first"}, ""))
            fourth = sandbox.load_template(REMEMBERS.replace("NAME", "fourth"), "q4")
            verdicts.append(sandbox.evaluate(fourth, {"value": "fourth"}, ""))
            # The fourth went to a fresh process: the first is compiled anew there.
            verdicts.append(sandbox.evaluate(first, {"value": "first"}, ""))
    finally:
        sandbox.close()
    oks = [v.verification.field_ok if v.verification else None for v in verdicts]
    assert oks == [True, False, True, True, False, True, True]


def test_processes_whose_units_wait_are_kept_beyond_the_kept_count() -> None:
    # A unit describes its template as it starts and evaluates once the model
    # replied: with more units waiting than template_processes (2 here), each
    # waiting process is kept (it would otherwise be stopped and its template
    # compiled again for the call: 564 compiles for 300 questions with 64 in
    # flight). Once evaluated, only template_processes of them stay.
    sandbox = SandboxPool(SandboxSettings(pool_size=1, timeout=5, template_processes=2))
    sources = [REMEMBERS.replace("NAME", f"n{i}") for i in range(8)]
    try:
        with sandbox.scoped("job"):
            handles = [sandbox.load_template(s, f"q{i}") for i, s in enumerate(sources)]
            verdicts = [sandbox.evaluate(h, {"value": f"n{i}"}, "") for i, h in enumerate(handles)]
            assert sandbox.compiled_stats().compiled == 8
            # Eight processes done: a new template stops the least recently
            # used of them until two are left with it.
            fresh = sandbox.load_template(REMEMBERS.replace("NAME", "new"), "q-new")
            sandbox.evaluate(fresh, {"value": "new"}, "")
            assert sandbox.compiled_stats().compiled == 9
            sandbox.evaluate(handles[0], {"value": "n0"}, "")  # its process was stopped
            assert sandbox.compiled_stats().compiled == 10
            sandbox.evaluate(fresh, {"value": "new"}, "")  # one of the two kept
            assert sandbox.compiled_stats().compiled == 10
    finally:
        sandbox.close()
    assert all(v.verification is not None and v.verification.field_ok for v in verdicts)
