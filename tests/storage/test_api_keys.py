"""API key rows: found by prefix, names unique, revocation recorded."""

from __future__ import annotations

import pytest

from kernelgrade.storage.api_keys import KeyNameTaken, NewApiKey, add_key, key_by_prefix, list_keys, revoke_key
from kernelgrade.storage.database import Database
from kernelgrade.storage.records import Role


def test_keys_are_found_by_prefix_and_revoked_by_name(database: Database) -> None:
    with database.session() as session:
        created = add_key(session, NewApiKey("alice", Role.SUBMITTER, "kg_aaaaaaaaa", "a" * 64, quota_per_day=5))
        add_key(session, NewApiKey("root", Role.ADMIN, "kg_bbbbbbbbb", "b" * 64))
    with database.session() as session:
        found = key_by_prefix(session, "kg_aaaaaaaaa")
        assert found == created and found.quota_per_day == 5 and found.role is Role.SUBMITTER
        assert key_by_prefix(session, "kg_zzzzzzzzz") is None
        assert revoke_key(session, "alice") and not revoke_key(session, "alice")
    with database.session() as session:
        assert [(k.name, k.revoked_at is not None) for k in list_keys(session)] == [("alice", True), ("root", False)]


def test_key_names_are_unique(database: Database) -> None:
    with database.session() as session:
        add_key(session, NewApiKey("alice", Role.SUBMITTER, "kg_aaaaaaaaa", "a" * 64))
        with pytest.raises(KeyNameTaken):
            add_key(session, NewApiKey("alice", Role.ADMIN, "kg_ccccccccc", "c" * 64))
        assert len(list_keys(session)) == 1
