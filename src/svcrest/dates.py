"""RFC 3339 timestamps: parsing to Unix seconds and storage strings, as WordPress's
``rest_parse_date`` and ``rest_get_date_with_gmt`` do.

``rest_parse_date`` accepts exactly WordPress's RFC 3339 shape (``YYYY-MM-DD``, ``T``/``t``/space,
``HH:MM:SS``, an optional ignored fraction, then ``Z`` or an offset ``±HH`` / ``±HH:MM``) and
returns an integer Unix timestamp, or ``False``. ``rest_get_date_with_gmt`` turns a timestamp
string into the ``(local, utc)`` pair of ``Y-m-d H:i:s`` strings, local being the given timezone.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import zoneinfo
from typing import Literal

__all__ = ["resolve_timezone", "rest_get_date_with_gmt", "rest_parse_date"]

_DATE_RE = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})[Tt ]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})(?:\.[0-9]+)?"
    r"(?:Z|(?P<sign>[+-])(?P<off_hour>[0-9]{2})(?::(?P<off_minute>[0-9]{2}))?)?"
)
# A trailing numeric offset, replaced by "+00:00" when force_utc is set (as WordPress does).
_TRAILING_OFFSET_RE = re.compile(r"[+-][0-9]+(?::[0-9]+)?\Z")
# Fixed-offset timezone names: "+05", "+05:30", "-0800".
_FIXED_OFFSET_RE = re.compile(r"(?P<sign>[+-])(?P<hour>[0-9]{2})(?::?(?P<minute>[0-9]{2}))?")
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_SECONDS_PER_DAY = 86_400
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def rest_parse_date(date: str, force_utc: bool = False) -> int | Literal[False]:
    """Parse an RFC 3339 timestamp into a Unix timestamp (as WordPress's ``rest_parse_date``).

    A timestamp without a zone is read as UTC. With ``force_utc`` a trailing numeric offset
    (``+05``, ``-05:30``, ``+0530`` ...) is replaced by ``+00:00`` first, so the wall time is
    read as UTC. Returns ``False`` when the string does not have the accepted shape, when a
    field is out of range (month 13, February 30, hour 24, offset hour 24 ...) or when the
    value is not a string; never raises.
    """
    if not isinstance(date, str):
        return False
    if force_utc:
        date = _TRAILING_OFFSET_RE.sub("+00:00", date, count=1)
    match = _DATE_RE.fullmatch(date)
    if match is None:
        return False
    try:
        day = _dt.date(int(match["year"]), int(match["month"]), int(match["day"]))
        clock = _dt.time(int(match["hour"]), int(match["minute"]), int(match["second"]))
    except ValueError:
        return False
    offset = 0
    if match["sign"] is not None:
        off_hour = int(match["off_hour"])
        off_minute = int(match["off_minute"] or 0)
        if off_hour > 23 or off_minute > 59:
            return False
        offset = off_hour * 3600 + off_minute * 60
        if match["sign"] == "-":
            offset = -offset
    seconds_of_day = clock.hour * 3600 + clock.minute * 60 + clock.second
    return (day.toordinal() - _EPOCH_ORDINAL) * _SECONDS_PER_DAY + seconds_of_day - offset


@functools.lru_cache(maxsize=64)
def resolve_timezone(name: str) -> _dt.tzinfo:
    """Resolve a site timezone setting into a ``tzinfo``.

    Accepts ``"UTC"``, a fixed offset (``"+05:30"``, ``"-08:00"``, ``"+05"``, ``"-0800"``) or an
    IANA name (``"Europe/Paris"``, with its daylight-saving rules). Raises ``ValueError`` for
    anything else.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"Invalid timezone {name!r}: expected a non-empty string.")
    if name == "UTC":
        return _dt.UTC
    fixed = _FIXED_OFFSET_RE.fullmatch(name)
    if fixed is not None:
        hours, minutes = int(fixed["hour"]), int(fixed["minute"] or 0)
        if hours > 23 or minutes > 59:
            raise ValueError(f"Invalid timezone {name!r}: offsets range from -23:59 to +23:59.")
        delta = _dt.timedelta(hours=hours, minutes=minutes)
        return _dt.timezone(-delta if fixed["sign"] == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(
            f"Unknown timezone {name!r}: expected 'UTC', an IANA name such as "
            "'Europe/Paris' or a fixed offset such as '+05:30'."
        ) from exc


def _storage_format(moment: _dt.datetime) -> str:
    """``Y-m-d H:i:s`` with a four-digit year (``strftime('%Y')`` does not pad on glibc)."""
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )


def rest_get_date_with_gmt(
    date: str, force_utc: bool = False, timezone: str = "UTC"
) -> tuple[str, str] | None:
    """Parse a timestamp into ``(local, utc)`` datetime strings in ``Y-m-d H:i:s`` form.

    The UTC string is the parsed timestamp formatted in UTC; the local string is that instant
    in ``timezone`` (see ``resolve_timezone``; an invalid name raises ``ValueError``). Returns
    ``None`` when parsing fails, when the timestamp is 0 (WordPress's empty value) or when the
    instant cannot be shown with a four-digit year.
    """
    zone = resolve_timezone(timezone)
    timestamp = rest_parse_date(date, force_utc)
    if timestamp is False or timestamp == 0:
        return None
    try:
        utc = _EPOCH + _dt.timedelta(seconds=timestamp)
        local = utc.astimezone(zone)
    except OverflowError:
        return None
    return _storage_format(local), _storage_format(utc)
