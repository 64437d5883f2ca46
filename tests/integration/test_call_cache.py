"""The model-call cache: an identical second run makes no model call and gives
the same results; replicates stay independent samples; failed calls are never
cached; one cache serves the whole fleet. The endpoints are the scripted double
of ``bench/endpoint.py``, whose ``/stats`` counts the calls it received (a real
model's calls cannot be counted from outside)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support.fleet import Fleet, run_cli
from _support.jobs import capitals_benchmark, comparable
from _support.mcp_server import McpServer, mcp_server

from bench.endpoint import EndpointConfig, RunningEndpoint, run_endpoint_in_thread
from verifleet.limits import LocalCallGate
from verifleet.orchestrator._fleet.job import Job
from verifleet.orchestrator._local.runner import LocalRunner
from verifleet.pipeline import DiskCallCache, PipelineResources
from verifleet.schemas import Benchmark, ModelConfig, PriceTable, Question, VerificationConfig
from verifleet.store import JobStatus, RedisCallCache, ResultStore

__all__ = ["mcp_server"]

pytestmark = pytest.mark.integration

PRICES = PriceTable.model_validate(
    {"answerer": {"input": 1, "output": 2}, "judge": {"input": 1, "output": 1}}
)


def _config(answer: RunningEndpoint, judge: RunningEndpoint, **extra: object) -> VerificationConfig:
    return VerificationConfig.build(
        answering_models=[ModelConfig.parse(f"{answer.base_url}#answerer")],
        parsing_models=[ModelConfig.parse(f"{judge.base_url}#judge")],
        retry_policy={"max_attempts": 1},
        **extra,
    )


def _run(bench: object, config: VerificationConfig, cache: DiskCallCache) -> list:
    resources = PipelineResources(call_gate=LocalCallGate(), call_cache=cache)
    return [r for _u, rs in LocalRunner(bench, config, resources=resources).run() for r in rs]  # type: ignore[arg-type]


def test_an_identical_second_run_makes_no_call_and_gives_the_same_results(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(8)
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = _config(answer, judge, cache=True, replicate_count=2, pricing=PRICES)
        first = _run(bench, config, cache)
        # Replicates are independent samples: each has its own answering call.
        # The scripted model answers both replicates alike, and a parse is keyed
        # by its messages, not the replicate: a parse finished before its twin
        # starts answers it from the cache.
        assert answer.stats().calls == 16
        assert 8 <= judge.stats().calls <= 16
        answer.reset()
        judge.reset()
        second = _run(bench, config, cache)
        assert (answer.stats().calls, judge.stats().calls) == (0, 0)
    assert comparable(second) == comparable(first)
    for r in second:
        usage = r.template.usage_metadata
        assert usage["answer_generation"]["cache_hits"] == 1
        assert usage["parsing"]["cache_hits"] == 1
        assert usage["total"]["cost_usd"] == 0.0, "a cache hit costs nothing"
        # Tokens are those of the call as first made.
        before = next(f for f in first if comparable([f]).keys() == comparable([r]).keys())
        assert (
            usage["total"]["input_tokens"]
            == before.template.usage_metadata["total"]["input_tokens"]
        )
    assert all("cache_hits" not in r.template.usage_metadata["answer_generation"] for r in first)
    stats = cache.stats()
    assert stats["entries"] == 16 + 8 and stats["hits"] >= 32


def test_without_cache_true_the_cache_is_not_used(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(3)
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = _config(answer, judge)
        _run(bench, config, cache)
        _run(bench, config, cache)
        assert (answer.stats().calls, judge.stats().calls) == (6, 6)
    assert cache.stats()["entries"] == 0


def test_failed_calls_are_never_cached(tmp_path: Path) -> None:
    bench, answers = capitals_benchmark(4)
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers, rate_5xx=1.0)) as judge,
    ):
        config = _config(answer, judge, cache=True)
        failed = _run(bench, config, cache)
        assert all(not r.metadata.completed_without_errors for r in failed)
        assert cache.stats()["entries"] == 4, "the 4 answers, none of the failed parses"
        _run(bench, config, cache)
        # The answers came from the cache; every parse was tried again.
        assert (answer.stats().calls, judge.stats().calls) == (4, 8)


def test_cache_stats_and_clear_on_the_command_line(tmp_path: Path) -> None:
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    cache.put("k", b'{"reply": "x", "usage": null}')
    assert cache.get("k") is not None and cache.get("other") is None
    env_args = ("--local", "--cache-dir", str(tmp_path))
    stats = run_cli("cache", "stats", *env_args)
    assert stats.returncode == 0, stats.stderr
    assert "entries:  1" in stats.stdout and "1 hits, 1 misses" in stats.stdout
    cleared = run_cli("cache", "clear", *env_args)
    assert cleared.returncode == 0 and "1 entries removed" in cleared.stdout
    assert cache.stats()["entries"] == 0


def test_the_redis_cache_bounds_its_size(redis_url: str) -> None:
    store = ResultStore.from_url(redis_url)
    cache = RedisCallCache(store.client, prefix="cctest", max_entries=5)
    for i in range(12):
        cache.put(f"k{i}", f"v{i}".encode())
    stats = cache.stats()
    assert stats["entries"] == 5
    assert cache.get("k0") is None and cache.get("k11") == b"v11"
    # Each entry expires after the cache's TTL (30 days by default).
    assert 0 < store.client.ttl("cctest:cc:k11") <= cache.ttl_seconds == 30 * 24 * 3600
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
    assert cache.clear() == 5
    assert cache.stats()["entries"] == 0


def test_one_cache_for_the_fleet_a_second_identical_job_makes_no_call(
    fleet: Fleet, redis_url: str
) -> None:
    bench, answers = capitals_benchmark(10)
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = _config(answer, judge, cache=True)
        fleet.start_worker("w1", concurrency=4)
        fleet.start_worker("w2", concurrency=4)
        fleet.wait_ready(["w1", "w2"])
        first = Job.submit(bench, config, redis_url)
        assert first.wait(timeout=120).status == JobStatus.DONE
        assert (answer.stats().calls, judge.stats().calls) == (10, 10)
        answer.reset()
        judge.reset()
        second = Job.submit(bench, config, redis_url)
        assert second.wait(timeout=120).status == JobStatus.DONE
        assert (answer.stats().calls, judge.stats().calls) == (0, 0)
    assert comparable(second.result_set()) == comparable(first.result_set())
    stats = run_cli("cache", "stats", "--redis", redis_url)
    assert stats.returncode == 0 and "entries:  20" in stats.stdout, stats.stdout + stats.stderr
    cleared = run_cli("cache", "clear", "--redis", redis_url)
    assert cleared.returncode == 0 and "20 entries removed" in cleared.stdout, cleared.stdout
    after = run_cli("cache", "stats", "--redis", redis_url)
    assert after.returncode == 0 and "entries:  0" in after.stdout, after.stdout


def test_agent_steps_are_cached_and_replayed(tmp_path: Path, mcp_server: McpServer) -> None:
    """A tool-using agent (real MCP server, scripted tool-calling endpoint: no
    local model calls tools on demand) answers the second run from the cache:
    every step, the judge too, with the same trace."""
    from _support.agent_endpoint import ScriptedEndpoint, build_app
    from _support.asgi_thread import serve_in_thread

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
        config = VerificationConfig.build(
            answering_models=[
                ModelConfig(
                    model_name="scripted",
                    interface="openai_endpoint",
                    endpoint_base_url=base,
                    mcp_urls_dict={"tools": mcp_server.url},
                )
            ],
            parsing_models=[
                ModelConfig(model_name="judge", interface="openai_endpoint", endpoint_base_url=base)
            ],
            cache=True,
        )
        bench = Benchmark(name="agent", questions=[question])
        cache = DiskCallCache(tmp_path / "calls.sqlite3")
        first = _run(bench, config, cache)
        calls = sum(state.counts.values())
        assert calls >= 3, state.counts  # two agent steps and the judge
        second = _run(bench, config, cache)
        assert sum(state.counts.values()) == calls, "the second run made no model call"
    finally:
        served.stop()
    (a,), (b,) = first, second
    assert a.template.verify_result is True and b.template.verify_result is True
    assert b.template.trace_messages == a.template.trace_messages
    assert b.template.agent_metrics == a.template.agent_metrics
    assert b.template.usage_metadata["answer_generation"]["cache_hits"] == 2


def test_reward_scoring_with_cache_pays_once(tmp_path: Path) -> None:
    """``verifleet reward --cache``: a second scoring of the same rollouts (another
    process, another output) asks the judge nothing and gives the same rewards."""
    import json

    from _support.reward import CORRECT, JUDGE_ANSWERS, WRONG, geo_benchmark, nemo_request

    from verifleet.schemas import dump_benchmark

    bench, rollouts = tmp_path / "geo.yaml", tmp_path / "r.jsonl"
    dump_benchmark(geo_benchmark(), bench)
    rollouts.write_text(
        json.dumps(nemo_request(CORRECT, rollout_id=1))
        + "\n"
        + json.dumps(nemo_request(WRONG, rollout_id=2))
        + "\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "VERIFLEET_REDIS_URL"}
    env["VERIFLEET_CACHE_DIR"] = str(tmp_path / "cache")
    rewards = []
    with run_endpoint_in_thread(EndpointConfig(answers=JUDGE_ANSWERS)) as judge:
        for run in (1, 2):
            out = tmp_path / f"scored-{run}.jsonl"
            proc = run_cli(
                "reward",
                str(rollouts),
                "--benchmark",
                str(bench),
                "--parsing",
                f"{judge.base_url}#judge",
                "--out",
                str(out),
                "--cache",
                env=env,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            rewards.append([json.loads(line)["reward"] for line in out.read_text().splitlines()])
            if run == 1:
                first_calls = judge.stats().calls
                assert first_calls > 0
        assert judge.stats().calls == first_calls, "the second scoring asked the judge nothing"
    assert rewards[0] == rewards[1]


def test_run_with_cache_on_the_command_line_twice_makes_no_call_the_second_time(
    tmp_path: Path,
) -> None:
    """``verifleet run --cache`` as a user runs it (two processes, the local cache
    file under ``$VERIFLEET_CACHE_DIR``): the second run, into a new file, asks
    no model anything and its results are the first's, each call a cache hit."""
    from verifleet.orchestrator import read_results
    from verifleet.schemas import dump_benchmark

    bench, answers = capitals_benchmark(5)
    path = tmp_path / "bench.yaml"
    dump_benchmark(bench, path)
    env = {k: v for k, v in os.environ.items() if k != "VERIFLEET_REDIS_URL"}
    env["VERIFLEET_CACHE_DIR"] = str(tmp_path / "cache")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        outs = []
        for n in (1, 2):
            out = tmp_path / f"run{n}.parquet"
            done = run_cli(
                "run",
                str(path),
                "--answering",
                f"{answer.base_url}#answerer",
                "--parsing",
                f"{judge.base_url}#judge",
                "--replicates",
                "2",
                "--cache",
                "--no-preflight",
                "--out",
                str(out),
                env=env,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            outs.append((read_results(out), done.stderr))
            if n == 1:
                assert answer.stats().calls == 10, "one answer per replicate"
                first_calls = (answer.stats().calls, judge.stats().calls)
        assert (answer.stats().calls, judge.stats().calls) == first_calls, "no call the 2nd time"
    (first, _), (second, stderr) = outs
    assert len(second) == 10 and comparable(second) == comparable(first)
    assert " ".join(stderr.split()).count("call cache: 20 calls answered from the cache") == 1
    for r in second:
        usage = r.template.usage_metadata
        assert (usage["answer_generation"]["cache_hits"], usage["parsing"]["cache_hits"]) == (1, 1)


def test_cut_off_and_refused_replies_are_never_cached(tmp_path: Path) -> None:
    """The scripted endpoint cuts one answer off (``finish_reason: length``) and
    refuses another (``message.refusal``): a second run asks for those two again
    and takes the other answers from the cache."""
    bench, answers = capitals_benchmark(4)
    cut, refused = "What is the capital of Country1?", "What is the capital of Country2?"
    answers[cut] = {**answers[cut], "finish_reason": "length"}
    answers[refused] = {**answers[refused], "refusal": "I cannot help with that."}
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = _config(answer, judge, cache=True)
        first = _run(bench, config, cache)
        assert answer.stats().calls == 4
        second = _run(bench, config, cache)
        assert answer.stats().calls == 4 + 2, "only the cut and the refused answer again"
    hits = {
        r.metadata.question_id: r.template.usage_metadata["answer_generation"].get("cache_hits")
        for r in second
    }
    assert hits == {"q0000": 1, "q0001": None, "q0002": None, "q0003": 1}
    assert len(first) == len(second) == 4


def test_checks_rubric_traits_and_deep_judgment_are_cached_too(tmp_path: Path) -> None:
    """Every kind of call (answer, parse, the abstention check, LLM
    rubric traits, deep judgment's excerpt and reasoning calls): a second run of
    the job makes none."""
    from verifleet.schemas import LLMRubricTrait, Rubric

    base, answers = capitals_benchmark(4)
    traits = [LLMRubricTrait(name=n, description=f"Is the answer {n}?") for n in ("clear", "terse")]
    bench = base.model_copy(update={"global_rubric": Rubric(llm_traits=traits)})
    cache = DiskCallCache(tmp_path / "calls.sqlite3")
    with (
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as answer,
        run_endpoint_in_thread(EndpointConfig(answers=answers)) as judge,
    ):
        config = _config(
            answer,
            judge,
            cache=True,
            evaluation_mode="template_and_rubric",
            rubric_evaluation_strategy="sequential",
            abstention_enabled=True,
            deep_judgment_enabled=True,
        )
        first = _run(bench, config, cache)
        made = judge.stats().calls
        stages = {"answer_generation", "abstention_check", "deep_judgment", "rubric_evaluation"}
        assert all(set(r.template.usage_metadata) == {*stages, "total"} for r in first)
        # Per result: the abstention check, deep judgment's calls, one per trait.
        assert made >= 4 * 4, made
        second = _run(bench, config, cache)
        assert (answer.stats().calls, judge.stats().calls) == (4, made), "nothing the 2nd time"
    assert comparable(second) == comparable(first)
    before = {r.metadata.question_id: r for r in first}
    for r in second:
        old = before[r.metadata.question_id]
        assert r.rubric.llm_trait_scores == old.rubric.llm_trait_scores
        assert r.template.abstention_detected == old.template.abstention_detected
        assert r.deep_judgment.attribute_reasoning == old.deep_judgment.attribute_reasoning
        stages = r.template.usage_metadata
        assert all(
            entry.get("cache_hits", 0) >= 1 for stage, entry in stages.items() if stage != "total"
        ), stages
