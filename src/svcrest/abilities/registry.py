"""The site's abilities and ability categories (WordPress's ``WP_Abilities_Registry`` and
``WP_Ability_Categories_Registry``), one registry per App.

Registration checks what WordPress checks, with its messages, and raises
:class:`AbilityRegistrationError` (the App turns it into a ``DoingItWrong`` warning and a
None, as WordPress's ``_doing_it_wrong`` and null): a name ``namespace/ability-name`` of
lowercase letters, digits and dashes; a registered category; a label, a description and both
callbacks; schemas and annotations that are mappings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from svcrest.abilities.ability import Ability, AbilityCategory
from svcrest.hooks import Hooks

__all__ = ["AbilityRegistrationError", "AbilityRegistry"]

_NAME = re.compile(r"[a-z0-9-]+/[a-z0-9-]+")
_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class AbilityRegistrationError(ValueError):
    """An ability or category that cannot be registered; the message is WordPress's."""


def _text(value: Any, what: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise AbilityRegistrationError(f"The {what} properties must contain a `{field}` string.")
    return value


def _schema(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AbilityRegistrationError(
            f"The ability properties should provide a valid `{field}` definition."
        )
    return value


class AbilityRegistry:
    """Abilities and their categories, in registration order."""

    __slots__ = ("_categories", "_hooks", "by_name", "on_first", "version")

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks
        #: The abilities by name, in registration order (read it; register and unregister
        #: through the methods). PERF: the run route finds its ability with one look-up.
        self.by_name: dict[str, Ability] = {}
        #: Changes whenever an ability is registered or removed (what is prepared from the
        #: abilities, such as the MCP tools, is made again then).
        self.version = 0
        self._categories: dict[str, AbilityCategory] = {}
        #: Called once, before the first category or ability is registered (the App
        #: registers the REST routes then).
        self.on_first: Callable[[], None] | None = None

    def _first(self) -> None:
        hook, self.on_first = self.on_first, None
        if hook is not None:
            hook()

    def register_category(
        self, slug: str, *, label: str, description: str, meta: Mapping[str, Any] | None = None
    ) -> AbilityCategory:
        """Register a category (WordPress's ``wp_register_ability_category``)."""
        if isinstance(slug, str) and slug in self._categories:
            raise AbilityRegistrationError(f'Ability category "{slug}" is already registered.')
        if not isinstance(slug, str) or not _SLUG.fullmatch(slug):
            raise AbilityRegistrationError(
                "Ability category slug must contain only lowercase alphanumeric characters"
                " and dashes."
            )
        _text(label, "category", "label")
        _text(description, "category", "description")
        if meta is not None and not isinstance(meta, Mapping):
            raise AbilityRegistrationError(
                "The category properties should provide a valid `meta` array."
            )
        self._first()
        category = AbilityCategory(slug, label, description, meta or {})
        self._categories[slug] = category
        return category

    def register(
        self,
        name: str,
        *,
        label: str,
        description: str,
        category: str,
        input_schema: Mapping[str, Any] | None,
        output_schema: Mapping[str, Any] | None,
        execute_callback: Callable[..., Any],
        permission_callback: Callable[..., Any],
        annotations: Mapping[str, Any] | None,
        show_in_rest: bool,
    ) -> Ability:
        """Register an ability (WordPress's ``wp_register_ability``)."""
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise AbilityRegistrationError(
                'Ability name must be a string containing a namespace prefix, i.e. "my-plugin/'
                'my-ability". It can only contain lowercase alphanumeric characters, dashes and'
                " the forward slash."
            )
        if name in self.by_name:
            raise AbilityRegistrationError(f'Ability "{name}" is already registered.')
        if isinstance(category, str) and category and category not in self._categories:
            raise AbilityRegistrationError(
                f'Ability category "{category}" is not registered. Please register the ability'
                f' category before assigning it to ability "{name}".'
            )
        ability = Ability(
            name,
            label=_text(label, "ability", "label"),
            description=_text(description, "ability", "description"),
            category=_text(category, "ability", "category"),
            input_schema=_schema(input_schema, "input_schema"),
            output_schema=_schema(output_schema, "output_schema"),
            execute_callback=self._callback(execute_callback, "must contain", "execute_callback"),
            permission_callback=self._callback(
                permission_callback, "must provide", "permission_callback"
            ),
            annotations=self._annotations(annotations),
            show_in_rest=self._show_in_rest(show_in_rest),
            hooks=self._hooks,
        )
        self._first()
        self.by_name[name] = ability
        self.version += 1
        return ability

    @staticmethod
    def _callback(value: Any, verb: str, field: str) -> Callable[..., Any]:
        if not callable(value):
            raise AbilityRegistrationError(
                f"The ability properties {verb} a valid `{field}` function."
            )
        function: Callable[..., Any] = value
        return function

    @staticmethod
    def _annotations(value: Any) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise AbilityRegistrationError(
                "The ability meta should provide a valid `annotations` array."
            )
        return value

    @staticmethod
    def _show_in_rest(value: Any) -> bool:
        if not isinstance(value, bool):
            raise AbilityRegistrationError(
                "The ability meta should provide a valid `show_in_rest` boolean."
            )
        return value

    def unregister(self, name: str) -> Ability | None:
        """Remove an ability; the removed one, or None when none has that name."""
        self.version += 1
        return self.by_name.pop(name, None)

    def unregister_category(self, slug: str) -> AbilityCategory | None:
        """Remove a category; the removed one, or None when none has that slug."""
        return self._categories.pop(slug, None)

    def get(self, name: str) -> Ability | None:
        """The ability ``name``, None when there is none."""
        return self.by_name.get(name)

    def get_all(self) -> list[Ability]:
        """Every ability, in registration order."""
        return list(self.by_name.values())

    def get_category(self, slug: str) -> AbilityCategory | None:
        """The category ``slug``, None when there is none."""
        return self._categories.get(slug)

    def get_categories(self) -> list[AbilityCategory]:
        """Every category, in registration order."""
        return list(self._categories.values())
