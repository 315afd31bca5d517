"""Tests for svcrest.dates: rest_parse_date, rest_get_date_with_gmt, resolve_timezone."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from svcrest.dates import resolve_timezone, rest_get_date_with_gmt, rest_parse_date

# 2017-01-16 11:30:00 read as UTC.
WALL_AS_UTC = 1484566200


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        pytest.param("2017-01-16T11:30:00-05:00", 1484584200, id="minus-hh-mm"),
        pytest.param("2017-01-16T11:30:00-05:30", 1484586000, id="minus-half-hour"),
        pytest.param("2017-01-16T11:30:00-05", 1484584200, id="minus-hh"),
        pytest.param("2017-01-16T11:30:00+05", 1484548200, id="plus-hh"),
        pytest.param("2017-01-16T11:30:00+05:30", 1484546400, id="plus-hh-mm"),
        pytest.param("2017-01-16T11:30:00-00", WALL_AS_UTC, id="minus-zero"),
        pytest.param("2017-01-16T11:30:00+00", WALL_AS_UTC, id="plus-zero"),
        pytest.param("2017-01-16T11:30:00Z", WALL_AS_UTC, id="zulu"),
        pytest.param("2017-01-16T11:30:00", WALL_AS_UTC, id="naive-is-utc"),
        pytest.param("2017-01-16t11:30:00", WALL_AS_UTC, id="lower-t"),
        pytest.param("2017-01-16 11:30:00", WALL_AS_UTC, id="space-separator"),
        pytest.param("2017-01-16T11:30:00.999999", WALL_AS_UTC, id="fraction-ignored"),
        pytest.param("2017-01-16T11:30:00.5-05:00", 1484584200, id="fraction-and-offset"),
        pytest.param("2017-01-16T11:30:00+23:59", 1484479860, id="largest-offset"),
        pytest.param("1970-01-01T00:00:00Z", 0, id="epoch"),
        pytest.param("1969-12-31T23:59:59Z", -1, id="before-epoch"),
        pytest.param("0001-01-01T00:00:00Z", -62135596800, id="year-1"),
        pytest.param("9999-12-31T23:59:59Z", 253402300799, id="year-9999"),
        pytest.param("9999-12-31T23:59:59-23:59", 253402387139, id="beyond-year-9999-utc"),
        pytest.param("2016-02-29T12:00:00Z", 1456747200, id="leap-day"),
    ],
)
def test_rest_parse_date_valid(date: str, expected: int) -> None:
    assert rest_parse_date(date) == expected


@pytest.mark.parametrize(
    "date",
    [
        pytest.param("2017-01-16", id="date-only"),
        pytest.param("2017-01-16T11:30", id="no-seconds"),
        pytest.param("2017-01-16T11:30:00z", id="lower-z"),
        pytest.param("2017-01-16T11:30:00-0530", id="offset-without-colon"),
        pytest.param("2017-01-16T11:30:00+05:30:00", id="offset-with-seconds"),
        pytest.param("2017-01-16T11:30:00+5", id="one-digit-offset"),
        pytest.param("2017/01/16T11:30:00", id="slashes"),
        pytest.param("2017-01-16T11:30:00.", id="empty-fraction"),
        pytest.param("2017-01-16T11:30:00\n", id="trailing-newline"),
        pytest.param(" 2017-01-16T11:30:00", id="leading-space"),
        pytest.param("2017-01-16  11:30:00", id="two-spaces"),
        pytest.param("2017-01-16X11:30:00", id="bad-separator"),
        pytest.param("17-01-16T11:30:00", id="two-digit-year"),
        pytest.param("\uff12017-01-16T11:30:00", id="non-ascii-digit"),
        pytest.param("abc", id="text"),
        pytest.param("", id="empty"),
        pytest.param("2017-13-16T11:30:00", id="month-13"),
        pytest.param("2017-00-16T11:30:00", id="month-0"),
        pytest.param("2017-01-32T11:30:00", id="day-32"),
        pytest.param("2017-02-30T11:30:00", id="february-30"),
        pytest.param("2017-02-29T11:30:00", id="february-29-non-leap"),
        pytest.param("2017-01-16T25:30:00", id="hour-25"),
        pytest.param("2017-01-16T24:00:00", id="hour-24"),
        pytest.param("2017-01-16T11:60:00", id="minute-60"),
        pytest.param("2017-01-16T11:30:60", id="second-60"),
        pytest.param("2017-01-16T11:30:00+24:00", id="offset-hour-24"),
        pytest.param("2017-01-16T11:30:00+05:60", id="offset-minute-60"),
        pytest.param("0000-01-01T00:00:00Z", id="year-0"),
    ],
)
def test_rest_parse_date_invalid(date: str) -> None:
    assert rest_parse_date(date) is False


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(None, id="none"),
        pytest.param(1484566200, id="int"),
        pytest.param(b"2017-01-16T11:30:00Z", id="bytes"),
        pytest.param(["2017-01-16T11:30:00Z"], id="list"),
    ],
)
def test_rest_parse_date_non_string_is_false(value: Any) -> None:
    assert rest_parse_date(value) is False


@pytest.mark.parametrize(
    ("date", "expected"),
    [
        pytest.param("2017-01-16T11:30:00-05:00", WALL_AS_UTC, id="minus-hh-mm"),
        pytest.param("2017-01-16T11:30:00-05:30", WALL_AS_UTC, id="minus-half-hour"),
        pytest.param("2017-01-16T11:30:00-05", WALL_AS_UTC, id="minus-hh"),
        pytest.param("2017-01-16T11:30:00+05", WALL_AS_UTC, id="plus-hh"),
        pytest.param("2017-01-16T11:30:00+05:30", WALL_AS_UTC, id="plus-hh-mm"),
        pytest.param("2017-01-16T11:30:00-00", WALL_AS_UTC, id="minus-zero"),
        pytest.param("2017-01-16T11:30:00+00", WALL_AS_UTC, id="plus-zero"),
        pytest.param("2017-01-16T11:30:00Z", WALL_AS_UTC, id="zulu"),
        pytest.param("2017-01-16T11:30:00", WALL_AS_UTC, id="naive"),
        pytest.param("2017-01-16T11:30:00-0530", WALL_AS_UTC, id="no-colon-replaced"),
        pytest.param("2017-01-16T11:30:00+99:99", WALL_AS_UTC, id="out-of-range-replaced"),
        pytest.param("2017-01-16T11:30:00.25+05:30", WALL_AS_UTC, id="fraction"),
    ],
)
def test_rest_parse_date_force_utc(date: str, expected: int) -> None:
    assert rest_parse_date(date, force_utc=True) == expected


@pytest.mark.parametrize(
    "date",
    [
        pytest.param("2017-01-16T11:30:00z", id="lower-z"),
        pytest.param("2017-01-16T11:30:00+05:30:00", id="offset-with-seconds"),
        pytest.param("2017-01-16", id="date-only"),
        pytest.param("2017-01-16T11:30:00-05:00\n", id="trailing-newline"),
    ],
)
def test_rest_parse_date_force_utc_still_rejects(date: str) -> None:
    assert rest_parse_date(date, force_utc=True) is False


@pytest.mark.parametrize(
    ("date", "force_utc", "timezone", "expected"),
    [
        pytest.param(
            "2017-01-16T11:30:00-05:00",
            False,
            "UTC",
            ("2017-01-16 16:30:00", "2017-01-16 16:30:00"),
            id="utc-site",
        ),
        pytest.param(
            "2017-01-16T11:30:00-05:00",
            True,
            "UTC",
            ("2017-01-16 11:30:00", "2017-01-16 11:30:00"),
            id="force-utc",
        ),
        pytest.param(
            "2017-01-16T11:30:00Z",
            False,
            "Asia/Kolkata",
            ("2017-01-16 17:00:00", "2017-01-16 11:30:00"),
            id="kolkata",
        ),
        pytest.param(
            "2017-01-16T11:30:00Z",
            False,
            "+05:30",
            ("2017-01-16 17:00:00", "2017-01-16 11:30:00"),
            id="fixed-plus-half-hour",
        ),
        pytest.param(
            "2017-01-16T11:30:00Z",
            False,
            "-08:00",
            ("2017-01-16 03:30:00", "2017-01-16 11:30:00"),
            id="fixed-minus",
        ),
        pytest.param(
            "2017-01-16T11:30:00Z",
            False,
            "+05",
            ("2017-01-16 16:30:00", "2017-01-16 11:30:00"),
            id="fixed-hours-only",
        ),
        pytest.param(
            "2021-03-14T06:59:59Z",
            False,
            "America/New_York",
            ("2021-03-14 01:59:59", "2021-03-14 06:59:59"),
            id="new-york-before-spring-forward",
        ),
        pytest.param(
            "2021-03-14T07:00:00Z",
            False,
            "America/New_York",
            ("2021-03-14 03:00:00", "2021-03-14 07:00:00"),
            id="new-york-after-spring-forward",
        ),
        pytest.param(
            "2021-11-07T05:30:00Z",
            False,
            "America/New_York",
            ("2021-11-07 01:30:00", "2021-11-07 05:30:00"),
            id="new-york-first-one-thirty",
        ),
        pytest.param(
            "2021-11-07T06:30:00Z",
            False,
            "America/New_York",
            ("2021-11-07 01:30:00", "2021-11-07 06:30:00"),
            id="new-york-second-one-thirty",
        ),
        pytest.param(
            "0001-01-01T05:00:00+05:00",
            False,
            "UTC",
            ("0001-01-01 00:00:00", "0001-01-01 00:00:00"),
            id="year-1-zero-padded",
        ),
        pytest.param(
            "1969-12-31T23:59:59",
            False,
            "UTC",
            ("1969-12-31 23:59:59", "1969-12-31 23:59:59"),
            id="negative-timestamp",
        ),
    ],
)
def test_rest_get_date_with_gmt(
    date: str, force_utc: bool, timezone: str, expected: tuple[str, str]
) -> None:
    assert rest_get_date_with_gmt(date, force_utc, timezone) == expected


@pytest.mark.parametrize(
    ("date", "timezone"),
    [
        pytest.param("not a date", "UTC", id="unparseable"),
        pytest.param("1970-01-01T00:00:00Z", "UTC", id="zero-is-empty"),
        pytest.param("1970-01-01T05:30:00+05:30", "UTC", id="zero-with-offset"),
        pytest.param("9999-12-31T23:59:59-05:00", "UTC", id="utc-after-year-9999"),
        pytest.param("0001-01-01T00:00:00+05:00", "UTC", id="utc-before-year-1"),
        pytest.param("9999-12-31T23:59:59Z", "Asia/Tokyo", id="local-after-year-9999"),
    ],
)
def test_rest_get_date_with_gmt_none(date: str, timezone: str) -> None:
    assert rest_get_date_with_gmt(date, timezone=timezone) is None


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        pytest.param("UTC", dt.timedelta(0), id="utc"),
        pytest.param("+05:30", dt.timedelta(hours=5, minutes=30), id="plus-hh-mm"),
        pytest.param("-08:00", dt.timedelta(hours=-8), id="minus-hh-mm"),
        pytest.param("+05", dt.timedelta(hours=5), id="plus-hh"),
        pytest.param("-0330", dt.timedelta(hours=-3, minutes=-30), id="no-colon"),
        pytest.param("+23:59", dt.timedelta(hours=23, minutes=59), id="largest"),
        pytest.param("Asia/Kolkata", dt.timedelta(hours=5, minutes=30), id="iana"),
    ],
)
def test_resolve_timezone_offsets(name: str, offset: dt.timedelta) -> None:
    moment = dt.datetime(2017, 1, 16, 11, 30)
    assert resolve_timezone(name).utcoffset(moment) == offset


def test_resolve_timezone_iana_has_dst() -> None:
    zone = resolve_timezone("America/New_York")
    assert zone.utcoffset(dt.datetime(2021, 1, 15)) == dt.timedelta(hours=-5)
    assert zone.utcoffset(dt.datetime(2021, 7, 15)) == dt.timedelta(hours=-4)


def test_resolve_timezone_is_cached() -> None:
    assert resolve_timezone("Europe/Paris") is resolve_timezone("Europe/Paris")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("Mars/Olympus_Mons", id="unknown-zone"),
        pytest.param("America", id="directory"),
        pytest.param("/etc/passwd", id="absolute-path"),
        pytest.param("../zoneinfo/UTC", id="relative-escape"),
        pytest.param("+24:00", id="offset-hour-24"),
        pytest.param("+05:60", id="offset-minute-60"),
        pytest.param("+5", id="one-digit-offset"),
        pytest.param("utc+5", id="utc-plus"),
    ],
)
def test_resolve_timezone_invalid(name: str) -> None:
    with pytest.raises(ValueError, match="imezone"):
        resolve_timezone(name)


def test_rest_get_date_with_gmt_invalid_timezone_raises() -> None:
    with pytest.raises(ValueError, match="Unknown timezone 'Nowhere/Land'"):
        rest_get_date_with_gmt("2017-01-16T11:30:00Z", timezone="Nowhere/Land")


_EPOCH = dt.datetime(1970, 1, 1)
_WALL_TIMES = st.datetimes(
    min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59)
).map(lambda moment: moment.replace(microsecond=0))


def _wall(moment: dt.datetime, separator: str = "T") -> str:
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}{separator}"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )


@given(
    wall=_WALL_TIMES, offset_minutes=st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59)
)
def test_rest_parse_date_round_trips_offsets(wall: dt.datetime, offset_minutes: int) -> None:
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    text = f"{_wall(wall)}{sign}{hours:02d}:{minutes:02d}"
    expected = (wall - _EPOCH) // dt.timedelta(seconds=1) - offset_minutes * 60
    aware = wall.replace(tzinfo=dt.timezone(dt.timedelta(minutes=offset_minutes)))
    assert expected == (aware - _EPOCH.replace(tzinfo=dt.UTC)) // dt.timedelta(seconds=1)
    assert rest_parse_date(text) == expected


@given(
    wall=_WALL_TIMES, separator=st.sampled_from(["T", "t", " "]), zone=st.sampled_from(["", "Z"])
)
def test_rest_parse_date_round_trips_naive_as_utc(
    wall: dt.datetime, separator: str, zone: str
) -> None:
    expected = (wall - _EPOCH) // dt.timedelta(seconds=1)
    assert rest_parse_date(_wall(wall, separator) + zone) == expected


@given(text=st.text(), force_utc=st.booleans())
def test_rest_parse_date_never_raises(text: str, force_utc: bool) -> None:
    result = rest_parse_date(text, force_utc)
    assert result is False or (type(result) is int)


@given(
    text=st.from_regex(
        r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?"
        r"(Z|[+-][0-9]{2}(:[0-9]{2})?)?\Z"
    ),
    force_utc=st.booleans(),
)
def test_rest_parse_date_shaped_text_never_raises(text: str, force_utc: bool) -> None:
    result = rest_parse_date(text, force_utc)
    assert result is False or (type(result) is int)
