"""What a worker writes as it runs units: a unit taken up, its results written
once (alone, or with the next unit of its message taken up), a scenario run.

A mixin of :class:`~verifleet.store.ResultStore`, kept apart because these are
the per-unit round trips; the store's ``__init__`` registers the scripts they run.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from verifleet.schemas import ScenarioExecutionResult, VerificationResult

from ._progress import JobStatus, UnitStart, UnitWrite
from ._replies import reply_text

if TYPE_CHECKING:
    import redis
    from redis.commands.core import Script

    from ._keys import JobKeys

__all__ = ["UnitWrites"]

# Fail a queued or running job with an error, in one step (a cancel or the
# job's last write racing it leaves the job as they left it).
_FAIL_JOB = """
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'queued' and status ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'error', ARGV[2])
return 1
"""


def _pair_id(answering: str, parsing: str) -> str:
    return hashlib.sha256(f"{answering}\t{parsing}".encode()).hexdigest()[:12]


def _verdict(result: VerificationResult) -> str:
    if not result.metadata.completed_without_errors:
        return "error"
    verdict = result.template.verify_result if result.template is not None else None
    return {True: "pass", False: "fail"}.get(verdict, "none")  # type: ignore[arg-type]


class UnitWrites:
    """The per-unit writes of :class:`~verifleet.store.ResultStore`.

    Raises:
        redis.RedisError: Redis is unreachable (every method).
    """

    client: redis.Redis
    _units_step: Script
    _write_scenario: Script

    def keys(self, job_id: str) -> JobKeys:
        raise NotImplementedError

    def _compress(self, data: bytes) -> bytes:
        raise NotImplementedError

    def _decompress(self, blob: bytes) -> bytes:
        raise NotImplementedError

    def begin_unit(
        self, job_id: str, unit_key: str, *, template_id: str | None = None
    ) -> UnitStart:
        """What a worker checks and records as it takes a unit up, in one round
        trip: the job's status (None: no such job), whether the unit is done
        already and, when ``template_id`` is given, the description of that
        template stored at submission (None when there is none). A unit of a job
        that is neither cancelled nor done is marked started (for "in flight"),
        and a queued job becomes running; a unit started before whose start
        never finished counts one more try (``UnitStart.tries``).

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        _finished, (start,) = self.step_units(job_id, [], [(unit_key, template_id)])
        return start

    def write_unit(
        self,
        job_id: str,
        unit_key: str,
        results: Sequence[VerificationResult],
        result_keys: Sequence[str],
    ) -> bool:
        """Write a unit's results once and mark the unit done.

        Returns:
            True when this call finished the whole job.

        Raises:
            redis.RedisError: Redis is unreachable; nothing was written.
        """
        finished, _ = self.step_units(job_id, [UnitWrite(unit_key, results, result_keys)], [])
        return finished

    def step_units(
        self,
        job_id: str,
        written: Sequence[UnitWrite],
        begins: Sequence[tuple[str, str | None]],
    ) -> tuple[bool, list[UnitStart]]:
        """Write finished units' results (each as :meth:`write_unit`), then take
        units of the same job up (each ``(unit key, template id or None)`` as
        :meth:`begin_unit`), all in one round trip: a worker thread that runs a
        message's units a few at a time pays one script per step.

        Every unit taken up is marked started at once, before any of them runs:
        if the process dies, each counts an unfinished start (and so runs alone
        when it comes back, see ``workers/_isolation.py``).

        Returns:
            Whether a write finished the whole job, and each unit's start in
            the order of ``begins``.

        Raises:
            redis.RedisError: Redis is unreachable; nothing happened.
        """
        keys = self.keys(job_id)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        verdicts: list[str] = []
        args: list[str | bytes] = [str(time.time()), now, str(len(written))]
        pairs: set[str] = set()  # each pair's display text once per step
        for write in written:
            unit_verdicts, unit_args = self._write_parts(keys, write, pairs)
            verdicts += unit_verdicts
            args += unit_args
        for unit_key, template_id in begins:
            args += [unit_key, template_id or ""]
        fixed = [keys.meta, keys.done, keys.inflight, keys.templates, keys.attempts]
        reply = self._units_step(
            keys=[*fixed, keys.results, keys.pairs, keys.failed, *verdicts], args=args
        )
        return bool(int(reply[0])), [self._unit_start(r) for r in reply[1:]]

    def _unit_start(self, reply: Any) -> UnitStart:
        text = reply_text(reply[0])
        described = reply[2] if len(reply) > 2 else None
        template = json.loads(self._decompress(described)) if described else None
        tries = int(reply[3]) if len(reply) > 3 else 1
        return UnitStart(JobStatus(text) if text else None, bool(int(reply[1])), template, tries)

    def begin_lone_run(self, job_id: str, unit_key: str) -> int:
        """Record that a unit starts a run alone in its worker process (a suspect:
        an earlier start never finished); returns how many such runs it had
        before this one, all of which, since they never finished, ended with
        their process dying or freezing.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        field = f"{unit_key}#alone"
        return int(self.client.hincrby(self.keys(job_id).attempts, field, 1)) - 1

    def count_job_kill(self, job_id: str) -> int:
        """Count one worker process killed or frozen by a unit of the job in a
        lone run (see ``verifleet.workers._breaker``); returns the job's count.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        return int(self.client.hincrby(self.keys(job_id).attempts, "#job-kills", 1))

    def fail_job(self, job_id: str, error: str) -> bool:
        """Mark a queued or running job ``failed`` with ``error`` (shown by
        ``status``, ``jobs``, ``watch`` and ``results``); workers then drop its
        units. Returns False when the job was not queued or running (done,
        cancelled, failed already, unknown): nothing changes then.

        Raises:
            redis.RedisError: Redis is unreachable.
        """
        meta = self.keys(job_id).meta
        return bool(self.client.eval(_FAIL_JOB, 1, meta, JobStatus.FAILED.value, error))

    def _write_parts(
        self, keys: JobKeys, written: UnitWrite, pairs: set[str]
    ) -> tuple[list[str], list[str | bytes]]:
        """The verdict set of each result and the arguments (see
        ``_scripts.UNITS_STEP``) of a unit's write; a pair in ``pairs`` (given
        earlier in the step) is sent without its text, and new ones are added."""
        verdicts: list[str] = []
        args: list[str | bytes] = [written.unit_key, str(len(written.results))]
        for result, key in zip(written.results, written.result_keys, strict=True):
            meta = result.metadata
            answering, parsing = meta.answering.display_string, meta.parsing.display_string
            pair = _pair_id(answering, parsing)
            verdict = _verdict(result)
            verdicts.append(keys.verdicts(pair, verdict))
            blob = self._compress(result.model_dump_json().encode())
            text = "" if pair in pairs else f"{answering}\t{parsing}"
            pairs.add(pair)
            args += [key, blob, pair, text, "1" if verdict == "error" else "0"]
        return verdicts, args

    def write_scenario_unit(
        self,
        job_id: str,
        unit_key: str,
        run: ScenarioExecutionResult,
        results: Sequence[VerificationResult],
        result_keys: Sequence[str],
    ) -> bool:
        """Store a scenario run and its turn results once, and mark the unit done.

        The run and its turns go in together or not at all (one server-side
        script): a second run of the same unit (a redelivery) stores nothing and
        counts nothing, even if it took another path through the graph.

        Returns:
            True when this call finished the whole job.
        """
        keys = self.keys(job_id)
        args: list[Any] = [unit_key, self._compress(run.model_dump_json().encode())]
        for key, result in zip(result_keys, results, strict=True):
            args += [key, self._compress(result.model_dump_json().encode())]
        stored = bool(self._write_scenario(keys=[keys.scenarios, keys.results], args=args))
        if stored and run.status == "error":
            self.client.sadd(keys.scenario_errors, unit_key)
        written = [stored] * len(results)
        return self._count_and_finish(job_id, unit_key, results, result_keys, written)

    def iter_scenario_results(self, job_id: str) -> Iterator[ScenarioExecutionResult]:
        """Every stored scenario run (HSCAN order)."""
        for _key, blob in self.client.hscan_iter(self.keys(job_id).scenarios, count=500):
            yield ScenarioExecutionResult.model_validate_json(self._decompress(blob))

    def _count_and_finish(
        self,
        job_id: str,
        unit_key: str,
        results: Sequence[VerificationResult],
        result_keys: Sequence[str],
        written: Sequence[Any],
    ) -> bool:
        keys = self.keys(job_id)
        # Verdicts count only what this call actually stored: a redelivered task
        # that judged differently must not add its verdict next to the first one.
        pipe = self.client.pipeline(transaction=True)
        any_error = False
        for result, key, fresh in zip(results, result_keys, written, strict=True):
            if not fresh:
                continue
            meta = result.metadata
            answering, parsing = meta.answering.display_string, meta.parsing.display_string
            pair = _pair_id(answering, parsing)
            pipe.hsetnx(keys.pairs, pair, f"{answering}\t{parsing}")
            verdict = _verdict(result)
            any_error |= verdict == "error"
            pipe.sadd(keys.verdicts(pair, verdict), key)
        if any_error:
            pipe.sadd(keys.failed, unit_key)
        pipe.sadd(keys.done, unit_key)
        pipe.zrem(keys.inflight, unit_key)
        pipe.scard(keys.done)
        pipe.hget(keys.meta, "total_units")
        *_, done, total = pipe.execute()
        if total is not None and done >= int(total):
            self.client.hset(keys.meta, "status", JobStatus.DONE.value)
            self.client.hsetnx(
                keys.meta, "finished", datetime.now(UTC).isoformat(timespec="seconds")
            )
            return True
        return False
