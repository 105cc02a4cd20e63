"""The Jinja2 environment of the pages (templates shipped inside the package) and a render helper."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from kernelgrade import __version__
from kernelgrade.service.pages.measurements import stop_reason

SERVICE_DIR = Path(__file__).resolve().parent.parent
TEMPLATES_DIR = SERVICE_DIR / "templates"
STATIC_DIR = SERVICE_DIR / "static"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else ""


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d") if value is not None else ""


def _number(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def _gib(value: int | None) -> str:
    return "" if value is None else f"{value / 1024**3:.3g} GiB"


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.0f}%"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=_when, day=_day, num=_number, gib=_gib, percent=_percent, stop_reason=stop_reason)
    env.globals["version"] = __version__
    return env


ENVIRONMENT = _environment()


def render(request: Request, template: str, page: dict[str, Any], status_code: int = 200) -> HTMLResponse:
    html = ENVIRONMENT.get_template(template).render(request=request, **page)
    return HTMLResponse(html, status_code=status_code)
