"""rpc.discover as the daemon serves it, read by libraries nobody here wrote: the OpenRPC
document model of the `openrpc` package (its fields and types, as the OpenRPC 1.2.6
specification has them) and `jsonschema`'s draft-07 meta-schema for every parameter's and
result's schema (OpenRPC's schemas are JSON Schema draft-07)."""

from __future__ import annotations

import asyncio
from typing import Any

import jsonschema
import openrpc

from blefleet import Fleet


def discover(socket: str) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        fleet = await Fleet.connect(socket)
        try:
            return dict(await fleet.call("rpc.discover", {}))
        finally:
            await fleet.close()
    return asyncio.run(call())


def resolved(node: Any, document: dict[str, Any]) -> Any:
    """`node` with its Reference Objects (`{"$ref": "#/components/..."}`) replaced by what they
    point to: the `openrpc` package's model takes an error as an Error Object only, where the
    specification allows a reference too. A reference that points nowhere fails here."""
    if isinstance(node, dict):
        if set(node) == {"$ref"} and node["$ref"].startswith("#/"):
            target: Any = document
            for part in node["$ref"][2:].split("/"):
                target = target[part]
            return resolved(target, document)
        return {key: resolved(value, document) for key, value in node.items()}
    if isinstance(node, list):
        return [resolved(item, document) for item in node]
    return node


def test_rpc_discover_is_an_openrpc_document_with_json_schemas(daemon):
    document = discover(daemon.socket)
    # Raises on a field missing or mistyped anywhere in the document.
    parsed = openrpc.OpenRPC.model_validate(resolved(document, document))
    assert parsed.openrpc == "1.2.6"
    names = [method.name for method in parsed.methods]
    assert "led.set" in names
    assert names == [method["name"] for method in document["methods"]]
    checked = 0
    for method in document["methods"]:
        for param in method["params"]:
            jsonschema.Draft7Validator.check_schema(param["schema"])
            checked += 1
        jsonschema.Draft7Validator.check_schema(method["result"]["schema"])
        checked += 1
    assert checked > len(names)
    for error in (document.get("components") or {}).get("errors", {}).values():
        assert isinstance(error["code"], int) and error["message"]


def test_a_schema_out_of_place_is_caught():
    """The checks above can fail: a document with a method without its result, and a schema
    whose type is not a JSON Schema type, are refused."""
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError):
        openrpc.OpenRPC.model_validate({"openrpc": "1.2.6", "info": {"title": "t", "version": "1"},
                                        "methods": [{"name": "m", "params": []}]})
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft7Validator.check_schema({"type": "hex"})
