"""Timer cycles: ISO 8601 repeating intervals and Quartz cron expressions, and the rule that
a daylight-saving change neither skips nor doubles a cron tick."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bpm.definitions.cycles import parse_cycle
from bpm.errors import InvalidDefinition

BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def ticks(source: str, after: datetime, n: int, zone: ZoneInfo | None = None) -> list[datetime]:
    cycle = parse_cycle(source, where="timer 't'", element="t")
    out: list[datetime] = []
    at = after
    for fired in range(n):
        nxt = cycle.next_after(at, armed_at=after, fired=fired, zone=zone or UTC)
        if nxt is None:
            break
        out.append(nxt)
        at = nxt
    return out


def test_an_iso_cycle_counts_from_when_it_was_armed_and_stops_after_its_repeats() -> None:
    assert ticks("R3/PT10M", T0, 5) == [T0 + timedelta(minutes=m) for m in (10, 20, 30)]


def test_an_iso_cycle_with_a_start_fires_at_the_start_and_for_ever() -> None:
    start = datetime(2026, 1, 2, tzinfo=UTC)
    assert ticks("R/2026-01-02T00:00:00Z/P1D", T0, 3) == [
        start,
        start + timedelta(days=1),
        start + timedelta(days=2),
    ]


def test_an_iso_cycle_with_an_end_stops_before_it() -> None:
    assert ticks("R/PT1H/2026-01-01T12:00:00Z", T0, 10) == [T0 + timedelta(hours=h) for h in (1, 2)]


def test_after_an_outage_the_next_tick_is_counted_from_now_not_from_the_missed_ones() -> None:
    cycle = parse_cycle("R/PT10M", where="w", element=None)
    late = T0 + timedelta(hours=5, minutes=3)
    assert cycle.next_after(late, armed_at=T0, fired=1) == T0 + timedelta(hours=5, minutes=10)


def test_quartz_cron_with_seconds_and_question_mark() -> None:
    assert ticks("0 0/15 * * * ?", T0, 3) == [T0 + timedelta(minutes=m) for m in (15, 30, 45)]


def test_quartz_day_of_week_numbers_start_at_sunday_one() -> None:
    # 6#3 is the third Friday in Quartz; 2026-01-16 is the third Friday of January.
    (first,) = ticks("0 0 10 ? * 6#3", T0, 1)
    assert first == datetime(2026, 1, 16, 10, tzinfo=UTC)
    (monday,) = ticks("0 0 10 ? * MON", T0, 1)
    assert monday.weekday() == 0
    (sunday,) = ticks("0 0 10 ? * 1", T0, 1)
    assert sunday.weekday() == 6


def test_spring_forward_does_not_skip_a_daily_tick_in_the_missing_hour() -> None:
    before = datetime(2026, 3, 28, 12, tzinfo=BERLIN)
    got = [t.astimezone(BERLIN) for t in ticks("0 30 2 * * ?", before, 3, BERLIN)]
    days = [t.date().day for t in got]
    assert days == [29, 30, 31]  # the 29th has no 02:30: it fires at 03:00, not never
    assert (got[0].hour, got[0].minute) == (3, 0)
    assert [(t.hour, t.minute) for t in got[1:]] == [(2, 30), (2, 30)]


def test_fall_back_does_not_double_a_daily_tick_in_the_repeated_hour() -> None:
    before = datetime(2026, 10, 24, 12, tzinfo=BERLIN)
    got = [t.astimezone(BERLIN) for t in ticks("0 30 2 * * ?", before, 3, BERLIN)]
    assert [t.date().day for t in got] == [25, 26, 27]


def test_fall_back_fires_each_half_hour_of_the_wall_clock_once() -> None:
    before = datetime(2026, 10, 25, 1, 40, tzinfo=BERLIN)
    got = [t.astimezone(BERLIN) for t in ticks("0 0/30 * * * ?", before, 4, BERLIN)]
    walls = [t.strftime("%H:%M") for t in got]
    assert walls == ["02:00", "02:30", "03:00", "03:30"]
    assert len(set(got)) == 4


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("R3/PT0S", "zero seconds"),
        ("R3/P1M", "years or months"),
        ("Rx/PT1M", "repeating interval"),
        ("R/yesterday/PT1M", "not an ISO 8601 instant"),
        ("0 0 * *", "neither"),
        ("0 0 25 * * ?", "not a cron expression"),
    ],
)
def test_a_bad_cycle_names_itself_and_the_timer(source: str, says: str) -> None:
    with pytest.raises(InvalidDefinition) as caught:
        parse_cycle(source, where="timer 't'", element="t")
    assert says in str(caught.value) and "timer 't'" in str(caught.value)
    assert caught.value.element == "t"


def test_a_date_that_is_a_duration_is_that_long_from_now() -> None:
    """As Camunda 7's due-date calendar reads a timeDate."""
    from bpm.definitions.timers import parse_timer

    literal = parse_timer({"date": "PT5M"}, "timer 't'", "t")
    assert literal.fire_at(T0, {}) == T0 + timedelta(minutes=5)
    expression = parse_timer({"date": "${due}"}, "timer 't'", "t")
    assert expression.fire_at(T0, {"due": "P1D"}) == T0 + timedelta(days=1)
    assert expression.fire_at(T0, {"due": "2026-02-01T00:00:00Z"}) == datetime(
        2026, 2, 1, tzinfo=UTC
    )
