"""Opaque pagination cursors: the id to continue below, encoded so that clients do not build them."""

from __future__ import annotations

import base64
import binascii

from kernelgrade.service.errors import invalid
from kernelgrade.service.schemas import MAX_ID


def encode_cursor(submission_id: int | None) -> str | None:
    if submission_id is None:
        return None
    return base64.urlsafe_b64encode(f"s:{submission_id}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    if not cursor:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        kind, _, number = text.partition(":")
        if kind == "s" and number.isascii() and number.isdigit() and int(number) <= MAX_ID:
            return int(number)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise invalid("invalid_cursor", "the cursor is not one this server gave out; pass the `next_cursor` of the"
                  " previous page unchanged, or leave it out for the first page.")
