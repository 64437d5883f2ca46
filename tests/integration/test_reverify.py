"""``verifleet reverify``: stored answers judged again without any answering
call; only the stages whose inputs changed ask a model. The endpoints are the
scripted double of ``bench/endpoint.py`` (one per role, so each one's ``/stats``
counts one role's calls: a real model's calls cannot be counted from outside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark
from _support.mcp_server import McpServer, mcp_server

from bench.endpoint import EndpointConfig, run_endpoint_in_thread
from verifleet.orchestrator import read_results, write_results
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.reverify import ReverifyRunner
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.schemas import (
    Benchmark,
    LLMRubricTrait,
    ModelConfig,
    Rubric,
    VerificationConfig,
    dump_benchmark,
)
from verifleet.store import JobStatus

__all__ = ["mcp_server"]

pytestmark = pytest.mark.integration

N = 6


def _with_traits(bench: Benchmark, *names: str) -> Benchmark:
    traits = [LLMRubricTrait(name=n, description=f"Is the answer {n}?") for n in names]
    return bench.model_copy(update={"global_rubric": Rubric(llm_traits=traits)})


def _verdicts(results: object) -> dict[str, object]:
    return {r.metadata.question_id: r.template.verify_result for r in results}  # type: ignore[attr-defined]


def test_reverify_reuses_answers_and_unchanged_stages(tmp_path: Path) -> None:
    base, answers = capitals_benchmark(N)
    bench = _with_traits(base, "concise")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as other_judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
            evaluation_mode="template_and_rubric",
        )
        stored = [r for _u, rs in LocalRunner(bench, config).run() for r in rs]
        assert (answer.stats().calls, judge.stats().calls) == (N, 2 * N)
        source = tmp_path / "first.parquet"
        write_results(stored, source)
        answer.reset()
        judge.reset()

        # One rubric trait more: no answering call, no parse; one rubric call each.
        more = _with_traits(base, "concise", "polite")
        runner = ReverifyRunner(more, config, read_results(source), source=str(source))
        again = [r for _u, rs in runner.run() for r in rs]
        assert (answer.stats().calls, judge.stats().calls) == (0, N)
        assert _verdicts(again) == _verdicts(stored)
        before = {r.metadata.question_id: r for r in stored}
        for r in again:
            old = before[r.metadata.question_id]
            scores = r.rubric.llm_trait_scores
            assert set(scores) == {"concise", "polite"}
            assert scores["concise"] == old.rubric.llm_trait_scores["concise"]
            assert r.metadata.derived_from == f"{source}#{old.metadata.result_id}"
            assert r.template.raw_llm_response == old.template.raw_llm_response
        judge.reset()

        # Another judge, through the command line: one parse call per result.
        bench_file = tmp_path / "bench.yaml"
        dump_benchmark(base, bench_file)
        out = tmp_path / "judged.parquet"
        done = run_cli(
            "reverify",
            str(source),
            "--benchmark",
            str(bench_file),
            "--parsing",
            f"{other_judge.base_url}#judge2",
            "--out",
            str(out),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"re-verifying {N} stored units and 0 scenario runs" in done.stderr
        assert (answer.stats().calls, judge.stats().calls, other_judge.stats().calls) == (0, 0, N)
    judged = read_results(out)
    assert len(judged) == N
    assert {r.metadata.parsing.model_name for r in judged} == {"judge2"}
    assert _verdicts(judged) == _verdicts(stored)
    assert all(r.metadata.derived_from.startswith(f"{source}#") for r in judged)
    # The stored answer cost nothing again; its tokens are those it had.
    for r in judged:
        usage = r.template.usage_metadata
        assert usage["answer_generation"]["input_tokens"] > 0


def test_reverify_refuses_a_results_file_without_a_benchmark(tmp_path: Path) -> None:
    source = tmp_path / "empty.json"
    write_results([], source)
    done = run_cli(
        "reverify",
        str(source),
        "--parsing",
        "http://127.0.0.1:9/v1#j",
        "--out",
        str(tmp_path / "o.parquet"),
    )
    assert done.returncode == 2 and "does not hold its benchmark: pass --benchmark" in done.stderr
    missing = run_cli(
        "reverify", str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "o.parquet")
    )
    assert missing.returncode == 2 and "no such results file" in missing.stderr


def test_reverify_a_fleet_job_on_the_fleet(fleet: Fleet, redis_url: str) -> None:
    bench, answers = capitals_benchmark(N)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as other_judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
            replicate_count=2,
        )
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        source = Job.submit(bench, config, redis_url)
        assert source.wait(timeout=120).status == JobStatus.DONE
        assert answer.stats().calls == 2 * N
        answer.reset()
        judge.reset()
        done = run_cli(
            "reverify",
            source.job_id,
            "--redis",
            redis_url,
            "--parsing",
            f"{other_judge.base_url}#judge2",
            "--submit",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        job_id = re.search(r"job (\S+): re-judges", done.stdout).group(1)  # type: ignore[union-attr]
        rejudged = Job(job_id, redis_url)
        assert rejudged.wait(timeout=120).status == JobStatus.DONE
        assert (answer.stats().calls, judge.stats().calls) == (0, 0)
        assert other_judge.stats().calls <= 2 * N  # identical answers share a parse call
    results = rejudged.result_set()
    before = {(r.metadata.question_id, r.metadata.replicate): r for r in source.result_set()}
    assert len(results) == 2 * N
    for r in results:
        old = before[(r.metadata.question_id, r.metadata.replicate)]
        assert r.metadata.parsing.model_name == "judge2"
        assert r.template.raw_llm_response == old.template.raw_llm_response
        assert r.template.verify_result == old.template.verify_result
        assert r.metadata.derived_from == f"job:{source.job_id}#{old.metadata.result_id}"


def test_reverify_judges_scenario_runs_again_turn_by_turn(tmp_path: Path) -> None:
    """A results file of scenario runs (``verifleet run``), judged again by
    another judge through ``verifleet reverify``: no answering call, one parse per
    turn, the same paths and outcomes, each turn derived from its stored turn.
    Then a template changed so that a turn's verdict flips: the new route leads
    where the stored run has no answer, and that run says so (status ``error`` at
    stage ``reverify``) while the others are judged."""
    from _support.scenarios import ANSWERS, scenario_benchmark, template

    import verifleet

    bench = scenario_benchmark(broken=False)
    bench_file = tmp_path / "bench.yaml"
    dump_benchmark(bench, bench_file)
    source = tmp_path / "first.json"
    with (
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as judge,
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as other_judge,
    ):
        config = {
            "answering_models": [f"{answer.base_url}#answerer"],
            "parsing_models": [f"{judge.base_url}#judge"],
        }
        stored = verifleet.run(bench_file, config, out=source)
        turns = sum(r.turn_count for r in stored.scenario_results or [])
        assert turns == 9 and len(stored) == turns + 1  # and the plain question
        answer.reset()

        def reverify(bench_path: Path, out: Path, judge_url: str) -> None:
            done = run_cli(
                "reverify",
                str(source),
                "--benchmark",
                str(bench_path),
                "--parsing",
                judge_url,
                "--out",
                str(out),
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            assert "re-verifying 1 stored units and 4 scenario runs" in " ".join(
                done.stderr.split()
            )

        judged_file = tmp_path / "judged.json"
        reverify(bench_file, judged_file, f"{other_judge.base_url}#judge2")
        assert answer.stats().calls == 0, "no answering call"
        assert other_judge.stats().calls == turns + 1, "one parse per turn and question"

        # The start node of branch_pass now expects another gene: its stored
        # answer (BCL2) fails, the route goes to 'retry', which it never answered.
        document = bench.model_dump(mode="json")
        [scenario] = [s for s in document["scenarios"] if s["id"] == "branch_pass"]
        scenario["nodes"][0]["question"]["answer_template"] = template("kras")
        changed = tmp_path / "changed.yaml"
        dump_benchmark(Benchmark.model_validate(document), changed)
        diverged_file = tmp_path / "diverged.json"
        reverify(changed, diverged_file, f"{judge.base_url}#judge")
        assert answer.stats().calls == 0

    before = {r.scenario_id: r for r in stored.scenario_results or []}
    judged = read_results(judged_file)
    runs = {r.scenario_id: r for r in judged.scenario_results or []}
    assert set(runs) == set(before)
    for scenario_id, run in runs.items():
        old = before[scenario_id]
        assert (run.status, run.path, run.outcome_results) == (
            old.status,
            old.path,
            old.outcome_results,
        ), scenario_id
    stored_ids = {r.metadata.result_id for r in stored}
    for r in judged:
        assert r.metadata.parsing.model_name == "judge2"
        assert r.metadata.derived_from is not None
        assert r.metadata.derived_from.split("#")[1] in stored_ids

    diverged = read_results(diverged_file)
    runs = {r.scenario_id: r for r in diverged.scenario_results or []}
    assert runs["branch_fail"].status == before["branch_fail"].status
    failed = runs["branch_pass"]
    assert (failed.status, failed.path) == ("error", ["start"])
    assert failed.terminal_failure is not None and failed.terminal_failure.stage == "reverify"
    assert failed.terminal_failure.reason == (
        "judged again, turn 1 goes to node 'retry' where the stored run went to node "
        "'praise': there is no stored answer to judge (run the scenario again)"
    )
    [(description, _exc)] = diverged.errors or []
    assert description.startswith("scenario branch_pass,")


def test_reverify_scenario_runs_of_a_fleet_job_on_the_fleet(fleet: Fleet, redis_url: str) -> None:
    """``reverify JOB --submit`` on a job with scenarios: the workers judge each
    stored run again turn by turn with the new judge; nothing asks the answering
    model, each turn is parsed once, and the runs take the same paths."""
    from _support.scenarios import ANSWERS, scenario_benchmark

    bench = scenario_benchmark(broken=False)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as judge,
        run_endpoint_in_thread(EndpointConfig(answers=ANSWERS)) as other_judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
        )
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        source = Job.submit(bench, config, redis_url)
        assert source.wait(timeout=120).status == JobStatus.DONE
        stored = source.result_set()
        turns = sum(r.turn_count for r in stored.scenario_results or [])
        assert turns == 9
        answer.reset()
        done = run_cli(
            "reverify",
            source.job_id,
            "--redis",
            redis_url,
            "--parsing",
            f"{other_judge.base_url}#judge2",
            "--submit",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        job_id = re.search(r"job (\S+): re-judges", done.stdout).group(1)  # type: ignore[union-attr]
        rejudged = Job(job_id, redis_url)
        assert rejudged.wait(timeout=120).status == JobStatus.DONE
        assert answer.stats().calls == 0
        assert other_judge.stats().calls == turns + 1, "one parse per turn and question"
    results = rejudged.result_set()
    before = {r.scenario_id: r for r in stored.scenario_results or []}
    runs = {r.scenario_id: r for r in results.scenario_results or []}
    assert set(runs) == set(before)
    for scenario_id, run in runs.items():
        old = before[scenario_id]
        assert (run.status, run.path, run.outcome_results) == (
            old.status,
            old.path,
            old.outcome_results,
        ), scenario_id
    assert len(results) == turns + 1
    assert all(r.metadata.parsing.model_name == "judge2" for r in results)
    assert all((r.metadata.derived_from or "").startswith(f"job:{source.job_id}#") for r in results)


def test_reverify_judges_an_agents_stored_trace_without_calling_the_agent(
    mcp_server: McpServer,
) -> None:
    """A tool-using agent's answer (real MCP server; the scripted tool-calling
    endpoint of ``_support/agent_endpoint.py``, since no local model calls tools
    on demand) judged again by another judge: no agent step, one judge call, the
    stored trace and agent metrics kept."""
    from _support.agent_endpoint import ScriptedEndpoint, build_app
    from _support.asgi_thread import serve_in_thread

    from verifleet.schemas import Question

    state = ScriptedEndpoint()
    served = serve_in_thread(build_app(state), lifespan="off")
    try:
        base = f"{served.url}/v1"
        question = Question(
            id="tool",
            question='How long is BCL2? [tool:gene_length {"gene": "BCL2"}]',
            raw_answer="239",
            answer_template=(
                "class Answer(BaseAnswer):\n"
                '    value: int = Field(description="The number the response gives")\n'
                "    def model_post_init(self, __context):\n"
                '        self.correct = {"value": 239}\n'
                "    def verify(self) -> bool:\n"
                '        return self.value == self.correct["value"]\n'
            ),
        )
        agent = ModelConfig(
            model_name="scripted",
            interface="openai_endpoint",
            endpoint_base_url=base,
            mcp_urls_dict={"tools": mcp_server.url},
        )

        def judge(name: str) -> ModelConfig:
            return ModelConfig(model_name=name, interface="openai_endpoint", endpoint_base_url=base)

        bench = Benchmark(name="agent", questions=[question])
        config = VerificationConfig.build(answering_models=[agent], parsing_models=[judge("j1")])
        [stored] = [r for _u, rs in LocalRunner(bench, config).run() for r in rs]
        assert stored.template is not None and stored.template.verify_result is True
        agent_steps, judged = state.counts["agent"], state.counts["judge"]
        assert agent_steps >= 2 and judged >= 1

        other = VerificationConfig.build(answering_models=[agent], parsing_models=[judge("j2")])
        runner = ReverifyRunner(bench, other, [stored], source="first.parquet")
        [again] = [r for _u, rs in runner.run() for r in rs]
        assert state.counts["agent"] == agent_steps, "no agent step"
        assert state.counts["judge"] == judged + 1, "one parse by the new judge"
    finally:
        served.stop()
    assert again.template is not None and again.template.verify_result is True
    assert again.metadata.parsing.model_name == "j2"
    assert again.template.trace_messages == stored.template.trace_messages
    assert again.template.agent_metrics == stored.template.agent_metrics
    assert again.metadata.derived_from == f"first.parquet#{stored.metadata.result_id}"


def test_reverify_on_the_fleet_with_a_rubric_trait_added_asks_only_for_that_trait(
    fleet: Fleet, redis_url: str, tmp_path: Path
) -> None:
    """``reverify JOB --benchmark more-traits.yaml --submit``: the fleet's workers
    make no answering call and no parse; the judge is asked once per result, for
    the new trait, and the old trait keeps its score."""
    base, answers = capitals_benchmark(N)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
            evaluation_mode="template_and_rubric",
        )
        fleet.start_worker("w1", concurrency=4)
        fleet.wait_ready(["w1"])
        source = Job.submit(_with_traits(base, "concise"), config, redis_url)
        assert source.wait(timeout=120).status == JobStatus.DONE
        assert (answer.stats().calls, judge.stats().calls) == (N, 2 * N)
        answer.reset()
        judge.reset()
        more = tmp_path / "more.yaml"
        dump_benchmark(_with_traits(base, "concise", "polite"), more)
        done = run_cli(
            "reverify",
            source.job_id,
            "--redis",
            redis_url,
            "--benchmark",
            str(more),
            "--submit",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        job_id = re.search(r"job (\S+): re-judges", done.stdout).group(1)  # type: ignore[union-attr]
        rejudged = Job(job_id, redis_url)
        assert rejudged.wait(timeout=120).status == JobStatus.DONE
        assert (answer.stats().calls, judge.stats().calls) == (0, N)
    before = {r.metadata.question_id: r for r in source.result_set()}
    results = rejudged.result_set()
    assert len(results) == N
    for r in results:
        old = before[r.metadata.question_id]
        scores = r.rubric.llm_trait_scores
        assert set(scores) == {"concise", "polite"}
        assert scores["concise"] == old.rubric.llm_trait_scores["concise"]
        assert r.template.verify_result == old.template.verify_result


def test_a_fixed_ground_truth_is_judged_again_from_the_call_cache(tmp_path: Path) -> None:
    """A template's ground truth fixed after a run changes its source (and so its
    template id): reverify parses again, but the parse's request (schema, prompt,
    answer) is unchanged, so with ``--cache`` on both runs no judge is asked; the
    verdict follows the fixed ground truth. Without the cache, the judge is asked."""
    from verifleet.limits import LocalCallGate
    from verifleet.pipeline import DiskCallCache, PipelineResources

    bench, answers = capitals_benchmark(N)  # q0000 is answered "Wrong0"
    cache = DiskCallCache(tmp_path / "calls.sqlite3")

    def resources() -> PipelineResources:
        return PipelineResources(call_gate=LocalCallGate(), call_cache=cache)

    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
            cache=True,
        )
        stored = [
            r for _u, rs in LocalRunner(bench, config, resources=resources()).run() for r in rs
        ]
        assert _verdicts(stored)["q0000"] is False
        answer.reset()
        judge.reset()
        fixed = bench.model_copy(deep=True)
        first = fixed.questions[0]
        first.answer_template = (first.answer_template or "").replace('"Capital0"', '"Wrong0"')
        assert first.template_id != bench.questions[0].template_id
        runner = ReverifyRunner(fixed, config, stored, source="first", resources=resources())
        again = [r for _u, rs in runner.run() for r in rs]
        assert (answer.stats().calls, judge.stats().calls) == (0, 0)
        assert _verdicts(again) == {**_verdicts(stored), "q0000": True}
        uncached = config.model_copy(update={"cache": False})
        runner = ReverifyRunner(fixed, uncached, stored, source="first")
        [r for _u, rs in runner.run() for r in rs]
        assert (answer.stats().calls, judge.stats().calls) == (0, 1), "only the changed template"


def test_reverify_with_a_config_file_that_turns_the_rubric_on(tmp_path: Path) -> None:
    """``reverify RESULTS --config cfg.yaml``: a template-only run judged again with
    ``evaluation_mode: template_and_rubric``: the same judge keeps its parses and
    is asked only for the rubric trait, once per result."""
    import yaml

    base, answers = capitals_benchmark(N)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = VerificationConfig.build(
            answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
            parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
        )
        stored = [r for _u, rs in LocalRunner(base, config).run() for r in rs]
        assert all(r.rubric is None or not r.rubric.rubric_evaluation_performed for r in stored)
        source = tmp_path / "first.parquet"
        write_results(stored, source)
        answer.reset()
        judge.reset()
        bench_file, config_file = tmp_path / "bench.yaml", tmp_path / "cfg.yaml"
        dump_benchmark(_with_traits(base, "concise"), bench_file)
        config_file.write_text(yaml.safe_dump({"evaluation_mode": "template_and_rubric"}))
        out = tmp_path / "with-rubric.parquet"
        done = run_cli(
            "reverify",
            str(source),
            "--benchmark",
            str(bench_file),
            "--config",
            str(config_file),
            "--parsing",
            f"{judge.base_url}#judge",
            "--out",
            str(out),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert (answer.stats().calls, judge.stats().calls) == (0, N)
    judged = read_results(out)
    assert _verdicts(judged) == _verdicts(stored)
    assert all(set(r.rubric.llm_trait_scores) == {"concise"} for r in judged)
