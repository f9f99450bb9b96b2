"""The size and shape of a request, checked before any work is done: bodies and headers by
their size before they are read and before authentication (413, 414, 431); every text a
client stores by its length (400 naming the field); numbers in filters by their range; and
error messages that quote only the start of what they refuse."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit
from uuid import uuid4

import httpx
import pytest

from bpm.states import Role
from tests.server.conftest import Server
from tests.server.processes import deploy, error_boundary_bpmn

MIB = 1024 * 1024
KEY = "input_limits"
#: A variables query written by hand: JSON that Python's encoder would not write.
_QUERY = '{"variables": [{"name": "amount", "operator": "gt", "value": NUMBER}]}'


@pytest.fixture(scope="module")
def op(server: Server) -> Iterator[httpx.Client]:
    deploy(server.runtime, KEY, "limits-topic")
    server.add("limits-starter", Role.STARTER)
    server.add("limits-worker", Role.WORKER)
    with server.client("operator") as client:
        yield client


def _raw(server: Server, head: str, body: bytes = b"", more: Iterable[bytes] = ()) -> str:
    """Send ``head`` (request line and headers) and ``body`` on a socket of its own, then
    whatever ``more`` yields while the server has not answered; the status line and body
    of the answer. A server that waits for a body it was never sent times out here."""
    url = urlsplit(server.base)
    with socket.create_connection((url.hostname or "", url.port or 80), timeout=15) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        for chunk in more:
            try:
                sock.sendall(chunk)
            except OSError:  # the server answered and closed: the rest is not read
                break
        answer = b""
        while True:
            try:
                part = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not part:
                break
            answer += part
    return answer.decode(errors="replace")


def test_a_body_larger_than_the_limit_is_refused_by_its_length_before_it_is_read(
    server: Server, op: httpx.Client
) -> None:
    path = urlsplit(server.base).path
    head = (
        f"POST {path}/message HTTP/1.1\nHost: x\nContent-Type: application/json\n"
        f"Content-Length: {100 * MIB}\n"
    )
    answer = _raw(server, head)  # no credential, and not a byte of the body sent
    assert answer.startswith("HTTP/1.1 413"), answer[:300]
    assert "1048576 bytes" in answer


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server: Server) -> None:
    path = urlsplit(server.base).path
    head = (
        f"POST {path}/message HTTP/1.1\nHost: x\nContent-Type: application/json\n"
        "Transfer-Encoding: chunked\n"
    )
    chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
    # Far more than the limit, and never the last chunk: only a server that counts as it
    # reads answers at all.
    answer = _raw(server, head, b"", [chunk] * 40)
    assert answer.startswith("HTTP/1.1 413"), answer[:300]


def test_a_deployment_has_a_larger_limit_of_its_own(server: Server, op: httpx.Client) -> None:
    path = urlsplit(server.base).path
    head = (
        f"POST {path}/deployment/create HTTP/1.1\nHost: x\n"
        f"Content-Type: multipart/form-data; boundary=b\nContent-Length: {17 * MIB}\n"
    )
    assert _raw(server, head).startswith("HTTP/1.1 413")
    bpmn = error_boundary_bpmn("limits_big", "limits-big").encode()
    files = {
        "limits_big.bpmn": ("limits_big.bpmn", bpmn, "text/xml"),
        "picture.png": ("picture.png", b"\x89PNG" + b"\0" * (2 * MIB), "image/png"),
    }
    made = op.post("/deployment/create", data={"deployment-name": "big"}, files=files)
    assert made.status_code == 200, made.text


def test_headers_larger_than_the_limit_are_a_431_before_authentication(server: Server) -> None:
    with server.client() as anonymous:
        got = anonymous.get("/engine", headers={"X-Padding": "p" * 20_000})
    assert got.status_code == 431, got.text
    assert "16384 bytes" in got.json()["message"]
    with server.client() as anonymous:
        got = anonymous.get("/process-instance", params={"businessKey": "k" * 20_000})
    assert got.status_code == 414, got.text


def test_a_nul_in_the_basic_user_name_is_a_401(server: Server) -> None:
    token = base64.b64encode(b"oper\x00ator:secret").decode()
    with server.client() as anonymous:
        got = anonymous.get("/process-instance", headers={"Authorization": f"Basic {token}"})
    assert got.status_code == 401, got.text
    assert "user name" in got.json()["message"]


def _refused(got: httpx.Response, field: str) -> str:
    assert got.status_code == 400, got.text[:300]
    message: str = got.json()["message"]
    assert field in message, message
    assert len(got.content) < 2000, got.content[:300]  # never the value itself
    return message


def test_every_name_and_key_a_client_stores_has_a_limit(server: Server, op: httpx.Client) -> None:
    long = "k" * 12_000
    with server.client("limits-starter") as starter:
        started = starter.post(f"/process-definition/key/{KEY}/start", json={"businessKey": long})
        _refused(started, "businessKey")
        keyed = starter.post(
            f"/process-definition/key/{KEY}/start", json={}, headers={"Idempotency-Key": long}
        )
        _refused(keyed, "Idempotency-Key")
        message = starter.post("/message", json={"messageName": "m" * 500_000, "businessKey": "b"})
        _refused(message, "messageName")
        keyed_message = starter.post("/message", json={"messageName": "m", "businessKey": long})
        _refused(keyed_message, "businessKey")
    with server.client("limits-worker") as worker:
        topic = {"topicName": "limits-topic", "lockDuration": 1000}
        fetch = worker.post(
            "/external-task/fetchAndLock", json={"workerId": long, "maxTasks": 1, "topics": [topic]}
        )
        _refused(fetch, "workerId")
        long_topic = {"topicName": long, "lockDuration": 1000}
        fetch = worker.post(
            "/external-task/fetchAndLock",
            json={"workerId": "w", "maxTasks": 1, "topics": [long_topic]},
        )
        _refused(fetch, "topicName")
        task = uuid4()
        failure = {"workerId": "w", "errorMessage": "e" * 4001}
        _refused(worker.post(f"/external-task/{task}/failure", json=failure), "errorMessage")
        failure = {"workerId": "w", "errorMessage": "e", "errorDetails": "d" * (600 * 1024)}
        _refused(worker.post(f"/external-task/{task}/failure", json=failure), "errorDetails")
        bpmn_error = {"workerId": "w", "errorCode": "c", "errorMessage": "e" * 4001}
        _refused(worker.post(f"/external-task/{task}/bpmnError", json=bpmn_error), "errorMessage")
    assert op.get("/process-instance", params={"processDefinitionKey": KEY}).json() == []


def test_a_deployment_file_bpm_only_stores_has_a_limit(op: httpx.Client) -> None:
    bpmn = error_boundary_bpmn("limits_other", "limits-other").encode()
    files = {
        "limits_other.bpmn": ("limits_other.bpmn", bpmn, "text/xml"),
        "form.html": ("form.html", b"<p>" + b"x" * (5 * MIB), "text/html"),
    }
    got = op.post("/deployment/create", data={"deployment-name": "other"}, files=files)
    _refused(got, "form.html")
    named = op.post("/deployment/create", data={"deployment-name": "n" * 300}, files=files)
    _refused(named, "deployment name")
    assert op.get("/process-definition", params={"key": "limits_other"}).json() == []


@pytest.mark.parametrize("number", ["9" * 5000, "1e999999", str(10**30), "-" + "1" * 25])
def test_a_number_in_a_variables_filter_out_of_range_is_a_400(
    op: httpx.Client, number: str
) -> None:
    got = op.get("/process-instance", params={"variables": f"amount_eq_{number}"})
    message = _refused(got, "variables")
    assert "amount" in message


@pytest.mark.parametrize("number", ["1e999999", str(10**30)])
def test_a_number_in_a_variables_query_body_out_of_range_is_a_400(
    op: httpx.Client, number: str
) -> None:
    raw = _QUERY.replace("NUMBER", number)
    got = op.post("/process-instance", content=raw, headers={"Content-Type": "application/json"})
    message = _refused(got, "variables")
    assert "amount" in message


def test_a_number_of_thousands_of_digits_in_a_body_names_its_field(op: httpx.Client) -> None:
    raw = _QUERY.replace("NUMBER", "9" * 5000)
    got = op.post("/process-instance", content=raw, headers={"Content-Type": "application/json"})
    message = _refused(got, "variables[0].value")
    assert "digits" in message
