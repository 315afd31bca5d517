"""The Model Context Protocol at ``<home>/mcp`` (``App(mcp=True)``, ``svcrest serve --mcp``):
the site's abilities and its routes marked ``"mcp": True`` as tools for agents, with the
site's authentication and permissions (docs/guides/mcp.md).

:mod:`~svcrest.site.mcp.protocol` reads and writes JSON-RPC, :mod:`~svcrest.site.mcp.tools`
makes the tools, :mod:`~svcrest.site.mcp.endpoint` serves the Streamable HTTP transport.
"""

from __future__ import annotations

from svcrest.site.mcp.endpoint import MCP_PATH, McpEndpoint, install_mcp_page

__all__ = ["MCP_PATH", "McpEndpoint", "install_mcp_page"]
