from tests.storage.databases import database, database_url

__all__ = ["database", "database_url"]
