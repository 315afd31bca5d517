"""The ``svc_logged_in`` auth cookie: its format, its HMAC and the Cookie header parser.

Value: ``login|expiration|token|hmac`` where

- ``login`` is the user's login percent-encoded as UTF-8 (``urllib.parse.quote`` with only
  ``@`` kept), so every cookie value is printable ASCII without ``;``, ``,``, spaces or ``|``;
- ``expiration`` is the Unix time (decimal digits) after which the cookie is refused;
- ``token`` is the session token (``[A-Za-z0-9_-]``, 43 characters when we issue it);
- ``hmac`` is 64 lower-case hex characters:

  ``key  = HMAC-SHA256(secret, b"auth|" + login + b"|" + fragment + b"|" + expiration
  + b"|" + token)``
  ``hmac = HMAC-SHA256(key, login + b"|" + expiration + b"|" + token)``

  with ``login`` exactly as it appears in the cookie and ``fragment`` =
  ``password_fragment(<the user's current password hash>)``. A password change therefore
  voids every cookie of that user, and the ``b"auth|"`` prefix keeps this key apart from the
  nonce key (``HMAC(secret, b"nonce")``).
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

__all__ = [
    "COOKIE_NAME",
    "COOKIE_SCHEME",
    "MAX_COOKIE_LENGTH",
    "CookieElements",
    "cookie_hmac",
    "encode_login",
    "format_auth_cookie",
    "parse_auth_cookie",
    "parse_cookie_header",
]

#: The cookie's name.
COOKIE_NAME = "svc_logged_in"
#: The scheme reported to the ``auth_cookie_*`` actions (WordPress's name for this cookie).
COOKIE_SCHEME = "logged_in"
#: Longer values are malformed without further look (browsers cap a cookie at 4096 bytes).
MAX_COOKIE_LENGTH = 4096

# Printable ASCII without space, DQUOTE, comma, semicolon or backslash (RFC 6265 cookie-octet).
_COOKIE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+")
_EXPIRATION = re.compile(r"[0-9]{1,12}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")
_HMAC = re.compile(r"[0-9a-f]{64}")
_LOGIN_FIELD = re.compile(r"[^|]{1,720}")


@dataclass(frozen=True, slots=True)
class CookieElements:
    """The four fields of a well-formed auth cookie.

    ``login_field`` is the login as it appears in the cookie (percent-encoded); ``login`` is it
    decoded. ``expiration_field`` keeps the digits exactly as sent, because the HMAC covers them.
    """

    login_field: str
    login: str
    expiration_field: str
    token: str
    hmac: str

    @property
    def expiration(self) -> int:
        """The expiration as Unix seconds."""
        return int(self.expiration_field)

    def as_dict(self) -> dict[str, str]:
        """The dict passed to the ``auth_cookie_*`` actions (WordPress's element keys)."""
        return {
            "username": self.login,
            "expiration": self.expiration_field,
            "token": self.token,
            "hmac": self.hmac,
            "scheme": COOKIE_SCHEME,
        }


def encode_login(login: str) -> str:
    """``login`` as it is written in the cookie (UTF-8, percent-encoded, ``@`` kept)."""
    return quote(login, safe="@")


def _decode_login(field: str) -> str | None:
    try:
        login = unquote(field, errors="strict")
    except UnicodeDecodeError:
        return None
    return login or None


def parse_auth_cookie(value: object) -> CookieElements | None:
    """The fields of a well-formed cookie value, or None when it is malformed.

    Malformed: not a str, empty, longer than 4096 characters, not printable cookie-safe ASCII,
    not exactly four ``|``-separated fields, a login that does not decode as UTF-8, an
    expiration that is not 1 to 12 ASCII digits, a token outside ``[A-Za-z0-9_-]{1,128}`` or an
    hmac that is not 64 lower-case hex characters. Never raises.
    """
    if not isinstance(value, str) or not 0 < len(value) <= MAX_COOKIE_LENGTH:
        return None
    if _COOKIE_VALUE.fullmatch(value) is None:
        return None
    fields = value.split("|")
    if len(fields) != 4:
        return None
    login_field, expiration_field, token, mac = fields
    if (
        _LOGIN_FIELD.fullmatch(login_field) is None
        or _EXPIRATION.fullmatch(expiration_field) is None
        or _TOKEN.fullmatch(token) is None
        or _HMAC.fullmatch(mac) is None
    ):
        return None
    login = _decode_login(login_field)
    if login is None:
        return None
    return CookieElements(login_field, login, expiration_field, token, mac)


def cookie_hmac(
    secret: bytes, login_field: str, expiration_field: str, token: str, fragment: str
) -> str:
    """The cookie's ``hmac`` field (64 lower-case hex characters); see the module docstring."""
    login_b = login_field.encode("ascii")
    expiration_b = expiration_field.encode("ascii")
    token_b = token.encode("ascii")
    fragment_b = fragment.encode("utf-8", "surrogatepass")
    # PERF: hmac.digest is the one-shot C implementation (~0.5 µs against ~3 µs for hmac.new).
    key = hmac.digest(
        secret,
        b"auth|" + login_b + b"|" + fragment_b + b"|" + expiration_b + b"|" + token_b,
        "sha256",
    )
    return hmac.digest(key, login_b + b"|" + expiration_b + b"|" + token_b, "sha256").hex()


def format_auth_cookie(
    secret: bytes, login: str, expiration: int, token: str, fragment: str
) -> str:
    """A signed cookie value for ``login`` (decoded), valid until ``expiration``."""
    login_field = encode_login(login)
    expiration_field = str(int(expiration))
    mac = cookie_hmac(secret, login_field, expiration_field, token, fragment)
    return f"{login_field}|{expiration_field}|{token}|{mac}"


def parse_cookie_header(header_value: object) -> dict[str, str]:
    """The cookies of a ``Cookie`` request header, name → raw value; never raises.

    Pairs are separated by ``;``, or by ``,`` (a server that joins several ``Cookie`` lines
    with ", ", as some WSGI servers do; RFC 6265 cookie values never hold a comma); names and
    values are stripped of spaces and tabs; one pair of
    surrounding double quotes is removed from a value; pairs without ``=`` or with an empty name
    are skipped; values are not percent-decoded. The first occurrence of a name wins.
    SECURITY: names are matched exactly (case-sensitive, whole name), so ``xsvc_logged_in`` or
    ``svc_logged_in2`` never stands in for ``svc_logged_in``.
    """
    cookies: dict[str, str] = {}
    if not isinstance(header_value, str):
        return cookies
    for pair in header_value.replace(",", ";").split(";"):
        name, sep, value = pair.partition("=")
        if not sep:
            continue
        name = name.strip(" \t")
        if not name or name in cookies:
            continue
        value = value.strip(" \t")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        cookies[name] = value
    return cookies
