"""The vendors' documented schemas — parts of their OpenAPI documents, copied here with a note of their source —
and one check against them, for the contract tests and for the fakes that answer 422 like the vendor does."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["contract_problems", "parameter_problems", "parameter_type"]

_HERE = Path(__file__).parent
DOCUMENTS = {"runpod": "runpod_v2_schemas.json", "lambda": "lambda_schemas.json"}


@cache
def _document(vendor: str) -> dict:
    return json.loads((_HERE / DOCUMENTS[vendor]).read_text())


@cache
def _validator(vendor: str, pointer: str) -> Draft202012Validator:
    """The vendor's document as the root schema, pointed at one of its schemas: its `#/components/...` refs
    resolve within it (the document's other keys are no JSON Schema keywords, so they are ignored)."""
    return Draft202012Validator({**_document(vendor), "$ref": f"#{pointer}"})


def _problems(vendor: str, pointer: str, instance: Any) -> list[str]:
    errors = sorted(_validator(vendor, pointer).iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [f"{error.json_path}: {error.message}" for error in errors]


def contract_problems(vendor: str, schema: str, instance: Any) -> list[str]:
    """Every way `instance` breaks the vendor's schema, as `$.path: message` lines (empty: it conforms)."""
    return _problems(vendor, f"/components/schemas/{schema}", instance)


def parameter_type(vendor: str, parameter: str) -> str:
    """The JSON type of a documented query parameter (`array` for comma-separated ones)."""
    return _document(vendor)["x-parameters"][parameter]["schema"].get("type", "string")


def parameter_problems(vendor: str, parameter: str, value: Any) -> list[str]:
    """How a query parameter's value (parsed to its type) breaks its documented schema."""
    return _problems(vendor, f"/x-parameters/{parameter}/schema", value)
