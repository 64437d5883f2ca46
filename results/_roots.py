"""Where a fleet may write results: the operator's roots, not the submitter's.

A job submitted with ``--results-to URL`` names where its shards go, but the
workers write them, with the workers' credentials and network. So a worker
writes a job's shards only when ``URL`` lies under one of the roots its operator
allowed (``verifleet worker --results-root``, repeatable, or
``VERIFLEET_RESULTS_ROOTS``, comma-separated); with none allowed it drains no
job (the results stay in Redis, where ``verifleet results`` reads them).

Only storage schemes are accepted (:data:`ALLOWED_SCHEMES`: local files and the
object stores fsspec reaches); ``ftp://``, ``http://``, ``sftp://``, chained
``a::b`` URLs and every other scheme are refused on the URL's text alone, before
fsspec is asked, so no connection is ever opened to a refused location.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "ALLOWED_SCHEMES",
    "RESULTS_ROOTS_ENV",
    "ResultsRoots",
    "location_problem",
    "normalise_location",
]

#: What a results location or root may start with (``file`` also covers a
#: bare path). Everything else is refused without a connection.
ALLOWED_SCHEMES = ("file", "s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")

#: The environment variable with a worker's roots, comma-separated.
RESULTS_ROOTS_ENV = "VERIFLEET_RESULTS_ROOTS"


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else "file"


def location_problem(url: str, *, what: str = "results_to") -> str | None:
    """What makes ``url`` unusable as a results location or root, from its text
    alone (nothing is opened), or None.

    Never raises.
    """
    if not url.strip():
        return f"{what}: empty location"
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        return f"{what}: {url!r} holds control characters"
    if "::" in url:
        return f"{what}: {url!r}: chained fsspec URLs (a::b) are not accepted"
    scheme = _scheme(url)
    if scheme not in ALLOWED_SCHEMES:
        return (
            f"{what}: {url!r}: scheme {scheme!r} is not accepted; use a path or one of "
            + ", ".join(f"{s}://" for s in ALLOWED_SCHEMES)
        )
    rest = url.split("://", 1)[1] if "://" in url else url
    if ".." in rest.split("/"):
        return f"{what}: {url!r}: '..' segments are not accepted"
    return None


def normalise_location(url: str) -> str:
    """``url`` in the form roots are compared in: a local path (or ``file://``
    URL) absolute with symlinks resolved, an object-store URL with a lowered
    scheme and no trailing ``/``. Call it only on a URL
    :func:`location_problem` accepts.

    Raises:
        OSError: a local path cannot be resolved.
    """
    scheme = _scheme(url)
    if scheme == "file":
        path = url.split("://", 1)[1] if "://" in url else url
        return str(Path(path).expanduser().resolve())
    rest = url.split("://", 1)[1]
    return f"{scheme}://{posixpath.normpath(rest).strip('/')}"


class ResultsRoots:
    """The roots a worker may write results under.

    Args:
        roots: Paths or URLs (each checked by :func:`location_problem`).

    Raises:
        ValueError: a root is not acceptable (the message says which and why).
    """

    def __init__(self, roots: Iterable[str]) -> None:
        found: list[str] = []
        for root in roots:
            problem = location_problem(root, what="results root")
            if problem:
                raise ValueError(problem)
            found.append(normalise_location(root))
        self.roots = tuple(dict.fromkeys(found))

    @classmethod
    def from_settings(cls, given: Iterable[str] | None) -> ResultsRoots:
        """The roots given on the command line, else those of
        ``VERIFLEET_RESULTS_ROOTS`` (empty when neither is set).

        Raises:
            ValueError: a root is not acceptable.
        """
        listed = list(given or [])
        if not listed:
            env = os.environ.get(RESULTS_ROOTS_ENV, "")
            listed = [part.strip() for part in env.split(",") if part.strip()]
        return cls(listed)

    def refusal(self, url: str) -> str | None:
        """Why a job's shards may not be written at ``url`` (a refused scheme, a
        location outside every root, no root at all), or None when they may.

        Never raises: a location that cannot be resolved is refused.
        """
        problem = location_problem(url)
        if problem:
            return problem
        if not self.roots:
            return (
                f"results_to {url!r}: this worker has no results root "
                f"(verifleet worker --results-root, or ${RESULTS_ROOTS_ENV})"
            )
        try:
            location = normalise_location(url)
        except OSError as exc:
            return f"results_to {url!r}: cannot be resolved ({exc})"
        for root in self.roots:
            # Under a root means equal to it or below it at a '/' boundary.
            if location == root or location.startswith(root.rstrip("/") + "/"):
                return None
        return f"results_to {url!r}: outside this worker's results roots ({', '.join(self.roots)})"
