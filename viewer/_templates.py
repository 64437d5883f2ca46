"""Where a result page finds its answer template's source.

A result records only its template's id (``metadata.template_id``, the MD5 of the
normalised source); the source is in the benchmark. A fleet job keeps its
benchmark in Redis with the job; a results file does not, so ``verifleet view`` /
``report`` take ``--benchmark FILE`` to supply it.
"""

from __future__ import annotations

from collections.abc import Callable

from verifleet.schemas import NO_TEMPLATE_ID, Benchmark, compute_template_id

__all__ = ["TemplateSources", "template_sources"]


def template_sources(benchmark: Benchmark) -> dict[str, str]:
    """Every answer template of ``benchmark`` (questions and scenario nodes) by
    template id. Never raises."""
    questions = [
        *benchmark.questions,
        *(node.question for scenario in benchmark.scenarios for node in scenario.nodes),
    ]
    return {
        compute_template_id(q.answer_template): q.answer_template
        for q in questions
        if q.answer_template and q.answer_template.strip()
    }


class TemplateSources:
    """The template sources a run can show, loaded on first use.

    Args:
        load: Returns the sources by template id and where they come from
            (e.g. ``"the job's benchmark"``); raises ``Exception`` with the reason
            when they cannot be had. None: the run has none of its own.
    """

    def __init__(self, load: Callable[[], tuple[dict[str, str], str]] | None = None) -> None:
        self._load = load
        self._sources: dict[str, str] = {}
        self._origin: str | None = None
        self._problem: str | None = None
        self._loaded = load is None

    def add(self, sources: dict[str, str], origin: str) -> None:
        """Add sources from ``origin`` (e.g. a ``--benchmark`` file); the run's own
        come first."""
        self._ensure()
        for template_id, source in sources.items():
            self._sources.setdefault(template_id, source)
        self._origin = f"{self._origin}, {origin}" if self._origin else origin

    def _ensure(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self._load is not None
        try:
            sources, origin = self._load()
        except Exception as exc:  # any failure only means "no source to show"
            self._problem = f"{type(exc).__name__}: {exc}"
            return
        self._sources.update(sources)
        self._origin = origin

    def lookup(self, template_id: str) -> dict[str, str | None]:
        """``source`` (None when not available) and ``note`` (where it comes from,
        or plainly why it cannot be shown). Never raises."""
        self._ensure()
        if template_id == NO_TEMPLATE_ID:
            return {"source": None, "note": "This result has no answer template."}
        source = self._sources.get(template_id)
        if source is not None:
            return {"source": source, "note": f"From {self._origin}."}
        if self._problem is not None:
            why = f"its benchmark could not be read ({self._problem})"
        elif self._origin is not None:
            why = f"{self._origin} has no template with this id (it was changed since?)"
        else:
            why = (
                "a results file does not hold template sources; give the benchmark "
                "with `--benchmark FILE` to `verifleet view` or `verifleet report`"
            )
        return {
            "source": None,
            "note": f"Template source not available (template id {template_id}): {why}.",
        }
