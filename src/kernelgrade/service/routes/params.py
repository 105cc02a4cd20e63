"""Query and path parameters that reach the database as text: NUL is refused (TEXT_PATTERN) before a query
is built, so a Postgres deployment answers 422 where it would otherwise fail."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path, Query

from kernelgrade.service.schemas import TEXT_PATTERN

QueryText = Annotated[str | None, Query(pattern=TEXT_PATTERN)]
PathText = Annotated[str, Path(pattern=TEXT_PATTERN)]
