"""One entry point for every result format, chosen from the file extension."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from verifleet.schemas import ScenarioExecutionResult, VerificationResult, VerificationResultSet

from .csvio import iter_csv, write_csv
from .files import PathLike
from .formats import RESULT_FORMATS, ResultFormat, resolve_format
from .jsonio import iter_json, iter_jsonl, write_json, write_jsonl
from .layout import Labels
from .parquet import DEFAULT_BATCH_SIZE, ParquetResultWriter, iter_parquet
from .scenarios import read_scenario_results, scenario_errors

__all__ = [
    "RESULT_FORMATS",
    "ResultFormat",
    "iter_results",
    "read_results",
    "resolve_format",
    "write_results",
]


def write_results(
    results: Iterable[VerificationResult] | VerificationResultSet,
    path: PathLike,
    *,
    format: str | None = None,
    job_id: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    scenario_results: Sequence[ScenarioExecutionResult] | None = None,
    manifest: dict[str, object] | None = None,
    labels: Labels | None = None,
) -> int:
    """Write results to ``path``, streaming; the file appears only when complete.

    Args:
        results: Any iterable of results (consumed once, lazily), or a result set
            (its ``scenario_results`` are written too unless given separately;
            ``errors`` follow from them and are not stored).
        path: Destination; an existing file is replaced on success only.
        format: ``parquet``, ``json``, ``jsonl`` or ``csv``; from the extension if None.
        job_id: Fills the ``result_key`` column (Parquet and CSV) with each result's
            deterministic unit key in that job; JSON formats have no such column.
        batch_size: Parquet rows per batch and row group.
        scenario_results: Scenario runs to keep with the results: Parquet (in the
            footer) and JSON hold them; JSON Lines and CSV cannot and ignore them.
        manifest: The run manifest (:func:`.manifest.build_manifest`): Parquet
            keeps it in the footer; every format's caller writes it beside the
            file with :func:`.manifest.write_manifest_beside`.
        labels: Human labels by answer (:data:`.layout.Labels`): Parquet and CSV
            hold them in the ``label_correct`` and ``label_note`` columns (null
            for an answer without one); JSON formats have no such columns (the
            labels file beside the results keeps them).

    Returns:
        The number of results written.

    Raises:
        ExportError: unknown format or extension, or the file cannot be written.
    """
    chosen = resolve_format(path, format)
    if isinstance(results, VerificationResultSet):
        if scenario_results is None:
            scenario_results = results.scenario_results
        results = results.results
    if chosen == "parquet":
        with ParquetResultWriter(
            path, batch_size=batch_size, job_id=job_id, labels=labels
        ) as writer:
            if scenario_results is not None:
                writer.set_scenario_results(scenario_results)
            if manifest is not None:
                writer.set_manifest(manifest)
            return writer.write_many(results)
    if chosen == "csv":
        return write_csv(results, path, job_id=job_id, labels=labels)
    if chosen == "json":
        return write_json(results, path, scenario_results=scenario_results)
    return write_jsonl(results, path)


def iter_results(
    path: PathLike, *, format: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE
) -> Iterator[VerificationResult]:
    """Stream the results stored in ``path`` without loading the whole file.

    Args:
        path: A file written by :func:`write_results` (or an equivalent one).
        format: As for :func:`write_results`.
        batch_size: Parquet rows decoded at a time.

    Raises:
        ExportError: unknown format or extension (raised at once), or the file is
            missing, unreadable or incompatible (raised when iteration reaches it).
    """
    chosen = resolve_format(path, format)
    if chosen == "parquet":
        return iter_parquet(path, batch_size=batch_size)
    if chosen == "csv":
        return iter_csv(path)
    if chosen == "json":
        return iter_json(path)
    return iter_jsonl(path)


def read_results(
    path: PathLike, *, format: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE
) -> VerificationResultSet:
    """Load every result stored in ``path`` into a :class:`VerificationResultSet`.

    The set equals the one (or the results) that were written, field for field,
    including absent sections, and the scenario results (Parquet and JSON; None
    when there are none); ``errors`` lists the scenario runs that failed.

    Raises:
        ExportError: unknown format or extension, or the file is missing,
            unreadable, incompatible or holds an invalid result.
    """
    results = list(iter_results(path, format=format, batch_size=batch_size))
    scenarios = read_scenario_results(path, format=format)
    return VerificationResultSet(
        results=results, scenario_results=scenarios, errors=scenario_errors(scenarios)
    )
