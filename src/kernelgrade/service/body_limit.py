"""Refuse request bodies over a size limit before they are read into memory: by Content-Length when the
client sends one, and by counting the bytes of a streamed (chunked) body otherwise."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelgrade.service.errors import error_response


class BodyTooLarge(Exception):
    """Raised inside the app when a streamed body passes the limit; an exception handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes")
        self.limit = limit


def body_too_large_message(limit: int) -> str:
    return (f"the request body is larger than the server's limit of {limit} bytes (KERNELGRADE_MAX_REQUEST_BYTES);"
            " send fewer sources per batch")


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            response = error_response(413, "request_too_large", body_too_large_message(self.limit),
                                      headers={"Connection": "close"})
            await response(scope, receive, send)
            return
        await self.app(scope, self._counting(receive), send)

    def _counting(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        return counted
