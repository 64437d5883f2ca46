"""``POST /aggregate_metrics`` for NeMo Gym: its ``AggregateMetrics`` from the
verify responses of a rollout collection, computed the way NeMo Gym 0.7.0's
``compute_aggregate_metrics`` computes them with its default hooks
(docs/reward.md, "NeMo Gym", lists the statistics and what is not computed).

A row's numeric fields are its top-level numbers (booleans as 0/1) and the
numbers of ``response.usage``; keys starting with ``_`` are not metrics; rows
with ``mask_sample: true`` leave the quality metrics and are counted under
``coverage/*``. ``std/`` is the sample standard deviation, 0 instead of
"undefined" for a column every row has when no column has two values (as pandas'
describe is patched there).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ROLLOUT_INDEX", "TASK_INDEX", "aggregate_metrics"]

TASK_INDEX = "_ng_task_index"
ROLLOUT_INDEX = "_ng_rollout_index"
_MASK = "mask_sample"
_AGENT_REF = "agent_ref"
_DESCRIBE = ("mean", "max", "min", "median", "std")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(row: Mapping[str, Any], *, skip: Iterable[str] = ()) -> dict[str, float]:
    """The row's metric columns: top-level numbers and booleans, then the numbers
    of ``response.usage`` (which win on a name clash, as NeMo Gym merges them)."""
    skipped = set(skip)
    out: dict[str, float] = {}
    response = row.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    merged = dict(row)
    if isinstance(usage, Mapping):
        merged.update(usage)
    for key, value in merged.items():
        if key.startswith("_") or key in skipped:
            continue
        if isinstance(value, bool):
            out[key] = int(value)
        elif _is_number(value):
            out[key] = value
    return out


def _present(values: Sequence[float | None]) -> list[float]:
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _describe(rows: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """pandas' describe as NeMo Gym's profiler uses it: the five statistics of
    every column, undefined ones left out (histograms are never serialised)."""
    columns: dict[str, list[float | None]] = {}
    for index, row in enumerate(rows):
        for key in row:
            columns.setdefault(key, [None] * index)
        for key, column in columns.items():
            column.append(row.get(key))
    out: dict[str, Any] = {}
    stds: dict[str, float | None] = {}
    for key, raw in columns.items():
        values = _present(raw)
        if not values:
            stds[key] = None
            continue
        out[f"mean/{key}"] = statistics.fmean(values)
        out[f"max/{key}"] = max(values)
        out[f"min/{key}"] = min(values)
        out[f"median/{key}"] = statistics.median(values)
        stds[key] = statistics.stdev(values) if len(values) > 1 else None
    if all(s is None for s in stds.values()):
        # The profiler reads "no spread" as 0 for columns every row has.
        stds = {k: 0.0 for k, raw in columns.items() if len(_present(raw)) == len(rows)}
    for key, std in stds.items():
        if std is not None:
            out[f"std/{key}"] = std
    return {k: out[k] for stat in _DESCRIBE for k in out if k.startswith(stat + "/")}


def _rollout_info(row: Mapping[str, Any]) -> dict[str, Any]:
    task, rollout = row.get(TASK_INDEX, 0), row.get(ROLLOUT_INDEX, 0)
    info: dict[str, Any] = {
        "rollout_id": f"{task}:{rollout}",
        TASK_INDEX: task,
        ROLLOUT_INDEX: rollout,
    }
    if "reward" in row:
        info["reward"] = row.get("reward")
    info.update(_numbers(row, skip=("reward",)))
    return info


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (pandas' and numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _repeat_levels(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One summary per repeat (rollout index), only when there are several."""
    repeats: dict[Any, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        repeats[row.get(ROLLOUT_INDEX, 0)].append(row)
    if len(repeats) < 2:
        return []
    tasks = {row.get(TASK_INDEX, 0) for row in rows}
    summaries = []
    for index in sorted(repeats):
        group = repeats[index]
        present = {row.get(TASK_INDEX, 0) for row in group}
        entry: dict[str, Any] = {
            ROLLOUT_INDEX: int(index),
            "sample_count": len(present),
            "missing_count": len(tasks) - len(present),
        }
        numbers = [_numbers(row) for row in group]
        for column in dict.fromkeys(k for n in numbers for k in n):
            values = [n[column] for n in numbers if column in n]
            mean = statistics.fmean(values)
            std = statistics.stdev(values) if len(values) > 1 else 0.0
            entry.update(
                {
                    f"mean/{column}": mean,
                    f"median/{column}": float(statistics.median(values)),
                    f"std/{column}": std,
                    f"sem/{column}": std / len(values) ** 0.5,
                    f"min/{column}": float(min(values)),
                    f"max/{column}": float(max(values)),
                    f"p25/{column}": _quantile(values, 0.25),
                    f"p75/{column}": _quantile(values, 0.75),
                }
            )
        summaries.append(entry)
    return summaries


def _across_repeats(repeats: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Each repeat's estimate of a column taken as one observation."""
    out: dict[str, float] = {}
    # Point estimates only (NeMo Gym's "primary metrics"): the repeats' means.
    names = dict.fromkeys(k for r in repeats for k in r if k.startswith("mean/"))
    for name in names:
        values = [float(r[name]) for r in repeats if _is_number(r.get(name))]
        if not values:
            continue
        mean = statistics.fmean(values)
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        label = name
        out[f"mean_across_repeats/{label}"] = mean
        out[f"median_across_repeats/{label}"] = float(statistics.median(values))
        out[f"std_across_repeats/{label}"] = std
        out[f"min_across_repeats/{label}"] = min(values)
        out[f"max_across_repeats/{label}"] = max(values)
        out[f"se_across_repeats/{label}"] = std / len(values) ** 0.5
    return out


def _coverage(
    rows: Sequence[Mapping[str, Any]], scored: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    masked = len(rows) - len(scored)
    if not masked:
        return {}
    tasks = {r.get(TASK_INDEX, 0) for r in rows}
    measured = {r.get(TASK_INDEX, 0) for r in scored}
    return {
        "coverage/measured_rollouts": len(scored),
        "coverage/masked_rollouts": masked,
        "coverage/measured_tasks": len(measured),
        "coverage/fully_masked_tasks": len(tasks - measured),
    }


def aggregate_metrics(verify_responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """NeMo Gym's ``AggregateMetrics`` of a run's verify responses.

    Args:
        verify_responses: The rows NeMo Gym posts (``verify_responses``).

    Returns:
        ``group_level_metrics``, ``agent_metrics``, ``key_metrics``,
        ``perf_summary`` (null) and ``repeat_level_metrics``; all empty for no rows.

    Raises:
        ValueError: two rows share a task and rollout index (NeMo Gym refuses
            those too).
    """
    empty: dict[str, Any] = {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
        "perf_summary": None,
        "repeat_level_metrics": [],
    }
    if not verify_responses:
        return empty
    scored = [
        {k: v for k, v in r.items() if k != _MASK} for r in verify_responses if not r.get(_MASK)
    ]
    coverage = _coverage(verify_responses, scored)
    if not scored:
        return {**empty, "agent_metrics": dict(coverage), "key_metrics": dict(coverage)}
    seen: set[tuple[Any, Any]] = set()
    for row in scored:
        index = (row.get(TASK_INDEX, 0), row.get(ROLLOUT_INDEX, 0))
        if index in seen:
            raise ValueError(f"two verify responses share task and rollout index {index}")
        seen.add(index)
    by_task: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in scored:
        by_task[row.get(TASK_INDEX, 0)].append(row)
    groups = []
    for task in sorted(by_task):
        rows = by_task[task]
        group = _describe([_numbers(r, skip=(TASK_INDEX, ROLLOUT_INDEX)) for r in rows])
        group[TASK_INDEX] = task
        group["sample"] = {_AGENT_REF: {"name": "agent"}}
        group["num_rollouts"] = len(rows)
        group["expected_num_rollouts"] = len(rows)
        group["missing_num_rollouts"] = 0
        group["reward_profile_completion_pct"] = 100.0
        group["rollout_infos"] = sorted(
            (_rollout_info(r) for r in rows), key=lambda info: info[ROLLOUT_INDEX]
        )
        groups.append(group)
    agent = _describe([_numbers(r) for r in scored])
    repeats = _repeat_levels(scored)
    agent.update(_across_repeats(repeats))
    agent.update(coverage)
    agent["num_repeats"] = len({r.get(ROLLOUT_INDEX, 0) for r in verify_responses})
    key = {k: v for k, v in agent.items() if k.startswith("mean/")}
    key.update(coverage)
    return {
        "group_level_metrics": groups,
        "agent_metrics": agent,
        "key_metrics": key,
        "perf_summary": None,
        "repeat_level_metrics": repeats,
    }
