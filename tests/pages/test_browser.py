"""The pages in a real browser against a real `kernelgrade serve`: a submission is watched from the queue
to its verdict, then found on the leaderboards (sorted by clicking headers) and on the problem's plot.
Screenshots of every page are saved for people to look at (the folder is printed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.pages.browser import LAPTOP, PHONE, chromium, missing_browser, screenshots_dir
from tests.service.servers import ServeProcess, wait_until
from tests.service.sources import CORRECT, variant
from tests.service.test_end_to_end import GRADE_S, SETTINGS, read, submit

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, ViewportSize

pytestmark = [pytest.mark.browser, pytest.mark.skipif(missing_browser() is not None,
                                                      reason=missing_browser() or "")]
GRADE_MS = GRADE_S * 1000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[ServeProcess]:
    server = ServeProcess(tmp_path, {**SETTINGS, "KERNELGRADE_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}"})
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def open_page(browser: Browser, server: ServeProcess, viewport: ViewportSize) -> tuple[Page, list[str]]:
    """A page, and the list its requests to anywhere but the server are appended to (there must be none)."""
    page = browser.new_page(viewport=viewport)
    outside: list[str] = []
    page.on("request", lambda request: None if request.url.startswith(server.url) else outside.append(request.url))
    page.set_default_timeout(15_000)
    return page, outside


def column_values(page: Page, table: str, column: int) -> list[str]:
    values: list[str] = page.eval_on_selector_all(
        f"#{table} tbody tr", f"rows => rows.map(r => r.cells[{column}].textContent.trim())")
    return values


def test_a_submission_from_queue_to_leaderboard_in_chromium(served: ServeProcess, browser: Browser) -> None:
    shots = screenshots_dir("pages")
    first = submit(served, CORRECT, model="alpha", submitter="ada")
    second = submit(served, variant(1), model="beta", submitter="bob")
    page, outside = open_page(browser, served, LAPTOP)
    page.goto(f"{served.url}/submissions/{first['id']}")
    assert page.get_attribute("#submission", "data-status") != "done"  # seen before its verdict
    page.screenshot(path=shots / "1-submission-in-flight.png", full_page=True)
    # The page polls and reloads itself; nothing here reloads it.
    page.wait_for_function("document.getElementById('verdict').textContent.trim() === 'correct'", timeout=GRADE_MS)
    assert page.locator("#timing-plot svg circle.point").count() >= 4
    assert page.locator("#trials tbody tr").count() == 5 and "clamp_min" in page.inner_text("#source")
    page.screenshot(path=shots / "2-submission-correct.png", full_page=True)

    wait_until(lambda: read(served, second["id"])["evaluation"]["status"] == "done", GRADE_S, "the second grade")
    page.goto(f"{served.url}/problems/add_relu/leaderboard")
    assert sorted(column_values(page, "board", 2)) == ["alpha", "beta"]
    assert page.locator(f"#board a[href='/submissions/{first['id']}']").count() == 1
    page.click("#board thead th:has-text('Model')")
    assert column_values(page, "board", 2) == ["alpha", "beta"]
    page.click("#board thead th:has-text('Model')")
    assert column_values(page, "board", 2) == ["beta", "alpha"]
    assert page.get_attribute("#board thead th:has-text('Model')", "aria-sort") == "descending"
    assert "\u2013" in column_values(page, "board", 4)[0]  # the speedup's interval
    page.screenshot(path=shots / "3-problem-leaderboard.png", full_page=True)

    page.goto(f"{served.url}/leaderboards?suite=cpu")
    page.click("#suite-board thead th:has-text('Model')")
    page.click("#suite-board thead th:has-text('Model')")
    assert column_values(page, "suite-board", 0) == ["beta", "alpha"]
    page.screenshot(path=shots / "4-suite-leaderboard.png", full_page=True)

    page.goto(f"{served.url}/problems/add_relu")
    assert page.locator("#speedup-plot svg circle.point").count() == 2
    assert page.locator("#speedup-plot svg line.threshold").count() == 5
    page.screenshot(path=shots / "5-problem.png", full_page=True)

    page.goto(served.url + "/")
    assert page.inner_text("#queue-depth") == "0" and "judges online" in page.inner_text("main")
    page.screenshot(path=shots / "6-home.png", full_page=True)
    assert outside == []  # no CDN, no fonts: everything comes from the server


def test_pages_fit_a_phone_screen(served: ServeProcess, browser: Browser) -> None:
    shots = screenshots_dir("phone")
    done = submit(served, CORRECT, model="phone-model")
    wait_until(lambda: read(served, done["id"])["evaluation"]["status"] == "done", GRADE_S, "the grade")
    page, outside = open_page(browser, served, PHONE)
    for name, path in (("submission", f"/submissions/{done['id']}"), ("leaderboard", "/problems/add_relu/leaderboard"),
                       ("problem", "/problems/add_relu"), ("home", "/")):
        page.goto(served.url + path)
        # Wide tables scroll inside their own box; the page itself never scrolls sideways.
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} is {overflow}px wider than the phone"
        page.screenshot(path=shots / f"phone-{name}.png", full_page=True)
    assert outside == [] and httpx.get(served.url + "/static/pages.css").status_code == 200
