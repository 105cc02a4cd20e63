"""API key strings: `kg_` + 40 random URL-safe characters. Only the SHA-256 of a key is stored; its first
12 characters are stored in clear to find the row by index."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

KEY_PREFIX = "kg_"
PREFIX_LENGTH = 12


@dataclass(frozen=True)
class KeyMaterial:
    key: str
    prefix: str
    key_hash: str


def new_key() -> KeyMaterial:
    key = KEY_PREFIX + secrets.token_urlsafe(30)
    return KeyMaterial(key, key_prefix(key), hash_key(key))


def key_prefix(key: str) -> str:
    return key[:PREFIX_LENGTH]


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def matches(key: str, key_hash: str) -> bool:
    return hmac.compare_digest(hash_key(key), key_hash)
