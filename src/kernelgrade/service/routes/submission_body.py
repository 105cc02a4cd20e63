"""Reading POST /v1/submissions: a JSON body, or a multipart form with the source as an uploaded file."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from kernelgrade.service.errors import ApiError, invalid
from kernelgrade.service.schemas import SubmissionIn

FORM_FIELDS = ("problem", "submitter", "model", "device", "source")
FLAG_FIELDS = ("force", "public")

OPENAPI_BODY: dict[str, Any] = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"$ref": "#/components/schemas/SubmissionIn"}},
    "multipart/form-data": {"schema": {
        "type": "object", "required": ["problem", "file"],
        "properties": {"file": {"type": "string", "format": "binary", "description": "the ModelNew source file"},
                       "problem": {"type": "string"}, "submitter": {"type": "string"}, "model": {"type": "string"},
                       "device": {"type": "string"}, "force": {"type": "boolean"}, "public": {"type": "boolean"}}}},
}}}


async def read_submission(request: Request) -> SubmissionIn:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("application/json", ""):
        return _validated_json(await request.body())
    if content_type == "multipart/form-data":
        return _validated(await _form_fields(request))
    raise ApiError(415, "unsupported_media_type", f"Content-Type {content_type!r} is not accepted: send JSON"
                   " (application/json) or a form upload (multipart/form-data with the source in `file`).")


def _validated_json(raw: bytes) -> SubmissionIn:
    try:
        return SubmissionIn.model_validate_json(raw)
    except ValidationError as exc:
        raise _as_request_error(exc) from None


def _validated(fields: dict[str, Any]) -> SubmissionIn:
    try:
        return SubmissionIn.model_validate(fields)
    except ValidationError as exc:
        raise _as_request_error(exc) from None


def _as_request_error(exc: ValidationError) -> RequestValidationError:
    return RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)])


async def _form_fields(request: Request) -> dict[str, Any]:
    form = await request.form(max_files=1, max_fields=len(FORM_FIELDS) + len(FLAG_FIELDS) + 1)
    fields: dict[str, Any] = {}
    for name, value in form.multi_items():
        if isinstance(value, UploadFile):
            fields["source"] = _decoded(await value.read(), value.filename or name)
        elif name in FORM_FIELDS:
            fields[name] = value
        elif name in FLAG_FIELDS:
            fields[name] = value.strip().lower() in ("1", "true", "yes", "on")
        else:
            raise invalid("invalid_request", f"unknown form field {name!r}; the fields are file, "
                          + ", ".join(FORM_FIELDS[:-1] + FLAG_FIELDS))
    return fields


def _decoded(raw: bytes, filename: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid("source_not_text", f"{filename} is not UTF-8 text (byte {exc.start}); upload the Python"
                      " source file.") from None
