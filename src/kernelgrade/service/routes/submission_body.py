"""Reading POST /v1/submissions: a JSON body, or a multipart form with the source as an uploaded file."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from kernelgrade.service.errors import ApiError, invalid
from kernelgrade.service.schemas import TEXT_PATTERN, SubmissionIn

FORM_FIELDS = ("problem", "submitter", "model", "device", "source", "force", "public")
FLAG_FIELDS = ("force", "public")
FILE_FIELD = "file"
# How HTML forms and curl spell a checkbox; anything else in a flag field is refused, not read as false.
FLAG_VALUES = {"true": True, "1": True, "on": True, "yes": True, "false": False, "0": False, "off": False,
               "no": False}


def _form_property(name: str) -> dict[str, Any]:
    """A form field has the constraints of the JSON field of the same name; an absent field is the JSON null."""
    declared: dict[str, Any] = SubmissionIn.model_json_schema()["properties"][name]
    choices = [c for c in declared.get("anyOf", [declared]) if c.get("type") != "null"]
    described = {k: v for k, v in declared.items() if k in ("description", "default") and v is not None}
    return {**choices[0], **described}


def _multipart_schema() -> dict[str, Any]:
    # The upload is the Python source itself: UTF-8 text, sent as a file part (with a filename) or as a
    # plain field. The Content-Disposition example gives generated clients the filename a browser would send.
    source = {"type": "string", "contentMediaType": "text/x-python", "pattern": TEXT_PATTERN,
              "description": "the ModelNew source file, UTF-8 text (or send the text in `source`)"}
    fields = {name: _form_property(name) for name in FORM_FIELDS if name != "source"}
    return {
        "schema": {"type": "object", "required": ["problem", FILE_FIELD], "additionalProperties": False,
                   "properties": {FILE_FIELD: source, **fields}},
        "encoding": {FILE_FIELD: {"contentType": "text/x-python, text/plain, application/octet-stream",
                                  "headers": {"Content-Disposition": {
                                      "schema": {"type": "string"},
                                      "example": 'form-data; name="file"; filename="submission.py"'}}}},
    }


def openapi_body() -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/SubmissionIn"}},
        "multipart/form-data": _multipart_schema(),
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
    form = await request.form(max_files=1, max_fields=len(FORM_FIELDS) + 1)
    fields: dict[str, Any] = {}
    for name, value in form.multi_items():
        if name != FILE_FIELD and name not in FORM_FIELDS:
            raise invalid("invalid_request", f"unknown form field {name!r}; the fields are {FILE_FIELD}, "
                          + ", ".join(FORM_FIELDS))
        if isinstance(value, UploadFile) and name != FILE_FIELD:
            raise invalid("invalid_request", f"form field {name!r} was sent as a file; only `{FILE_FIELD}` is one.")
        if isinstance(value, UploadFile):
            fields["source"] = _decoded(await value.read(), value.filename or name)
        elif name in FLAG_FIELDS:
            fields[name] = _flag(name, value)
        else:
            fields["source" if name == FILE_FIELD else name] = value
    return fields


def _flag(name: str, value: str) -> bool:
    flag = FLAG_VALUES.get(value.strip().lower())
    if flag is None:
        raise invalid("invalid_request", f"form field {name!r} is {value[:40]!r}; send true or false.")
    return flag


def _decoded(raw: bytes, filename: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid("source_not_text", f"{filename} is not UTF-8 text (byte {exc.start}); upload the Python"
                      " source file.") from None
