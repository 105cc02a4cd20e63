"""Problems (list, show, versioned upload) and leaderboards over HTTP, from rows graded through storage."""

from __future__ import annotations

import dataclasses
import math

import httpx
import pytest

from kernelgrade.service.device_memory import GiB
from kernelgrade.storage.database import Database
from kernelgrade.storage.problems import latest_problem, set_input_shapes
from kernelgrade.storage.records import ProblemMemoryNeed
from kernelgrade.storage.submissions import get_submission
from kernelgrade.storage.workers import NewWorker, register_worker
from kernelgrade.worker.input_shapes import fill_missing_shapes
from tests.service.conftest import add_builtin
from tests.service.sources import variant
from tests.storage.builders import grade

PROBLEM = '''"""Scale by two."""
import torch
import torch.nn as nn

KERNELGRADE = {"device": "cpu", "suite": "cpu", "flops": 1024, "tags": ["scale"]}


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(32, 32)]


def get_init_inputs():
    return []
'''


def test_problems_are_listed_and_shown(api: httpx.Client) -> None:
    listed = api.get("/v1/problems").json()["problems"]
    assert [p["name"] for p in listed] == ["add_relu"]
    assert api.get("/v1/problems", params={"suite": "level1"}).json()["problems"] == []
    shown = api.get("/v1/problems/add_relu").json()
    assert shown["device"] == "cpu" and shown["precision"] == "fp32" and "class Model" in shown["source"]
    assert shown["flops"] == 2 * 1024 * 1024 and shown["precision_description"].startswith("fp32")


def test_a_problem_shows_its_memory_and_the_device_classes_it_cannot_fit(api: httpx.Client,
                                                                       database: Database) -> None:
    assert api.get("/v1/problems/add_relu").json()["memory"] is None
    add_builtin(database, "relu")
    assert fill_missing_shapes(database) == 2
    cpu = api.get("/v1/problems/add_relu").json()["memory"]
    assert cpu["inputs_bytes"] == 2 * 1024 * 1024 * 4 and cpu["devices"] == []
    relu = api.get("/v1/problems/relu").json()["memory"]
    assert relu["least_bytes"] < relu["bytes"] and {d["device_class"] for d in relu["devices"]} >= {"cuda-h100"}
    huge = ProblemMemoryNeed(inputs=100 * GiB, weights=0, outputs=2 * GiB, oracle=1, comparison=1,
                             total=102 * GiB + 2, least=102 * GiB + 1)
    with database.session() as session:
        problem = latest_problem(session, "relu")
        assert problem is not None
        set_input_shapes(session, problem.id, ("float32[1]",), huge)
    fits = {d["device_class"]: d["fits"] for d in api.get("/v1/problems/relu").json()["memory"]["devices"]}
    assert fits["cuda-h100"] is False and fits["cuda-h200"] is True
    page = api.get("/problems/relu").text
    assert "cuda-h100 (78 GiB):" in page and "does not fit" in page
    # One trial fits an H100, but the two run children's timing sets do not (KernelBench's 16 GiB pooling input).
    timed = dataclasses.replace(huge, inputs=16 * GiB, total=50 * GiB, least=49 * GiB, timing=65 * GiB)
    with database.session() as session:
        set_input_shapes(session, problem.id, ("float32[1]",), timed)
    memory = api.get("/v1/problems/relu").json()["memory"]
    fits = {d["device_class"]: d["fits"] for d in memory["devices"]}
    assert memory["timing_bytes"] == 65 * GiB and fits["cuda-h100"] is True and fits["cuda-l4"] is False
    timed = dataclasses.replace(timed, timing=80 * GiB)
    with database.session() as session:
        set_input_shapes(session, problem.id, ("float32[1]",), timed)
    fits = {d["device_class"]: d["fits"] for d in api.get("/v1/problems/relu").json()["memory"]["devices"]}
    assert fits["cuda-h100"] is False and fits["cuda-h200"] is True


def test_the_catalogue_checks_problems_against_the_cards_judges_reported(api: httpx.Client,
                                                                        database: Database) -> None:
    add_builtin(database, "relu")
    assert fill_missing_shapes(database) >= 1
    with database.session() as session:
        # A class the table does not know, and an H100 judge whose card is smaller than the table says.
        register_worker(session, NewWorker("gpu0", "cuda-a10", ("cuda",), "host", 1, (), 22 * GiB))
        register_worker(session, NewWorker("gpu1", "cuda-h100", ("cuda",), "host", 1, (), 20 * GiB))
        problem = latest_problem(session, "relu")
        assert problem is not None and problem.meta.memory is not None
        need = dataclasses.replace(problem.meta.memory, least=21 * GiB, total=21 * GiB + 1)
        set_input_shapes(session, problem.id, ("float32[1]",), need)
    devices = {d["device_class"]: d for d in api.get("/v1/problems/relu").json()["memory"]["devices"]}
    assert devices["cuda-a10"] == {"device_class": "cuda-a10", "memory_bytes": 22 * GiB, "fits": True}
    assert devices["cuda-h100"]["memory_bytes"] == 20 * GiB and devices["cuda-h100"]["fits"] is False
    assert devices["cuda-h200"]["fits"] is True  # from the table: no judge of that class reported


def test_uploading_a_problem_is_idempotent_and_a_change_is_a_new_version(api: httpx.Client) -> None:
    created = api.post("/v1/problems", json={"name": "scale2", "source": PROBLEM})
    assert created.status_code == 201 and created.json()["suite"] == "cpu" and created.json()["flops"] == 1024
    again = api.post("/v1/problems", json={"name": "scale2", "source": PROBLEM})
    assert again.status_code == 200 and again.json()["version"] == created.json()["version"]
    changed = api.post("/v1/problems", json={"name": "scale2", "source": PROBLEM.replace("32, 32", "64, 64")})
    assert changed.status_code == 201 and changed.json()["version"] != created.json()["version"]
    assert api.get("/v1/problems/scale2").json()["version"] == changed.json()["version"]
    old = api.get("/v1/problems/scale2", params={"version": created.json()["version"][:12]})
    assert old.json()["version"] == created.json()["version"]


def _graded(api: httpx.Client, database: Database, problem: str, index: int, submitter: str, model: str,
            verdict: str, speedup: float | None) -> int:
    body = {"problem": problem, "source": variant(index), "submitter": submitter, "model": model}
    submission_id: int = api.post("/v1/submissions", json=body).json()["id"]
    with database.session() as session:
        view = get_submission(session, submission_id)
    assert view is not None
    grade(database, view, verdict, speedup)
    return submission_id


def test_problem_leaderboard_ranks_best_correct_speedups(api: httpx.Client, database: Database) -> None:
    runs = [("ann", "m1", "correct", 1.2), ("ann", "m1", "correct", 3.0), ("ben", "m2", "correct", 2.0),
            ("cat", "m1", "flagged", 40.0), ("dan", "m3", "incorrect", None)]
    ids = [_graded(api, database, "add_relu", i, *run) for i, run in enumerate(runs)]
    board = api.get("/v1/leaderboards/add_relu").json()
    assert [(e["rank"], e["submitter"], e["model"], e["speedup"]) for e in board["entries"]] == [
        (1, "ann", "m1", 3.0), (2, "ben", "m2", 2.0)]
    assert board["entries"][0]["submission_id"] == ids[1] and board["flagged_excluded"] == 1
    assert api.get("/v1/leaderboards/add_relu", params={"device": "cuda-h100"}).json()["entries"] == []
    assert api.get("/v1/leaderboards/add_relu", params={"device": "cpu-x86_64"}).json()["entries"]


def test_suite_leaderboard_computes_fast_p_geomean_and_correct_rate(api: httpx.Client, database: Database) -> None:
    assert api.post("/v1/problems", json={"name": "scale2", "source": PROBLEM}).status_code == 201
    _graded(api, database, "add_relu", 0, "ann", "m1", "correct", 2.0)
    _graded(api, database, "scale2", 1, "ann", "m1", "correct", 0.5)
    _graded(api, database, "scale2", 2, "ann", "m1", "incorrect", None)
    _graded(api, database, "scale2", 3, "ben", "m2", "correct", 1.6)
    board = api.get("/v1/leaderboards", params={"suite": "cpu"}).json()
    assert board["problems"] == 2
    m1, m2 = sorted(board["entries"], key=lambda e: e["model"])
    assert m1["fast_p"] == {"0": 1.0, "0.5": 0.5, "0.8": 0.5, "1": 0.5, "1.5": 0.5, "2": 0.0}
    assert m1["geomean_speedup"] == pytest.approx(1.0) and m1["correct_rate"] == pytest.approx(2 / 3)
    assert m1["solved_problems"] == 2 and m1["evaluations"] == 3
    assert m2["fast_p"]["1.5"] == 0.5 and m2["fast_p"]["2"] == 0.0
    assert m2["geomean_speedup"] == pytest.approx(1.6) and not math.isnan(m2["correct_rate"])
    assert [e["model"] for e in board["entries"]] == ["m2", "m1"]  # equal fast_1: the geometric mean decides


def test_suite_leaderboard_scores_each_device_class_over_the_problems_it_can_grade(api: httpx.Client,
                                                                                 database: Database) -> None:
    for name in ("gemm_a", "gemm_b", "gemm_c"):  # in the same suite, for a GPU
        source = PROBLEM.replace('"device": "cpu"', '"device": "cuda"')
        assert api.post("/v1/problems", json={"name": name, "source": source}).status_code == 201
    _graded(api, database, "add_relu", 0, "ann", "m1", "correct", 1.41)
    board = api.get("/v1/leaderboards", params={"suite": "cpu"}).json()
    assert board["problems"] == 4
    assert board["device_classes"] == [{"device_class": "cpu-x86_64", "device_kind": "cpu", "problems": 1}]
    (m1,) = board["entries"]
    assert (m1["device_class"], m1["problems"], m1["solved_problems"]) == ("cpu-x86_64", 1, 1)
    assert m1["fast_p"]["1"] == 1.0 and m1["fast_p"]["1.5"] == 0.0  # not 1 of 4: the CPU cannot grade gemm_*
    gpu = api.get("/v1/leaderboards", params={"suite": "cpu", "device": "cuda-h100"}).json()
    assert gpu["device_classes"] == [{"device_class": "cuda-h100", "device_kind": "cuda", "problems": 3}]
    assert gpu["entries"] == []
