"""Database models, migrations and the queries the service needs."""
