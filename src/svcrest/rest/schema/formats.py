"""The ``format`` keyword (date-time, email, uri, uuid, ip, hex-color) and the text
sanitisers WordPress applies with it."""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from svcrest.dates import rest_parse_date
from svcrest.http.errors import RestError
from svcrest.rest.schema.common import param_error

__all__ = ["FORMAT_SANITIZERS", "check_format"]

_HEX_COLOR_RE = re.compile(r"#(?:[0-9A-Fa-f]{3}){1,2}")
_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_EMAIL_LOCAL_RE = re.compile(r"[a-zA-Z0-9!#$%&'*+/=?^_`{|}~.-]+")
_EMAIL_LABEL_RE = re.compile(r"[a-zA-Z0-9-]+")
_URI_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\x7f]*")
_URL_DISALLOWED_RE = re.compile(r"[^a-zA-Z0-9\-~+_.?#=!&;,/:%@$|*'()\[\]\x80-\U0010ffff]")
_URL_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_URL_PROTOCOLS = frozenset(
    {
        "http", "https", "ftp", "ftps", "mailto", "news", "irc", "irc6", "ircs", "gopher", "nntp",
        "feed", "telnet", "mms", "rtsp", "sms", "svn", "tel", "fax", "xmpp", "webcal", "urn",
    }
)  # fmt: skip
_TAG_RE = re.compile(r"<[^>]*>")
_OCTET_RE = re.compile(r"%[a-fA-F0-9]{2}")


def _is_email(text: str) -> bool:
    """WordPress's ``is_email`` rules."""
    if len(text) < 6 or text.find("@", 1) == -1:
        return False
    local, domain = text.split("@", 1)
    if _EMAIL_LOCAL_RE.fullmatch(local) is None:
        return False
    if ".." in domain or domain.strip(" \t\n\r\0\x0b.") != domain:
        return False
    labels = domain.split(".")
    return len(labels) >= 2 and all(
        _EMAIL_LABEL_RE.fullmatch(label) is not None and label.strip("-") == label
        for label in labels
    )


def _is_ip(text: str) -> bool:
    parts = text.split(".")
    if len(parts) == 4 and all(
        0 < len(part) <= 3 and part.isascii() and part.isdigit() and int(part) <= 255
        for part in parts
    ):
        return True
    if "%" in text:  # no IPv6 zone identifiers
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _is_uri(text: str) -> bool:
    if _URI_RE.fullmatch(text) is None:
        return False
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return False
    return parts.scheme.lower() not in ("http", "https", "ftp", "ws", "wss") or bool(parts.netloc)


def _is_date_time(text: str) -> bool:
    return rest_parse_date(text) is not False


def _is_hex_color(text: str) -> bool:
    return _HEX_COLOR_RE.fullmatch(text) is not None


def _is_uuid(text: str) -> bool:
    return _UUID_RE.fullmatch(text) is not None


#: format -> (check, error code, message template).
_FORMATS: dict[str, tuple[Callable[[str], bool], str, str]] = {
    "date-time": (_is_date_time, "rest_invalid_date", "Invalid date."),
    "email": (_is_email, "rest_invalid_email", "Invalid email address."),
    "hex-color": (_is_hex_color, "rest_invalid_hex_color", "Invalid hex color."),
    "ip": (_is_ip, "rest_invalid_ip", "{param} is not a valid IP address."),
    "uri": (_is_uri, "rest_invalid_uri", "{param} is not a valid URI."),
    "uuid": (_is_uuid, "rest_invalid_uuid", "{param} is not a valid UUID."),
}


def check_format(value: Any, fmt: Any, param: str) -> RestError | None:
    """WordPress's error when ``value`` breaks ``format`` ``fmt`` (``rest_invalid_email``,
    ``rest_invalid_uuid``…); None when it passes or the format is not one WordPress checks."""
    entry = _FORMATS.get(fmt) if isinstance(fmt, str) else None
    if entry is None:
        return None
    check, code, message = entry
    if isinstance(value, str) and check(value):
        return None
    return param_error(code, message.format(param=param), param)


def _sanitize_text_field(text: str, keep_newlines: bool = False) -> str:
    """A light ``sanitize_text_field``: drop tags and %XX octets, collapse whitespace, trim."""
    text = _TAG_RE.sub("", text)
    text = re.sub(r"[\t ]+" if keep_newlines else r"[\r\n\t ]+", " ", text).strip()
    if _OCTET_RE.search(text):
        while _OCTET_RE.search(text):
            text = _OCTET_RE.sub("", text)
        text = re.sub(r" +", " ", text).strip()
    return text


def _sanitize_url(text: str) -> str:
    """A light ``esc_url_raw``: allowed characters and protocols only, ``http://`` added."""
    text = _URL_DISALLOWED_RE.sub("", text.strip().replace(" ", "%20"))
    if not text:
        return ""
    scheme = _URL_SCHEME_RE.match(text)
    if scheme is not None:
        return text if scheme.group(1).lower() in _URL_PROTOCOLS else ""
    if ":" not in text and text[0] not in "/#?" and not re.match(r"[a-z0-9-]+?\.php", text, re.I):
        return "http://" + text
    return text


#: The sanitiser WordPress applies to a string with each ``format``.
FORMAT_SANITIZERS: dict[str, Callable[[str], str]] = {
    "hex-color": lambda text: text if _is_hex_color(text) else "",
    "date-time": _sanitize_text_field,
    "email": _sanitize_text_field,
    "ip": _sanitize_text_field,
    "uuid": _sanitize_text_field,
    "text-field": _sanitize_text_field,
    "textarea-field": lambda text: _sanitize_text_field(text, keep_newlines=True),
    "uri": _sanitize_url,
}
