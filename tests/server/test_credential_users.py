"""``bpm credentials add --user --group``: the user a credential acts as on the tasklist and
that user's groups, kept in its row and carried by the server's principal."""

from __future__ import annotations

from bpm import credentials
from bpm.store import Database
from bpm_server.auth import Principal
from tests.server.test_cli import _bpm


def test_a_credential_names_its_user_and_groups(pg_url: str) -> None:
    added = _bpm(
        pg_url,
        *("credentials", "add", "desk", "--role", "starter"),
        *("--user", "anna", "--group", "clerks", "--group", "sales"),
    )
    assert added.returncode == 0, added.stderr
    plain = _bpm(pg_url, "credentials", "add", "bob", "--role", "viewer")
    assert plain.returncode == 0, plain.stderr
    listed = _bpm(pg_url, "credentials", "list").stdout
    assert "anna" in listed and "clerks, sales" in listed
    db = Database(pg_url)
    try:
        desk, bob = credentials.lookup(db, "desk"), credentials.lookup(db, "bob")
    finally:
        db.dispose()
    assert desk is not None and bob is not None
    assert (desk.user, desk.groups) == ("anna", ("clerks", "sales"))
    assert (bob.user, bob.groups) == ("bob", ())  # the user defaults to the name
    principal = Principal.of(desk)
    assert principal.user == "anna" and principal.groups == frozenset({"clerks", "sales"})


def test_an_empty_user_or_group_is_refused(pg_url: str) -> None:
    done = _bpm(pg_url, "credentials", "add", "x", "--role", "starter", "--group", " ")
    assert done.returncode == 1 and "non-empty" in done.stderr
