"""``/user/{id}/profile`` and ``/identity/groups`` against a real server: the users and groups
the credentials name; a caller reads its own, a reader anyone's; an unknown user is a 404."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bpm import credentials
from bpm.states import Role
from tests.server.conftest import Server


@pytest.fixture(scope="module")
def people(server: Server) -> Server:
    now = datetime.now(UTC)
    for name, user, groups in (
        ("ann-cred", "ann", ("clerks", "managers")),
        ("bob-cred", "bob", ("clerks",)),
        ("cid-cred", None, ("auditors",)),
    ):
        server.secrets[name] = credentials.add(
            server.db, name, Role.STARTER, now, user=user, groups=groups
        )
    server.add("viewer", Role.VIEWER)
    return server


def test_a_users_profile_and_groups(people: Server) -> None:
    with people.client("ann-cred") as c:
        assert c.get("/user/ann/profile").json() == {
            "id": "ann", "firstName": None, "lastName": None, "email": None,
        }  # fmt: skip
        found = c.get("/identity/groups", params={"userId": "ann"}).json()
        assert found["groups"] == [
            {"id": "clerks", "name": "clerks"},
            {"id": "managers", "name": "managers"},
        ]
        assert [u["id"] for u in found["groupUsers"]] == ["ann", "bob"]
        # A starter reads its own user only.
        assert c.get("/user/bob/profile").status_code == 403
        assert c.get("/identity/groups", params={"userId": "bob"}).status_code == 403
        assert c.get("/identity/groups").status_code == 400
    with people.client("viewer") as c:
        assert c.get("/user/bob/profile").json()["id"] == "bob"
        # A credential without --user is the user of its own name.
        cid = c.get("/identity/groups", params={"userId": "cid-cred"}).json()
        assert cid["groups"] == [{"id": "auditors", "name": "auditors"}]
        assert c.get("/user/nobody/profile").status_code == 404
    with people.client() as anonymous:
        assert anonymous.get("/user/ann/profile").status_code == 401
