"""A live progress bar for long runs: done, failed, rate and ETA."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["RunProgress"]


class RunProgress:
    """Progress over units; ``failed`` counts units with at least one errored result.

    On a terminal it redraws in place; elsewhere (CI, pipes) rich prints nothing
    until the end, so logs stay readable.
    """

    def __init__(self, total: int, *, console: Console | None = None, label: str = "units") -> None:
        self.failed = 0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("failed {task.fields[failed]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID = self._progress.add_task(label, total=total, failed=0, rate="")

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def advance(self, *, failed: bool = False, skipped: bool = False) -> None:
        """One unit finished (or was skipped because it was already done)."""
        if failed:
            self.failed += 1
        task = self._progress.tasks[0]
        speed = task.speed
        rate = f"{speed:.1f}/s" if speed and not skipped else task.fields.get("rate", "")
        self._progress.update(self._task, advance=1, failed=self.failed, rate=rate)
