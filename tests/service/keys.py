"""API keys for service tests, created the way `kernelgrade keys create` does."""

from __future__ import annotations

from kernelgrade.service.key_material import new_key
from kernelgrade.storage.api_keys import NewApiKey, add_key
from kernelgrade.storage.database import Database
from kernelgrade.storage.records import Role


def make_key(database: Database, name: str, role: Role = Role.SUBMITTER, *, quota: int | None = None,
             rate: int | None = None) -> str:
    material = new_key()
    with database.session() as session:
        add_key(session, NewApiKey(name, role, material.prefix, material.key_hash, quota, rate))
    return material.key
