"""The User value and the role → capability map."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ANONYMOUS", "ROLE_CAPABILITIES", "User", "capabilities_for"]

_READ = frozenset({"read"})
_AUTHOR = _READ | {
    "upload_files",
    "edit_posts",
    "edit_published_posts",
    "publish_posts",
    "delete_posts",
    "delete_published_posts",
}
_EDITOR = _AUTHOR | {
    "moderate_comments",
    "manage_categories",
    "edit_others_posts",
    "edit_pages",
    "edit_others_pages",
    "edit_published_pages",
    "publish_pages",
    "delete_pages",
    "delete_others_pages",
    "delete_published_pages",
    "delete_others_posts",
    "delete_private_posts",
    "edit_private_posts",
    "read_private_posts",
    "delete_private_pages",
    "edit_private_pages",
    "read_private_pages",
    "unfiltered_html",
    "edit_notes",
}
_ADMIN = _EDITOR | {
    "switch_themes",
    "edit_themes",
    "activate_plugins",
    "edit_plugins",
    "edit_users",
    "edit_files",
    "manage_options",
    "import",
    "list_users",
    "remove_users",
    "add_users",
    "promote_users",
    "edit_theme_options",
    "delete_themes",
    "export",
    "create_users",
    "delete_users",
    "install_plugins",
    "update_plugins",
    "delete_plugins",
    "install_themes",
    "update_themes",
    "update_core",
    "edit_dashboard",
}

#: Capabilities of each role, as in WordPress; ``edit_notes`` is the demo plugin's.
ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    "administrator": frozenset(_ADMIN),
    "editor": frozenset(_EDITOR),
    "author": frozenset(_AUTHOR),
    "subscriber": _READ,
}


def capabilities_for(roles: tuple[str, ...]) -> frozenset[str]:
    """The union of the capabilities of ``roles`` (unknown roles give nothing)."""
    caps: set[str] = set()
    for role in roles:
        caps |= ROLE_CAPABILITIES.get(role, frozenset())
    return frozenset(caps)


@dataclass(frozen=True, slots=True)
class User:
    """A site user. The anonymous user has id 0, no login and no roles."""

    id: int
    login: str = ""
    roles: tuple[str, ...] = ()
    display_name: str = ""
    #: True for every user but the anonymous one. PERF: a field set once, not a property:
    #: CPython 3.11 reads a property through its slow, unspecialised path, and the pipeline
    #: asks this of every authenticated request several times.
    is_logged_in: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_logged_in", self.id != 0)

    def can(self, capability: str) -> bool:
        """Whether one of the user's roles grants ``capability``."""
        return capability in capabilities_for(self.roles)


#: The anonymous user (id 0).
ANONYMOUS = User(0)
