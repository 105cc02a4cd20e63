from __future__ import annotations

import pytest

from tests.service.conftest import api, api_factory, database, database_url

__all__ = ["api", "api_factory", "database", "database_url"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives a headless Chromium (Debian's chromium package)")
