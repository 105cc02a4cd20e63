"""The pages over real HTTP (uvicorn thread, no judges): what each shows, and who sees which source."""

from __future__ import annotations

import re

import httpx

from kernelgrade.problems import find_builtin
from kernelgrade.service.pages.svg_plots import TIMES
from kernelgrade.storage.database import Database
from kernelgrade.storage.records import Role
from tests.pages.results import compile_error_result, correct_result, finish, incorrect_result
from tests.service.conftest import ApiFactory
from tests.service.keys import make_key
from tests.service.sources import CORRECT, variant

DASH = "\u2013"  # between the ends of an interval


def submit(api: httpx.Client, source: str, **fields: object) -> int:
    response = api.post("/v1/submissions", json={"problem": "add_relu", "source": source, **fields})
    assert response.status_code == 201, response.text
    submission_id: int = response.json()["id"]
    return submission_id


def points(html: str, css: str) -> int:
    return len(re.findall(rf'<circle class="point {css}"', html))


def test_a_graded_submission_shows_everywhere_with_plots_and_intervals(api: httpx.Client, database: Database) -> None:
    first, second = submit(api, CORRECT, model="alpha"), submit(api, variant(1), model="beta")
    finish(database, correct_result(2.0))
    finish(database, correct_result(0.8))
    page = api.get(f"/submissions/{first}").text
    assert 'id="verdict" class="badge correct">correct' in page and "Every correctness check passed" in page
    assert points(page, "reference") == 4 and points(page, "candidate") == 3
    assert page.count("<span class=\"badge correct\">pass</span>") == 3 and "Test CPU" in page
    assert "clamp_min" in page  # open mode: the local user may read the source
    board = api.get("/problems/add_relu/leaderboard").text
    assert board.index("alpha") < board.index("beta") and f'href="/submissions/{second}"' in board
    assert f"1.64{DASH}2.44{TIMES}" in board  # (4 * 0.9) / (2 * 1.1) to (4 * 1.1) / (2 * 0.9)
    problem = api.get("/problems/add_relu").text
    assert points(problem, "speedup") == 2 and problem.count('class="threshold"') == 5
    assert "def get_inputs" in problem and "cpu-test" in problem
    suite = api.get("/leaderboards", params={"suite": "cpu"}).text
    assert "fast_1.5" in suite and suite.index("alpha") < suite.index("beta")
    home = api.get("/").text
    assert f'href="/submissions/{first}"' in home and 'id="queue-depth">0<' in home


def cells(html: str, table: str, column: int) -> list[str]:
    """The text of one column of a table's body rows (tags removed)."""
    body = html[html.index(f'id="{table}"'):]
    body = body[body.index("<tbody>"):body.index("</tbody>")]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [re.sub(r"<[^>]+>", "", re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)[column]).strip()
            for row in rows]


def test_the_trials_show_the_relative_error_the_failure_quotes(api: httpx.Client, database: Database) -> None:
    submission_id = submit(api, CORRECT)
    finish(database, incorrect_result())
    page = api.get(f"/submissions/{submission_id}").text
    quoted = re.search(r"Relative error (\S+),", page)
    assert quoted is not None and quoted.group(1) == "1"
    assert cells(page, "trials", 3) == ["2.1e-07", quoted.group(1)]  # the norm-wise figure, as quoted
    assert cells(page, "trials", 4) == ["8.3e-08", "8.3e-08"]  # PyTorch's own
    assert "7.02e+12" not in page and "Max rel" not in page  # the elementwise ratio is left off
    assert "‖output \u2212 float64 result‖ / ‖float64 result‖" in page  # a minus sign
    assert '<td class="note">the output: 262144 of 262144' in page


def test_the_suite_board_says_which_device_class_grades_how_many_problems(api: httpx.Client,
                                                                          database: Database) -> None:
    builtin = find_builtin("add_relu")
    assert builtin is not None
    for name in ("gemm_a", "gemm_b"):  # in the same suite, for a GPU
        source = builtin.source.replace('"device": "cpu"', '"device": "cuda"')
        assert api.post("/v1/problems", json={"name": name, "source": source}).status_code == 201
    submit(api, CORRECT, model="alpha")
    finish(database, correct_result(1.41))
    page = api.get("/leaderboards", params={"suite": "cpu"}).text
    assert "cpu-test grades 1 of the 3 problems, the cpu ones (the other 2 need another device class)" in page
    assert cells(page, "suite-board", 1) == ["cpu-test"]
    assert cells(page, "suite-board", 5) == ["100%"]  # fast_1 over the one problem a CPU can grade
    assert cells(page, "suite-board", 10) == ["1 of 1"]


def test_in_flight_state_is_polled_from_a_json_endpoint_that_needs_no_key(api_factory: ApiFactory,
                                                                          database: Database) -> None:
    alice = make_key(database, "alice")
    api = api_factory(open_mode="off")
    submission_id = api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT},
                             headers={"X-API-Key": alice}).json()["id"]
    page = api.get(f"/submissions/{submission_id}").text
    assert 'data-status="queued"' in page and "Waiting for a judge" in page
    assert api.get(f"/submissions/{submission_id}/state").json() == {
        "status": "queued", "verdict": None, "queue_position": 0, "progress": None}
    assert 'id="queue-depth">1<' in api.get("/").text


def test_sources_and_compiler_output_follow_the_json_apis_rules(api_factory: ApiFactory, database: Database) -> None:
    alice, bob = make_key(database, "alice"), make_key(database, "bob")
    admin = make_key(database, "root", Role.ADMIN)
    api = api_factory(open_mode="off")
    submission_id = api.post("/v1/submissions", json={"problem": "add_relu", "source": CORRECT},
                             headers={"X-API-Key": alice}).json()["id"]
    finish(database, compile_error_result())

    def page(key: str | None) -> str:
        response = api.get(f"/submissions/{submission_id}", headers={"X-API-Key": key} if key else {})
        assert response.status_code == 200
        return response.text

    for owner_view in (page(alice), page(admin)):
        assert "was not declared in this scope" in owner_view and 'id="source"' in owner_view
        assert '<span class="hl">   2  import torch.nn as nn</span>' in owner_view
    for other_view in (page(bob), page(None)):
        assert "compile_error" in other_view and "the extension did not build" in other_view
        assert "was not declared" not in other_view and 'id="source"' not in other_view


def test_unknown_pages_are_html_404s(api: httpx.Client) -> None:
    for path in ("/problems/nope", "/problems/nope/leaderboard", "/submissions/999"):
        response = api.get(path)
        assert response.status_code == 404 and "text/html" in response.headers["content-type"]
        assert "Not found" in response.text
    assert api.get("/submissions/999/state").json()["error"]["code"] == "submission_not_found"
    assert api.get("/static/pages.js").status_code == 200
