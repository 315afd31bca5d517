"""Abilities, as WordPress 6.9's Abilities API: named units of work with input and output
schemas, a permission callback and behaviour annotations, registered on the App
(``app.register_ability``) and served under ``svc-abilities/v1``.

The registry lives in :mod:`svcrest.abilities.registry`, one ability's run in
:mod:`svcrest.abilities.ability`, the REST routes in :mod:`svcrest.abilities.routes`.
"""

from __future__ import annotations

from svcrest.abilities.ability import Ability, AbilityCategory
from svcrest.abilities.registry import AbilityRegistrationError, AbilityRegistry

__all__ = ["Ability", "AbilityCategory", "AbilityRegistrationError", "AbilityRegistry"]
