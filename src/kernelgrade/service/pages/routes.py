"""The HTML pages' routes: each parses, calls one page function, and renders its template."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from kernelgrade.service.auth import Context
from kernelgrade.service.errors import ApiError
from kernelgrade.service.pages.board_pages import problem_leaderboard, suite_leaderboard
from kernelgrade.service.pages.home_page import home_page
from kernelgrade.service.pages.problem_page import problem_page
from kernelgrade.service.pages.submission_page import submission_page, submission_state
from kernelgrade.service.pages.templating import STATIC_DIR, render
from kernelgrade.service.pages.viewer import page_viewer

router = APIRouter(include_in_schema=False)


def install_pages(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


def _page(request: Request, template: str, build: Callable[[], dict[str, Any]]) -> HTMLResponse:
    """Render `template` with what `build` returns; a missing problem or submission is an HTML 404."""
    try:
        page = build()
    except ApiError as exc:
        if exc.status != 404:
            raise
        return render(request, "not_found.html", {"message": exc.message}, status_code=404)
    return render(request, template, page)


@router.get("/", response_class=HTMLResponse)
def home(request: Request, context: Context) -> HTMLResponse:
    return _page(request, "home.html", lambda: home_page(context))


@router.get("/leaderboards", response_class=HTMLResponse)
def suite_board(request: Request, context: Context, suite: str = "", device: str = "") -> HTMLResponse:
    return _page(request, "suite_board.html", lambda: suite_leaderboard(context, suite, device))


@router.get("/problems/{name}/leaderboard", response_class=HTMLResponse)
def problem_board(request: Request, name: str, context: Context, device: str = "") -> HTMLResponse:
    return _page(request, "problem_board.html", lambda: problem_leaderboard(context, name, device))


@router.get("/problems/{name}", response_class=HTMLResponse)
def problem(request: Request, name: str, context: Context) -> HTMLResponse:
    return _page(request, "problem.html", lambda: problem_page(context, name))


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission(request: Request, submission_id: int, context: Context) -> HTMLResponse:
    viewer = page_viewer(request, context)
    return _page(request, "submission.html", lambda: submission_page(context, submission_id, viewer))


@router.get("/submissions/{submission_id}/state")
def state(request: Request, submission_id: int, context: Context) -> dict[str, Any]:
    """What the submission page polls. Not /v1/submissions/{id}: a browser has no API key to send there."""
    return submission_state(context, submission_id, page_viewer(request, context))
