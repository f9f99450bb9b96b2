"""``/engine`` and ``/version``: one engine named ``default``, and bpm's own version."""

from __future__ import annotations

import pytest

from bpm import __version__
from bpm.states import Role
from tests.server.conftest import Server


@pytest.fixture(scope="module")
def roles(server: Server) -> Server:
    server.add("viewer", Role.VIEWER)
    server.add("worker", Role.WORKER)
    server.add("starter", Role.STARTER)
    return server


def test_engine_lists_the_default_engine(roles: Server) -> None:
    with roles.client("viewer") as c:
        got = c.get("/engine")
    assert got.status_code == 200 and got.json() == [{"name": "default"}]


def test_version_is_bpm_s_version(roles: Server) -> None:
    with roles.client("operator") as c:
        got = c.get("/version")
    assert got.status_code == 200 and got.json() == {"version": __version__}


def test_both_need_a_credential_that_may_read(roles: Server) -> None:
    for path in ("/engine", "/version"):
        with roles.client() as c:
            anonymous = c.get(path)
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"]
        for name in ("worker", "starter"):
            with roles.client(name) as c:
                refused = c.get(path)
            assert refused.status_code == 403, (path, name)
            assert refused.json()["type"] == "AuthorizationException"
