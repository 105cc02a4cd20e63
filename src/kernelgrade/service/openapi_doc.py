"""The OpenAPI document, adjusted where FastAPI's default would not describe this server's behaviour."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_REF = "#/components/schemas/ErrorResponse"
_FASTAPI_ERROR_SCHEMAS = ("HTTPValidationError", "ValidationError")


def openapi_builder(app: FastAPI, *, open_mode: bool, max_batch: int) -> Callable[[], dict[str, Any]]:
    """`app.openapi`: the generated document, built once, with the project's error shape for every 422 (FastAPI
    documents its own `{"detail": ...}`), this deployment's batch limit, and, in open mode, the API key marked
    optional (a caller without one acts as the local admin)."""

    def build() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            for operation in _operations(document):
                _use_error_shape(operation)
                if open_mode and operation.get("security"):
                    operation["security"] = [*operation["security"], {}]
            schemas = document.get("components", {}).get("schemas", {})
            for name in _FASTAPI_ERROR_SCHEMAS:
                schemas.pop(name, None)
            if "BatchIn" in schemas:
                schemas["BatchIn"]["properties"]["submissions"]["maxItems"] = max_batch
            app.openapi_schema = document
        return app.openapi_schema

    return build


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [operation for item in document.get("paths", {}).values() for operation in item.values()
            if isinstance(operation, dict)]


def _use_error_shape(operation: dict[str, Any]) -> None:
    unprocessable = operation.get("responses", {}).get("422")
    if unprocessable is None:
        return
    unprocessable["content"] = {"application/json": {"schema": {"$ref": ERROR_REF}}}
    if unprocessable.get("description") == "Validation Error":
        unprocessable["description"] = "malformed request"
