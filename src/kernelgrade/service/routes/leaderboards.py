"""GET /v1/leaderboards."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kernelgrade.service.auth import Context
from kernelgrade.service.leaderboards import board_for_problem, board_for_suite
from kernelgrade.service.routes.params import PathText, QueryText
from kernelgrade.service.routes.responses import errors
from kernelgrade.service.schemas import ProblemBoardOut, SuiteBoardOut

router = APIRouter(prefix="/v1/leaderboards", tags=["leaderboards"])


@router.get("", response_model=SuiteBoardOut, responses=errors(422))
def suite_board(context: Context, suite: QueryText = None, device: QueryText = None) -> SuiteBoardOut:
    """Per model label and device class, over the suite's problems that device class can grade (a cpu-* class
    grades the cpu problems, a cuda-* class the cuda ones): fast_p for p in 0, 0.5, 0.8, 1, 1.5, 2,
    geometric-mean speedup, correct rate. `device` keeps one device class."""
    return board_for_suite(context, suite, device)


@router.get("/{problem}", response_model=ProblemBoardOut, responses=errors(404, 422))
def problem_board(problem: PathText, context: Context, device: QueryText = None, version: QueryText = None,
                  limit: Annotated[int, Query(ge=1, le=500)] = 100) -> ProblemBoardOut:
    """Best correct speedup per (submitter, model) on the problem's latest version; flagged results excluded."""
    return board_for_problem(context, problem, device, version, limit)
