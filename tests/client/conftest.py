from tests.service.conftest import api, api_factory
from tests.storage.databases import database, database_url

__all__ = ["api", "api_factory", "database", "database_url"]
