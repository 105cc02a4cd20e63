"""GET/POST /v1/problems."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kernelgrade.service.auth import Context, CurrentPrincipal, require_admin
from kernelgrade.service.errors import not_found
from kernelgrade.service.problem_catalog import add_problem, parse_problem
from kernelgrade.service.routes.params import PathText, QueryText
from kernelgrade.service.routes.responses import KEYED, WITH_BODY, errors
from kernelgrade.service.schemas import ProblemIn, ProblemListOut, ProblemOut
from kernelgrade.service.views import problem_out, problem_summary
from kernelgrade.storage.problems import latest_problem, list_latest_problems, problem_version
from kernelgrade.storage.workers import device_memory_by_class

router = APIRouter(prefix="/v1/problems", tags=["problems"])


@router.get("", response_model=ProblemListOut, responses=errors(422))
def list_problems(context: Context, suite: QueryText = None) -> ProblemListOut:
    """The latest version of every problem (optionally of one suite)."""
    with context.database.session() as session:
        problems = list_latest_problems(session, suite)
    return ProblemListOut(problems=[problem_summary(p) for p in problems])


@router.get("/{name}", response_model=ProblemOut, responses=errors(404, 422))
def read_problem(name: PathText, context: Context, version: QueryText = None) -> ProblemOut:
    """One problem: reference source, precision policy, FLOP and byte counts, input shapes once known."""
    with context.database.session() as session:
        problem = problem_version(session, name, version) if version else latest_problem(session, name)
        device_memory = device_memory_by_class(session)
    if problem is None:
        raise not_found("problem_not_found", f"no problem named '{name}'" + (f" with version {version}" if version
                        else "") + "; GET /v1/problems lists them.")
    return problem_out(problem, device_memory)


@router.post("", status_code=201, response_model=ProblemOut,
             responses={200: {"model": ProblemOut, "description": "this exact version exists already"},
                        **errors(*KEYED, *WITH_BODY, 403)})
def create_problem(body: ProblemIn, response: Response, principal: CurrentPrincipal, context: Context) -> ProblemOut:
    """Add a problem or a new version of one (admin). Idempotent: the same content returns the existing one."""
    require_admin(principal)
    outcome = add_problem(context.database, parse_problem(body.name, body.source, body.suite, body.level))
    response.status_code = 201 if outcome.created else 200
    with context.database.session() as session:
        return problem_out(outcome.problem, device_memory_by_class(session))
