"""Every query parameter an endpoint reads is declared in the served OpenAPI document, so
clients generated from it and the fuzz test (tests/server/test_fuzz.py) can send it.

An endpoint that reads its filters by hand refuses an unknown parameter with a 400 that lists
the ones it reads; that list must be a subset of what the document declares.
"""

from __future__ import annotations

import re
from uuid import uuid4

from tests.server.conftest import Server

UNKNOWN = "bpmNoSuchParameter"
READS = re.compile(r"this endpoint reads ([^)]*)\)")


def test_every_parameter_an_endpoint_reads_is_declared(server: Server) -> None:
    with server.client("operator") as api:
        document = api.get("/openapi.json").json()
        undeclared: dict[str, list[str]] = {}
        checked = 0
        for path, operations in document["paths"].items():
            for method, operation in operations.items():
                if method not in ("get", "delete"):
                    continue
                declared = {
                    p["name"] for p in operation.get("parameters", []) if p["in"] == "query"
                }
                url = re.sub(r"\{[^}]+\}", str(uuid4()), path).removeprefix("/engine-rest")
                answer = api.request(method.upper(), url, params={UNKNOWN: "1"})
                found = READS.search(answer.text) if answer.status_code == 400 else None
                if found is None:
                    continue
                checked += 1
                reads = {name.strip() for name in found.group(1).split(",") if name.strip()}
                if missing := sorted(reads - declared):
                    undeclared[f"{method.upper()} {path}"] = missing
    assert checked >= 5, "no endpoint named the parameters it reads; did the message change?"
    assert not undeclared, f"read but not in openapi.json: {undeclared}"
