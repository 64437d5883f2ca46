"""The viewer's web application: a JSON API over the runs, and the page that uses it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Sequence
from importlib import resources

from fastapi import FastAPI, HTTPException, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse

from verifleet.web import BearerAuth, HostCheck

from ._detail import compare, result_detail
from ._errors import ViewerError
from ._index import TableQuery
from ._judging import PairedCache, label_state, set_label, write_refusal
from ._matrix import matrix
from ._overview import overview
from ._runs import Run
from ._scenarios import scenario_page

__all__ = [
    "TOKEN_COOKIE",
    "create_app",
    "page_html",
    "static_text",
]

TOKEN_COOKIE = "verifleet_viewer_token"

_STATIC = {
    "app.js": "text/javascript",
    "figures.js": "text/javascript",
    "judging.js": "text/javascript",
    "style.css": "text/css",
}


def static_text(name: str) -> str:
    """The text of a bundled static asset (``index.html``, ``app.js``, ``judging.js``,
    ``figures.js``, ``style.css``).

    Raises:
        FileNotFoundError: the package was installed without its static files.
    """
    return resources.files("verifleet.viewer").joinpath("static", name).read_text("utf-8")


def page_html(boot: dict[str, object], *, inline: bool = False) -> str:
    """The viewer page with ``boot`` (mode, and for a report all the data) embedded.

    The JSON is embedded in a ``<script type="application/json">`` element with
    every ``<`` written as ``\\u003c``: no value can close the element early
    (``</script>``) nor put the parser in the "double-escaped" state that makes it
    miss the real end (``<!--`` then ``<script``), which would leave the page blank.
    ``inline`` puts the stylesheet and script into the page itself (a report is one
    self-contained file); otherwise the page links them from ``static/``.

    Raises:
        ValueError: ``boot`` holds NaN or infinity (JSON has neither).
    """
    data = json.dumps(boot, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    if inline:
        head = "<style>\n" + static_text("style.css").replace("</", "<\\/") + "</style>"
        # One element for every script (app.js last: it calls into the others).
        script = "\n".join(static_text(name) for name in ("judging.js", "figures.js", "app.js"))
        body = "<script>\n" + script.replace("</", "<\\/").replace("<!--", "<\\!--") + "</script>"
    else:
        head = '<link rel="stylesheet" href="static/style.css">'
        body = (
            '<script src="static/judging.js"></script><script src="static/figures.js"></script>'
            '<script src="static/app.js"></script>'
        )
    page = static_text("index.html").replace("<!--ASSETS_HEAD-->", head)
    # The data goes in last, so that no value can be mistaken for a placeholder.
    page = page.replace("<!--ASSETS_BODY-->", body)
    return page.replace("__BOOT__", data)


def _run(runs: Sequence[Run], run: int) -> Run:
    if not 0 <= run < len(runs):
        raise HTTPException(404, f"no run {run}; there are {len(runs)}")
    return runs[run]


def create_app(
    runs: Sequence[Run],
    *,
    token: str | None = None,
    title: str = "",
    allowed_hosts: Collection[str] | None = None,
) -> FastAPI:
    """The viewer app over ``runs`` (the first is the default page).

    Args:
        runs: What to show; each keeps its own summary index.
        token: When set, every request must carry it: as ``?token=`` (the page then
            keeps it in a cookie), a ``verifleet_viewer_token`` cookie or an
            ``Authorization: Bearer`` header; others get 401
            (:class:`verifleet.web.BearerAuth`).
        title: Shown in the page header.
        allowed_hosts: Host names the ``Host`` header may carry besides localhost
            and IP addresses (any port); other requests get 403
            (:class:`verifleet.web.HostCheck`). A web page on another site that
            re-points its own name at 127.0.0.1 (DNS rebinding) sends its own name
            and is refused. None accepts any (a viewer bound to every address,
            behind its token).

    Returns:
        A FastAPI application; serve it with uvicorn (see :func:`serve`).
    """
    app = FastAPI(title="verifleet viewer", docs_url=None, redoc_url=None, openapi_url=None)
    paired_cache = PairedCache()

    if token:
        app.add_middleware(BearerAuth, token=token, cookie=TOKEN_COOKIE)

    # Registered before the token and host checks, so it runs after them: a
    # refused origin learns nothing they would not tell it.
    @app.middleware("http")
    async def check_write(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        refused = write_refusal(request, token=bool(token))
        if refused is not None:
            return JSONResponse({"detail": refused}, status_code=403)
        return await call_next(request)

    if allowed_hosts is not None:
        # Added after the token check, so it runs first: a rebound page never
        # learns whether its token guess was right.
        app.add_middleware(HostCheck, allowed_hosts=allowed_hosts, option="--host")

    @app.exception_handler(ViewerError)
    async def viewer_error(_request: Request, exc: ViewerError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.exception_handler(ValueError)
    async def bad_value(_request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        return page_html({"mode": "server", "title": title})

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in _STATIC:
            raise HTTPException(404, f"no static file {name!r}")
        return Response(static_text(name), media_type=_STATIC[name])

    @app.get("/api/runs")
    def list_runs() -> list[dict[str, object]]:
        return [
            {"id": i, "name": r.name, "live": r.live, "count": len(r.index), "info": r.info()}
            for i, r in enumerate(runs)
        ]

    @app.get("/api/runs/{run}/overview")
    def run_overview(run: int) -> dict[str, object]:
        return dict(_run(runs, run).index.memo("overview", overview))

    @app.get("/api/runs/{run}/facets")
    def run_facets(run: int) -> dict[str, list[str]]:
        return _run(runs, run).index.facets()

    @app.get("/api/runs/{run}/results")
    def run_results(
        run: int,
        answering: str = "",
        parsing: str = "",
        verdict: str = "",
        keyword: str = "",
        error: str = "",
        search: str = "",
        sort: str = "row",
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=1000),
    ) -> dict[str, object]:
        query = TableQuery(answering, parsing, verdict, keyword, error, search, sort, offset, limit)
        return _run(runs, run).index.page(query)

    @app.get("/api/runs/{run}/results/{row}")
    def run_result(run: int, row: int) -> dict[str, object]:
        found = _run(runs, run)
        result = found.result(row)
        detail = result_detail(
            found.name, row, result, found.templates.lookup(result.metadata.template_id)
        )
        return detail | {"labelling": label_state(found, result)}

    @app.post("/api/runs/{run}/results/{row}/label")
    async def run_result_label(run: int, row: int, request: Request) -> dict[str, object]:
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "the body is not JSON") from None
        # The file work runs in a thread: the event loop keeps serving pages.
        return await run_in_threadpool(set_label, _run(runs, run), row, body)

    @app.get("/api/runs/{run}/scenarios")
    def run_scenarios(run: int) -> list[dict[str, object]]:
        return scenario_page(_run(runs, run).scenarios())

    @app.get("/api/runs/{run}/live")
    def run_live(run: int) -> dict[str, object]:
        found = _run(runs, run)
        added = found.refresh()
        return {"live": found.live, "added": added, "count": len(found.index),
                "progress": found.progress()}  # fmt: skip

    @app.get("/api/matrix")
    def run_matrix(
        runs_: str = Query("", alias="runs"),
        by: str = "answering",
        differ: str = "",
        offset: int = Query(0, ge=0),
        limit: int = Query(200, ge=1, le=5000),
    ) -> dict[str, object]:
        picked = [int(r) for r in runs_.split(",") if r.strip()] or list(range(len(runs)))
        chosen = [_run(runs, r) for r in picked]
        return matrix(
            [(r.name, r.index) for r in chosen],
            by=by,
            differ=differ == "yes",
            offset=offset,
            limit=limit,
        ) | {"runs": picked}

    @app.get("/api/compare")
    def run_compare(
        a: int, b: int, offset: int = Query(0, ge=0), limit: int = Query(200, ge=1, le=1000)
    ) -> dict[str, object]:
        before, after = _run(runs, a), _run(runs, b)
        return compare(before.index, after.index, offset=offset, limit=limit)

    @app.get("/api/compare/paired")
    def run_paired(
        a: int, b: int, level: float = Query(0.95, gt=0, lt=1), flips: int = Query(200, ge=0)
    ) -> dict[str, object]:
        found = paired_cache.get(a, _run(runs, a), b, _run(runs, b), level)
        return found | {"flips": found["flips"][:flips], "flips_total": len(found["flips"])}

    return app
