"""The log format every kernelgrade process (serve, worker) uses."""

from __future__ import annotations

import logging


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Alembic announces each of its plugins at INFO; the migrations it runs are still logged.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
