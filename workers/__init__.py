"""verifleet.workers — the Celery app and the task that runs one unit."""

__all__: list[str] = []
