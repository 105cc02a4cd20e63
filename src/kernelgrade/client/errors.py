"""What the client raises: the server's own errors, and no answer at all."""

from __future__ import annotations

import httpx


class ApiError(Exception):
    """The server refused a request or failed on it. `code` is stable, for programs (e.g.
    `problem_not_found`, `rate_limited`); `message` says what went wrong and what to do; `retry_after` is
    the server's Retry-After in seconds, where it sent one (429)."""

    def __init__(self, code: str, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{message} ({code}, HTTP {status})")
        self.code, self.status, self.message, self.retry_after = code, status, message, retry_after


class ServerUnreachable(Exception):
    """No answer: nothing listens at the address, the network dropped the request, or the server did not
    answer in time."""

    def __init__(self, url: str, cause: httpx.TransportError) -> None:
        super().__init__(f"cannot reach {url}: {cause or type(cause).__name__}. Is `kernelgrade serve` running"
                         " there?")
        self.url = url
