"""How long a text a client may store can be, defined once for the engine and the server.

A key is stored in a unique index, and PostgreSQL refuses an index row past about 2.7 KB:
a longer key would fail inside the database, long after the request was taken. So every
name or key is bounded here, well under that, and checked where it enters (the engine's
operations, the server's bodies), with an error naming the field and quoting only a short
prefix of the value.
"""

from __future__ import annotations

from bpm.errors import InputRefused

#: Names and keys: worker ids, business keys, idempotency keys, message names, topics.
NAME_MAX = 255
#: A failure's or BPMN error's message, shown in lists and incidents.
ERROR_MESSAGE_MAX = 4000
#: A failure's details (a stack trace), shown on request only.
ERROR_DETAILS_MAX = 512 * 1024
#: A deployment file bpm stores without reading it (a form, a diagram image, a script); the
#: BPMN and DMN files are bounded by the size of the deployment's body instead.
RESOURCE_MAX_BYTES = 4 * 1024 * 1024
#: How much of an offending value an error message quotes.
QUOTED_MAX = 40


def quoted(value: object, limit: int = QUOTED_MAX) -> str:
    """``value`` as ``repr`` shows it, cut to its first ``limit`` characters with its length
    after it: an error about a huge value must not be huge itself."""
    if isinstance(value, int) and value.bit_length() > 4 * limit:
        # Converting it to digits could take long, or be refused by Python itself.
        return f"an integer of {value.bit_length()} bits"
    if not isinstance(value, str):
        return shortened(repr(value), limit)
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


def shortened(text: str, limit: int) -> str:
    """``text`` itself when it has at most ``limit`` characters, else its first ``limit``
    and its length: for messages and log lines that show a client's text unquoted."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def check_text(value: object, field: str, limit: int = NAME_MAX) -> None:
    """Refuse a text the database would refuse or should not hold: longer than ``limit``
    characters, or holding a NUL (PostgreSQL cannot store one). None passes."""
    if value is None:
        return
    if not isinstance(value, str):
        raise InputRefused(f"{field} must be a string, got {quoted(value)}", field)
    if len(value) > limit:
        raise InputRefused(
            f"{field} may be at most {limit} characters long, got {quoted(value)}", field
        )
    if "\x00" in value:
        raise InputRefused(
            f"{field} may not contain the NUL character (\\u0000), got {quoted(value)}", field
        )
