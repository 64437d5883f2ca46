"""The sandbox pool with real executor processes (strict mode: bubblewrap +
seccomp + rlimits): honest templates give what the in-process functions give;
hostile ones fail alone and their executor is replaced."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from verifleet.sandbox import SandboxPool, SandboxSettings
from verifleet.sandbox import _warm as warm_module
from verifleet.sandbox._warm import AFFINITY_WAIT
from verifleet.schemas import (
    CallableTrait,
    RubricError,
    TemplateValidationError,
    UntrustedCodeError,
)
from verifleet.templates import (
    build_answer,
    judge_json_schema,
    load_answer_class,
    parsed_ground_truth,
    parsed_llm_fields,
    source_digest,
)

pytestmark = pytest.mark.integration

HONEST = '''
from verifleet.templates import BaseAnswer, VerifiedField, ExactMatch, NumericTolerance

class Answer(BaseAnswer):
    """Capital and population."""

    city: str = VerifiedField(description="the capital", ground_truth="Paris", verify_with=ExactMatch())
    population: float = VerifiedField(
        description="millions", ground_truth=2.1, verify_with=NumericTolerance(tolerance=0.2)
    )

    def model_post_init(self, context):
        super().model_post_init(context)
        self.regex = {"cites": {"pattern": r"\\[\\d+\\]", "expected": 1, "match_type": "count"}}
'''


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    sandbox = SandboxPool(SandboxSettings(pool_size=1, timeout=3))
    yield sandbox
    sandbox.close()


def test_honest_template_matches_the_in_process_functions(pool: SandboxPool) -> None:
    handle = pool.load_template(HONEST, "q1")
    cls = load_answer_class(HONEST, "q1")
    raw = cls.raw_answer_class or cls
    assert handle.judge_schema() == judge_json_schema(raw)
    assert handle.ground_truth() == parsed_ground_truth(cls)
    assert handle.class_name == "Answer"
    assert handle.judge_fields == ("city", "population")

    data = {"city": "Paris", "population": 2.2}
    evaluation = pool.evaluate(handle, data, "Paris has 2.2 million people [1]")
    answer = build_answer(cls, data)
    answer.set_raw_trace("Paris has 2.2 million people [1]")
    assert evaluation.parsed == parsed_llm_fields(answer)
    verdict = evaluation.verification
    assert verdict is not None
    assert verdict.field_ok is answer.verify() is True
    assert verdict.field_results == answer.field_results()
    assert verdict.regex == answer.verify_regex("Paris has 2.2 million people [1]")
    assert verdict.verify_result is True

    invalid = pool.evaluate(handle, {"city": "Paris", "population": "many"}, "")
    assert invalid.invalid is not None and "population" in invalid.invalid


def test_invalid_template_is_refused_with_the_validation_message(pool: SandboxPool) -> None:
    with pytest.raises(TemplateValidationError, match="template imports 'os'"):
        pool.load_template("import os\n", "q2")


HANG_IN_VERIFY = """
from verifleet.templates import BaseAnswer

class Answer(BaseAnswer):
    value: str

    def verify(self) -> bool:
        while True:
            pass
"""


def test_a_hanging_verify_kills_only_its_call(pool: SandboxPool) -> None:
    handle = pool.load_template(HANG_IN_VERIFY, "loop")
    before = pool.stats().replacements
    with pytest.raises(TemplateValidationError, match="wall-clock limit") as info:
        pool.evaluate(handle, {"value": "x"}, "")
    assert info.value.question_id == "loop"
    # The call's own process was killed; the executor goes on serving.
    honest = pool.load_template(HONEST, "after")
    evaluation = pool.evaluate(honest, {"city": "Paris", "population": 2.1}, "[1]")
    assert evaluation.verification is not None and evaluation.verification.verify_result
    assert pool.stats().replacements == before


def test_a_memory_bomb_is_contained(pool: SandboxPool) -> None:
    bomb = HANG_IN_VERIFY.replace("while True:\n            pass", 'return len("x" * 10**11) > 0')
    handle = pool.load_template(bomb, "bomb")
    evaluation = pool.evaluate(handle, {"value": "x"}, "")
    assert evaluation.verification is not None
    assert evaluation.verification.field_ok is False
    assert evaluation.verification.error is not None
    assert "MemoryError" in evaluation.verification.error


def test_callable_traits_run_in_the_sandbox(pool: SandboxPool) -> None:
    source = "def evaluate(text):\n    return 'paris' in text.lower()\n"
    trait = CallableTrait(name="mentions", callable_source=source)
    assert pool.run_trait(trait.model_dump(mode="json"), "Paris!") is True

    pickled = CallableTrait.from_callable("short", lambda text: len(text) < 10)
    assert pool.run_trait(pickled.model_dump(mode="json"), "tiny") is True
    untrusted = pickled.model_copy(update={"trusted": False})
    with pytest.raises(UntrustedCodeError):
        pool.run_trait(untrusted.model_dump(mode="json"), "tiny")

    hang = CallableTrait(
        name="hang", callable_source="def f(text):\n    while True:\n        pass\n"
    )
    with pytest.raises(RubricError, match="'hang' crashed the sandbox"):
        pool.run_trait(hang.model_dump(mode="json"), "x")


def test_a_template_goes_back_to_the_executor_that_compiled_it() -> None:
    # Two idle executors, the one that compiled the template first in the idle
    # list: a plain LIFO hand-out would pick the other one and compile it again.
    sandbox = SandboxPool(SandboxSettings(pool_size=2, timeout=5))
    try:
        handle = sandbox.load_template(HONEST, "affinity")
        compiled = sandbox._executors.acquire()
        other = sandbox._executors.acquire()
        assert source_digest(handle.source) in compiled.known_templates
        assert source_digest(handle.source) not in other.known_templates
        sandbox._executors.release(compiled)
        sandbox._executors.release(other)
        for _ in range(3):
            evaluation = sandbox.evaluate(handle, {"city": "Paris", "population": 2.1}, "[1]")
            assert evaluation.verification is not None
        assert source_digest(handle.source) not in other.known_templates
        # A call with no template takes any idle executor, as before.
        assert sandbox._executors._preferred(None) == (1, False)
    finally:
        sandbox.close()


READS_ITS_ID = """
from verifleet.templates import BaseAnswer

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "x"}

    def verify(self) -> bool:
        return self.id == "qid-7" and self.value == self.correct["value"]
"""


def test_answers_carry_their_question_id_without_a_class_per_question(pool: SandboxPool) -> None:
    # One compiled class and one description serve every question of a
    # template; the id an answer sees in verify() is still its own question's.
    described = pool.stats().described
    for question_id, expected in (("qid-7", True), ("qid-8", False), ("qid-7", True)):
        handle = pool.load_template(READS_ITS_ID, question_id)
        assert handle.question_id == question_id
        evaluation = pool.evaluate(handle, {"value": "x"}, "")
        assert evaluation.verification is not None
        assert evaluation.verification.field_ok is expected, question_id
    assert pool.stats().described == described + 1


def test_a_call_waits_briefly_for_the_busy_executor_that_compiled_its_template(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The wait is stretched so that a loaded machine cannot delay this thread's
    # release past it (the caller would then rightly take the idle executor).
    monkeypatch.setattr(warm_module, "AFFINITY_WAIT", 5.0)
    sandbox = SandboxPool(SandboxSettings(pool_size=2, timeout=5))
    try:
        handle = sandbox.load_template(HONEST, "wait")
        compiled = sandbox._executors.acquire()
        other = sandbox._executors.acquire()
        sandbox._executors.release(other)
        assert source_digest(handle.source) in compiled.known_templates
        # The executor that knows the template is busy, another one is idle.
        results: list[object] = []
        caller = threading.Thread(
            target=lambda: results.append(
                sandbox.evaluate(handle, {"city": "Paris", "population": 2.1}, "[1]")
            )
        )
        caller.start()
        time.sleep(0.05)
        assert AFFINITY_WAIT > 0.01 and not results
        sandbox._executors.release(compiled)
        caller.join(timeout=10)
        assert len(results) == 1
        assert source_digest(handle.source) not in other.known_templates
        # A template no busy executor knows does not wait: it takes the idle one.
        held = sandbox._executors.acquire("some-template-nobody-compiled")
        assert held in (compiled, other)
        sandbox._executors.release(held)
    finally:
        sandbox.close()


def test_a_described_process_waits_for_its_call_while_a_used_one_can_go() -> None:
    # Two template processes per executor, a process per template: B is only
    # described (its unit waits for its model), A is described and evaluated,
    # then C needs a slot. Plain LRU would stop B (the least recently used) and
    # compile it again for its call; the router stops A, whose call came.
    settings = SandboxSettings(pool_size=1, timeout=5, fresh_state="template", template_processes=2)
    sandbox = SandboxPool(settings)
    sources = {name: HONEST.replace("Paris", name) for name in ("A", "B", "C")}
    try:
        with sandbox.scoped("job"):
            b = sandbox.load_template(sources["B"], "b")
            a = sandbox.load_template(sources["A"], "a")
            assert sandbox.evaluate(a, {"city": "A", "population": 2.1}, "[1]").verification
            sandbox.load_template(sources["C"], "c")
            result = sandbox.evaluate(b, {"city": "B", "population": 2.1}, "[1]")
        assert result.verification is not None and result.verification.field_ok
        assert sandbox.compiled_stats().compiled == 3
    finally:
        sandbox.close()


def test_static_checks_of_many_templates_in_one_round_trip(pool: SandboxPool) -> None:
    """One request checks a batch (parse and guard; nothing runs): each
    source's words are those of the check in process, a source the parser
    cannot take is reported alone, and an honest template passes."""
    from verifleet.templates import static_template_problem

    deep = "x = 1" + " + 1" * 200_000  # deeper than the parser's recursion allows
    sources = [HONEST, "class Answer(:\n    pass\n", "import os\n", deep, "_ = 1 / 0\n" + HONEST]
    problems = pool.static_problems(sources)
    assert len(problems) == len(sources)
    assert problems[0] is None and problems[4] is None  # only a compile refuses the last
    assert problems[1] == static_template_problem(sources[1])
    assert problems[2] == static_template_problem(sources[2])
    assert (
        problems[3] == "template code exhausted the sandbox: compiling the template: RecursionError"
    )
    assert pool.static_problems([]) == []


def test_start_waits_for_the_start_under_way_instead_of_queueing_a_second() -> None:
    # `verifleet run` starts its executor in the background first thing and its
    # runner calls start() again when the units begin: executors start one
    # after another from one thread, so a second start queued then would make
    # the units wait for two starts.
    sandbox = SandboxPool(SandboxSettings(pool_size=2, timeout=5))
    try:
        background = threading.Thread(target=sandbox.start)
        background.start()
        while sandbox.stats().executors == 0:  # its start is under way
            time.sleep(0.001)
        sandbox.start()
        assert sandbox.stats().executors == 1  # that one, not a second
        background.join()
        sandbox.start()  # one is running: nothing to start
        assert sandbox.stats().executors == 1
    finally:
        sandbox.close()
