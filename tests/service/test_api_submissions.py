"""Submitting over HTTP (JSON, upload, batch), de-duplication, listing, and who sees which fields."""

from __future__ import annotations

import httpx

from kernelgrade.storage.database import Database
from kernelgrade.storage.records import Role
from tests.service.conftest import ApiFactory
from tests.service.keys import make_key
from tests.service.sources import CORRECT, variant
from tests.storage.builders import grade


def _submit(api: httpx.Client, source: str = CORRECT, **fields: object) -> httpx.Response:
    return api.post("/v1/submissions", json={"problem": "add_relu", "source": source, **fields})


def test_a_json_submission_is_queued_and_readable(api: httpx.Client) -> None:
    created = _submit(api, model="m1", submitter="dana")
    assert created.status_code == 201
    body = created.json()
    assert body["problem"] == "add_relu" and body["submitter"] == "dana" and body["model"] == "m1"
    assert body["evaluation"]["status"] == "queued" and body["evaluation"]["requested_device"] == "cpu"
    assert body["duplicate"] is False and body["source"] is None
    assert any("no worker for device 'cpu'" in w for w in body["warnings"])
    read = api.get(f"/v1/submissions/{body['id']}").json()
    assert read["source"] == CORRECT and read["evaluation"]["queue_position"] == 0
    assert read["problem_version"] == api.get("/v1/problems/add_relu").json()["version"]


def test_a_file_upload_is_a_submission(api: httpx.Client) -> None:
    created = api.post("/v1/submissions", data={"problem": "add_relu", "model": "up", "public": "true"},
                       files={"file": ("kernel.py", CORRECT.encode(), "text/x-python")})
    assert created.status_code == 201, created.text
    read = api.get(f"/v1/submissions/{created.json()['id']}").json()
    assert read["source"] == CORRECT and read["public"] is True and read["model"] == "up"
    # The source as a plain form field (curl -F 'file=<kernel.py'), no filename: the same submission.
    again = api.post("/v1/submissions", files={"problem": (None, "add_relu"), "model": (None, "up"),
                                               "file": (None, CORRECT)})
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]


def test_identical_source_returns_the_earlier_result_unless_forced(api: httpx.Client, database: Database) -> None:
    first = _submit(api).json()
    again = _submit(api)
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["duplicate"] is True
    assert _submit(api, model="other").status_code == 201  # another model label is another entry
    with database.session() as session:
        from kernelgrade.storage.submissions import get_submission

        view = get_submission(session, first["id"])
    assert view is not None
    grade(database, view, "correct", 1.7)
    still = _submit(api).json()
    assert still["id"] == first["id"] and still["evaluation"]["verdict"] == "correct"
    forced = _submit(api, force=True)
    assert forced.status_code == 201 and forced.json()["id"] != first["id"]


def test_listing_pages_with_a_cursor_and_filters(api: httpx.Client) -> None:
    ids = [_submit(api, variant(i), submitter="erin" if i % 2 else "finn").json()["id"] for i in range(5)]
    seen: list[int] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = api.get("/v1/submissions", params=params).json()
        seen += [item["id"] for item in page["items"]]
        assert all(item["source"] is None for item in page["items"])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(ids, reverse=True)
    erin = api.get("/v1/submissions", params={"submitter": "erin"}).json()["items"]
    assert {item["submitter"] for item in erin} == {"erin"} and len(erin) == 2
    assert api.get("/v1/submissions", params={"verdict": "correct"}).json()["items"] == []


def test_a_batch_reports_each_item(api: httpx.Client) -> None:
    batch = {"submissions": [{"problem": "add_relu", "source": variant(1)},
                             {"problem": "missing", "source": variant(2)},
                             {"problem": "add_relu", "source": variant(1)}]}
    items = api.post("/v1/submissions/batch", json=batch).json()["items"]
    assert items[0]["submission"]["duplicate"] is False
    assert items[1]["error"]["code"] == "problem_not_found" and items[1]["submission"] is None
    assert items[2]["submission"]["duplicate"] is True
    assert items[2]["submission"]["id"] == items[0]["submission"]["id"]


def test_keys_decide_the_submitter_and_who_reads_sources(api_factory: ApiFactory, database: Database) -> None:
    alice, bob = make_key(database, "alice"), make_key(database, "bob")
    admin = make_key(database, "root", Role.ADMIN)
    api = api_factory(open_mode="off")
    private = api.post("/v1/submissions", json={"problem": "add_relu", "source": variant(1), "submitter": "mallory"},
                       headers={"X-API-Key": alice}).json()
    assert private["submitter"] == "alice"
    public = api.post("/v1/submissions", json={"problem": "add_relu", "source": variant(2), "public": True},
                      headers={"X-API-Key": alice}).json()

    def source(submission_id: int, key: str) -> str | None:
        found: str | None = api.get(f"/v1/submissions/{submission_id}", headers={"X-API-Key": key}).json()["source"]
        return found

    assert source(private["id"], alice) == variant(1)
    assert source(private["id"], bob) is None
    assert source(private["id"], admin) == variant(1)
    assert source(public["id"], bob) == variant(2)
    other = api.get(f"/v1/submissions/{private['id']}", headers={"X-API-Key": bob}).json()
    assert other["evaluation"]["result"] is None and other["submitter"] == "alice"


def _finish_with_compiled_baseline(database: Database, reused: bool) -> None:
    """Record a result as a judge does: an EvalResult with a torch.compile baseline, through outcome_from_result."""
    from kernelgrade.evaluator import BaselineStatus, CompiledBaseline, EvalResult, TimingStats, Verdict
    from kernelgrade.storage.jobs import Lease, claim_next, finish_job
    from kernelgrade.worker.job_outcome import outcome_from_result

    def stats(median: float) -> TimingStats:
        return TimingStats(n=10, median_ms=median, mean_ms=median, std_ms=0.0, min_ms=median, max_ms=median,
                           ci95_low_ms=median, ci95_high_ms=median, stop_reason="target")

    baseline = CompiledBaseline(status=BaselineStatus.MEASURED, problem_hash="h", backend="inductor (mode default)",
                                device_name="cpu", torch="2.x", measured_at="2026-11-20T10:00:00+00:00",
                                timing=stats(1.5), compile_seconds=12.0)
    result = EvalResult(verdict=Verdict.CORRECT, problem="add_relu", problem_hash="h", precision="fp32",
                        reference_timing=stats(3.0), candidate_timing=stats(2.0), speedup=1.5,
                        compiled_baseline=baseline, compiled_baseline_reused=reused, speedup_vs_compiled=0.75)
    with database.session() as session:
        job = claim_next(session, Lease("judge", 60), {"cpu": "cpu-test"}, 3)
        assert job is not None
        assert finish_job(session, job.evaluation_id, "judge", outcome_from_result(result))


def test_a_result_reports_its_speedup_against_torch_compile(api: httpx.Client, database: Database) -> None:
    created = _submit(api, model="m1").json()
    _finish_with_compiled_baseline(database, reused=True)
    evaluation = api.get(f"/v1/submissions/{created['id']}").json()["evaluation"]
    assert evaluation["speedup"] == 1.5 and evaluation["speedup_vs_compiled"] == 0.75
    assert evaluation["compiled_baseline"] == {
        "status": "measured", "median_ms": 1.5, "backend": "inductor (mode default)",
        "measured_at": "2026-11-20T10:00:00Z", "reused": True, "message": ""}
    entry = api.get("/v1/leaderboards/add_relu").json()["entries"][0]
    assert entry["speedup"] == 1.5 and entry["speedup_vs_compiled"] == 0.75
    board_page = api.get("/problems/add_relu/leaderboard").text
    assert "vs torch.compile" in board_page and "0.75\u00d7" in board_page
    result_page = api.get(f"/submissions/{created['id']}").text
    assert "0.75\u00d7 vs torch.compile of the reference (1.5 ms, inductor (mode default), measured" in result_page


def test_without_a_compiled_baseline_the_fields_are_null(api: httpx.Client, database: Database) -> None:
    view = _submit(api, model="m2").json()
    with database.session() as session:
        from kernelgrade.storage.submissions import get_submission

        found = get_submission(session, view["id"])
    assert found is not None
    grade(database, found, "correct", 1.2)
    evaluation = api.get(f"/v1/submissions/{view['id']}").json()["evaluation"]
    assert evaluation["speedup_vs_compiled"] is None and evaluation["compiled_baseline"] is None
