from __future__ import annotations

import httpx


def error_of(response: httpx.Response, status: int, code: str) -> str:
    """Assert the stable error shape and return the message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == code, body
    message: str = body["error"]["message"]
    assert message, body
    return message
