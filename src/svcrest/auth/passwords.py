"""Password hashing with scrypt (memory-hard, per-password random salt).

Encoding: ``scrypt$<n>$<r>$<p>$<salt, base64>$<hash, base64>`` (standard base64 with padding,
16-byte salt, 32-byte hash), e.g. ``scrypt$16384$8$1$…$…``. The parameters travel with the hash,
so changing the defaults later keeps old hashes verifiable.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

__all__ = [
    "APP_PASSWORD_ALPHABET",
    "APP_PASSWORD_LENGTH",
    "DEFAULT_PARAMS",
    "ScryptParams",
    "generate_application_password",
    "hash_application_password",
    "hash_password",
    "password_fragment",
    "unmatchable_hash",
    "verify_password",
]

_SCHEME = "scrypt"
_SALT_BYTES = 16
_HASH_BYTES = 32
# SECURITY: bounds on parameters read back from an encoding, so a corrupted or planted hash
# cannot make verification allocate gigabytes or spin for minutes.
_MAX_MEMORY = 64 * 1024 * 1024  # bytes scrypt may use: 128 * n * r * p-ish
_MAX_N = 2**20
_MAX_R = 32
_MAX_P = 16
_DIGITS = re.compile(r"[0-9]{1,8}")
_B64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_FRAGMENT_LENGTH = 8


def _valid_params(n: int, r: int, p: int) -> bool:
    return (
        2 <= n <= _MAX_N
        and n & (n - 1) == 0
        and 1 <= r <= _MAX_R
        and 1 <= p <= _MAX_P
        and 128 * n * r <= _MAX_MEMORY // 2
    )


@dataclass(frozen=True, slots=True)
class ScryptParams:
    """scrypt cost parameters. The default (n=2**14, r=8, p=1) uses 16 MiB and ~50 ms.

    Smaller values exist for test suites only; production code keeps the default.
    """

    n: int = 2**14
    r: int = 8
    p: int = 1

    def __post_init__(self) -> None:
        if not _valid_params(self.n, self.r, self.p):
            raise ValueError(
                f"invalid scrypt parameters n={self.n}, r={self.r}, p={self.p}"
                f" (n a power of two in 2..{_MAX_N}, 1 <= r <= {_MAX_R}, 1 <= p <= {_MAX_P})"
            )


#: The production parameters.
DEFAULT_PARAMS = ScryptParams()


def _secret_bytes(password: str) -> bytes:
    # surrogatepass: every Python str encodes, so hashing and verifying never fail on input.
    return password.encode("utf-8", "surrogatepass")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(
        _secret_bytes(password), salt=salt, n=n, r=r, p=p, maxmem=_MAX_MEMORY, dklen=length
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, params: ScryptParams = DEFAULT_PARAMS) -> str:
    """The encoded scrypt hash of ``password`` with a fresh 16-byte random salt."""
    if not isinstance(password, str):
        raise TypeError("password must be a str")
    salt = secrets.token_bytes(_SALT_BYTES)
    digest = _scrypt(password, salt, params.n, params.r, params.p, _HASH_BYTES)
    return f"{_SCHEME}${params.n}${params.r}${params.p}${_b64(salt)}${_b64(digest)}"


def unmatchable_hash(params: ScryptParams = DEFAULT_PARAMS) -> str:
    """An encoding in the form of :func:`hash_password`'s, with ``params``, that no password
    matches (its salt and digest are random bytes; no scrypt run makes it): verifying against
    it costs what verifying against a real hash does."""
    salt, digest = secrets.token_bytes(_SALT_BYTES), secrets.token_bytes(_HASH_BYTES)
    return f"{_SCHEME}${params.n}${params.r}${params.p}${_b64(salt)}${_b64(digest)}"


def _decode(encoded: str) -> tuple[int, int, int, bytes, bytes] | None:
    """(n, r, p, salt, hash) of a well-formed encoding, else None."""
    if not isinstance(encoded, str) or len(encoded) > 512 or not encoded.isascii():
        return None
    parts = encoded.split("$")
    if len(parts) != 6 or parts[0] != _SCHEME:
        return None
    if not all(_DIGITS.fullmatch(part) for part in parts[1:4]):
        return None
    n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
    if not _valid_params(n, r, p):
        return None
    if not (_B64.fullmatch(parts[4]) and _B64.fullmatch(parts[5])):
        return None
    try:
        salt = base64.b64decode(parts[4], validate=True)
        digest = base64.b64decode(parts[5], validate=True)
    except (binascii.Error, ValueError):
        return None
    if not salt or not 16 <= len(digest) <= 64:
        return None
    return n, r, p, salt, digest


def verify_password(password: str, encoded: str) -> bool:
    """Whether ``password`` matches ``encoded``; False for any malformed input, never raises.

    The digests are compared in constant time.
    """
    if not isinstance(password, str):
        return False
    decoded = _decode(encoded)
    if decoded is None:
        return False
    n, r, p, salt, expected = decoded
    try:
        actual = _scrypt(password, salt, n, r, p, len(expected))
    except (ValueError, MemoryError):
        return False
    return hmac.compare_digest(actual, expected)


def password_fragment(encoded: str) -> str:
    """A short slice of the hash in ``encoded``, mixed into the auth cookie's key.

    A new password gets a new salt and hash, so its fragment differs and every cookie signed
    with the old one stops validating. (For a string that is not a well-formed encoding, the
    slice is taken from its last ``$``-separated field.)
    """
    if not isinstance(encoded, str):
        return ""
    return encoded.rpartition("$")[2][:_FRAGMENT_LENGTH]


# -- application passwords -----------------------------------------------------------------

APP_PASSWORD_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
APP_PASSWORD_LENGTH = 24
_APP_HASH_PERSON = b"svcrest-app-pw"


def generate_application_password() -> str:
    """A new application password: 24 characters of ``[A-Za-z0-9]`` (about 143 bits)."""
    return "".join(secrets.choice(APP_PASSWORD_ALPHABET) for _ in range(APP_PASSWORD_LENGTH))


def hash_application_password(password: str) -> str:
    """The stored form of an application password: ``blake2b$<hex>`` (BLAKE2b-256).

    A fast hash, as WordPress's ``wp_fast_hash``: the password is 143 random bits chosen by
    the server, so guessing it is hopeless however fast the hash, and a memory-hard scrypt run
    (~50 ms) on every API request would make Basic authentication the slowest part of the
    request. Unsalted, so a request finds its password with one indexed look-up.
    """
    digest = hashlib.blake2b(_secret_bytes(password), digest_size=32, person=_APP_HASH_PERSON)
    return "blake2b$" + digest.hexdigest()
