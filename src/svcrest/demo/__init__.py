"""The demo site: the notes plugin (``demo/v1``), loaded by ``svcrest serve``.

``register(app)`` is a plugin entry point like any other (``module:function`` taking the App).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from svcrest.demo.home import install_home_page
from svcrest.demo.notes import NotesController

if TYPE_CHECKING:
    from svcrest.app import App

__all__ = ["NotesController", "register"]


def register(app: App) -> None:
    """Add the ``demo/v1`` namespace (the notes routes) and the notes UI home page."""
    app.register_controller(NotesController())
    install_home_page(app)
