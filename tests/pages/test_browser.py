"""The pages in a real browser against a real `kernelgrade serve`: a submission is watched from the queue
to its verdict, then found on the leaderboards (sorted by clicking headers) and on the problem's plot; and
every page with long names and notes on a 1400-pixel screen, where nothing may scroll sideways.
Screenshots of every page are saved for people to look at (the folder is printed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from kernelgrade.problems import find_builtin
from kernelgrade.service.app import create_app
from kernelgrade.storage.database import Database
from kernelgrade.storage.migrate import upgrade
from tests.pages.browser import DESKTOP, LAPTOP, PHONE, chromium, missing_browser, screenshots_dir
from tests.pages.results import finish, incorrect_result, wide_result
from tests.service.conftest import add_builtin, base_settings
from tests.service.servers import ServeProcess, ThreadServer, wait_until
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


# Names as long as the API accepts in practice: a hub model id with its agent's settings, a pipeline's key.
LONG_MODEL = "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B + kernel-agent-v3 (temperature 0.7, 8 turns, best-of-4)"
LONG_SUBMITTER = "research-cluster-nightly-kernel-eval-pipeline"
# What a page may not do at 1400 pixels: scroll sideways, hold a table wider than its box, or a cell whose
# content runs past it or past its table.
OVERFLOWS = """() => {
  const out = [];
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth) out.push(`page ${page.scrollWidth} > ${page.clientWidth}`);
  document.querySelectorAll(".scroll").forEach((box, i) => {
    if (box.scrollWidth > box.clientWidth) out.push(`box ${i} ${box.scrollWidth} > ${box.clientWidth}`);
  });
  document.querySelectorAll("table").forEach((table, t) => {
    const right = table.getBoundingClientRect().right;
    table.querySelectorAll("td, th").forEach((cell) => {
      const text = cell.textContent.trim().slice(0, 40);
      if (cell.getBoundingClientRect().right > right + 0.5) out.push(`table ${t}: cell "${text}" past the table`);
      if (cell.scrollWidth > cell.clientWidth + 1) out.push(`table ${t}: "${text}" overflows its cell`);
    });
  });
  return out;
}"""


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[str, dict[str, int]]]:
    """An API server (no judges) with results recorded as a judge records them: long names, a reference
    stopped differently before and after, a failing trial with a long note, and GPU problems in the suite
    that the CPU results are not scored over."""
    url = f"sqlite:///{tmp_path / 'kg.db'}"
    database = Database.connect(url)
    upgrade(database)
    add_builtin(database)
    with ThreadServer(create_app(base_settings(tmp_path, url), database=database)) as server:
        api = httpx.Client(base_url=server.url, timeout=30.0)
        gpu_problem = find_builtin("add_relu")
        assert gpu_problem is not None
        for name in ("batched_matmul_with_bias_and_gelu_epilogue", "conv2d_depthwise_separable"):
            source = gpu_problem.source.replace('"device": "cpu"', '"device": "cuda"')
            assert api.post("/v1/problems", json={"name": name, "source": source}).status_code == 201
        ids: dict[str, int] = {}
        for name, (model, submitter, result) in {
                "fast": (LONG_MODEL, LONG_SUBMITTER, wide_result(1.41)), "slow": ("beta", "bob", wide_result(0.106)),
                "failing": (LONG_MODEL, LONG_SUBMITTER, incorrect_result())}.items():
            body = {"problem": "add_relu", "source": variant(len(ids)), "model": model, "submitter": submitter}
            ids[name] = api.post("/v1/submissions", json=body).json()["id"]
            finish(database, result)
        api.close()
        yield server.url, ids
    database.dispose()


def test_every_page_fits_a_1400_pixel_screen_with_long_names_and_notes(seeded: tuple[str, dict[str, int]],
                                                                       browser: Browser) -> None:
    url, ids = seeded
    shots = screenshots_dir("desktop")
    page = browser.new_page(viewport=DESKTOP)
    page.set_default_timeout(15_000)
    for name, path in (("submission", f"/submissions/{ids['fast']}"),
                       ("failing-submission", f"/submissions/{ids['failing']}"),
                       ("problem-leaderboard", "/problems/add_relu/leaderboard"),
                       ("suite-leaderboard", "/leaderboards?suite=cpu"), ("problem", "/problems/add_relu"),
                       ("home", "/")):
        page.goto(url + path)
        page.screenshot(path=shots / f"desktop-{name}.png", full_page=True)
        assert page.evaluate(OVERFLOWS) == [], f"{path} does not fit {DESKTOP['width']} pixels"
    page.goto(f"{url}/submissions/{ids['failing']}")
    assert "_ZN2at6native29" in page.inner_text("#trials")
    page.goto(f"{url}/leaderboards?suite=cpu")
    assert "cpu-test grades 1 of the 3 problems" in page.inner_text("#device-scopes")
