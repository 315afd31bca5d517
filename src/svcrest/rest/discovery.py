"""Discovery, as WordPress's ``rest_output_rsd``, ``rest_output_link_wp_head`` and
``rest_output_link_header`` do it: the RSD entry, the HTML head link and the HTTP Link header."""

from __future__ import annotations

import html

from svcrest.constants import REST_API_REL
from svcrest.rest.settings import SiteSettings

__all__ = ["rest_output_link_header", "rest_output_link_wp_head", "rest_output_rsd", "rsd_document"]


def _root(app: SiteSettings) -> str:
    return app.get_rest_url()


def rest_output_rsd(app: SiteSettings) -> str:
    """The RSD ``api`` element line, or "" when the root URL is empty."""
    root = _root(app)
    if not root:
        return ""
    link = html.escape(root, quote=True)
    return f'\t<api name="SVC-API" blogID="1" preferred="false" apiLink="{link}" />\n'


def rest_output_link_wp_head(app: SiteSettings) -> str:
    """The HTML head link tag, or "" when the root URL is empty."""
    root = _root(app)
    if not root:
        return ""
    return f"<link rel='{REST_API_REL}' href='{html.escape(root, quote=True)}' />\n"


def rest_output_link_header(app: SiteSettings) -> str | None:
    """The Link header value, or None when the root URL is empty.

    SECURITY: control characters, ``<`` and ``>`` are percent-encoded so a filtered root URL
    can neither split the header nor break out of the angle brackets; a character outside
    ASCII is percent-encoded as its UTF-8 bytes (``é`` as ``%C3%A9``), as a URI is.
    """
    root = _root(app)
    if not root:
        return None
    safe = "".join(
        "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        if ord(char) < 0x21 or char in "<>\x7f" or ord(char) > 0x7E
        else char
        for char in root
    )
    return f'<{safe}>; rel="{REST_API_REL}"'


def rsd_document(app: SiteSettings) -> str:
    """A full RSD 1.0 document listing the API (served at ``/rsd.xml``)."""
    home = html.escape(app.home, quote=True)
    api = rest_output_rsd(app)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<rsd version="1.0" xmlns="http://archipelago.phrasewise.com/rsd">\n'
        "\t<service>\n"
        "\t\t<engineName>svcrest</engineName>\n"
        f"\t\t<engineLink>{home}</engineLink>\n"
        f"\t\t<homePageLink>{home}</homePageLink>\n"
        "\t\t<apis>\n" + (f"\t\t{api}" if api else "") + "\t\t</apis>\n"
        "\t</service>\n"
        "</rsd>\n"
    )
