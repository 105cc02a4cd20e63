"""Query and path parameters that reach the database as text: NUL is refused (TEXT_PATTERN) before a query
is built, so a Postgres deployment answers 422 where it would otherwise fail. A single-valued query parameter
sent more than once is refused too (`given_once`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from kernelgrade.service.errors import invalid
from kernelgrade.service.schemas import TEXT_PATTERN

QueryText = Annotated[str | None, Query(pattern=TEXT_PATTERN)]
PathText = Annotated[str, Path(pattern=TEXT_PATTERN)]


def given_once(*names: str) -> Any:
    """A route dependency refusing these query parameters when one is sent several times: FastAPI would read
    the last value and drop the others unseen, answering a question the caller did not ask."""

    def check(request: Request) -> None:
        for name in names:
            count = len(request.query_params.getlist(name))
            if count > 1:
                raise invalid("invalid_request", f"query.{name}: given {count} times; it takes one value. See"
                              " /docs for the request schema.")

    return Depends(check)
