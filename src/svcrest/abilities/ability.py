"""One ability and one ability category, as WordPress 6.9's ``WP_Ability`` and
``WP_Ability_Category``.

Everything an ability's run needs is decided at registration (the callbacks fitted to the
arguments they take, the schemas, the annotations); a run is then: the input's default, the
input checked against ``input_schema`` (WordPress's ``rest_validate_value_from_schema`` rules,
the same as route arguments), the permission callback, the execute callback, the output checked
against ``output_schema``. Errors carry WordPress's codes and messages:
``ability_missing_input_schema``, ``ability_invalid_input``, ``ability_invalid_permissions``,
``ability_invalid_output``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from svcrest.chains import NOT_AWAITABLE, Pending, is_awaitable
from svcrest.hooks import Hooks
from svcrest.http.errors import RestError
from svcrest.rest.invoke import fitted
from svcrest.rest.routing.definitions import public
from svcrest.rest.schema import quick_check, validate_value
from svcrest.syncrun import run_sync

__all__ = ["ANNOTATIONS", "Ability", "AbilityCategory"]

#: The annotations WordPress defines, each None (unknown) unless the ability says otherwise.
ANNOTATIONS: tuple[str, ...] = ("readonly", "destructive", "idempotent")
_BEFORE = "svc_before_execute_ability"
_AFTER = "svc_after_execute_ability"


class AbilityCategory:
    """An ability category (WordPress's ``WP_Ability_Category``): ``slug``, ``label``,
    ``description`` and ``meta``."""

    __slots__ = ("description", "label", "meta", "slug")

    def __init__(self, slug: str, label: str, description: str, meta: Mapping[str, Any]) -> None:
        self.slug = slug
        self.label = label
        self.description = description
        self.meta: dict[str, Any] = dict(meta)

    def __repr__(self) -> str:
        return f"<AbilityCategory {self.slug!r}>"


async def _awaited_verdict(pending: Any) -> bool | RestError:
    """An async permission callback's verdict, as :meth:`Ability.permission_verdict`."""
    try:
        verdict = await pending
    except RestError as raised:
        return raised
    if isinstance(verdict, RestError):
        return verdict
    return verdict is True


def _run_method(annotations: Mapping[str, Any]) -> str:
    if annotations["readonly"]:
        return "GET"
    if annotations["destructive"] and annotations["idempotent"]:
        return "DELETE"
    return "POST"


class Ability:
    """A registered ability (WordPress's ``WP_Ability``): made by
    ``App.register_ability``, read with ``App.get_ability``.

    ``execute(input)`` (or ``await execute_async(input)``) runs it as WordPress's
    ``WP_Ability::execute`` does and returns the callback's result or a ``RestError``.
    ``check_permissions`` and ``validate_input`` are its steps, usable alone.
    """

    __slots__ = (
        "_execute",
        "_hooks",
        "_input_ok",
        "_output_ok",
        "_permission",
        "_quiet_at",
        "_takes_input",
        "annotations",
        "category",
        "description",
        "execute_callback",
        "input_schema",
        "is_public",
        "label",
        "name",
        "output_schema",
        "permission_callback",
        "plain_method",
        "plain_run",
        "run_method",
        "show_in_rest",
    )

    def __init__(
        self,
        name: str,
        *,
        label: str,
        description: str,
        category: str,
        input_schema: Mapping[str, Any],
        output_schema: Mapping[str, Any],
        execute_callback: Callable[..., Any],
        permission_callback: Callable[..., Any],
        annotations: Mapping[str, Any],
        show_in_rest: bool,
        hooks: Hooks,
    ) -> None:
        self.name = name
        self.label = label
        self.description = description
        self.category = category
        self.input_schema: dict[str, Any] = dict(input_schema)
        self.output_schema: dict[str, Any] = dict(output_schema)
        self.execute_callback = execute_callback
        self.permission_callback = permission_callback
        self.annotations: Mapping[str, Any] = MappingProxyType(
            {**dict.fromkeys(ANNOTATIONS), **annotations}
        )
        self.show_in_rest = show_in_rest
        self._hooks = hooks
        #: The hooks' ``version`` when neither action of a run had a callback (-1: not
        #: known): until the hooks change, a run counts its actions for ``did_action``
        #: without running them. PERF: ~1,000 instructions a run (two ``do_action`` calls).
        self._quiet_at = -1
        # A callback taking no argument is called without the input (WordPress passes the
        # input only to abilities that declare an input schema; here the signature decides).
        self._execute = fitted(execute_callback, 1)
        #: Whether the execute callback takes the input (PERF: one without it is called
        #: directly, not through the wrapper dropping the input).
        self._takes_input = self._execute is execute_callback
        #: Whether the permission callback is ``public`` (it allows everyone: known without
        #: a call).
        self.is_public = permission_callback is public
        #: A public ability that takes no input: run without one, its input and permission
        #: checks pass without a look (WordPress's ``execute`` of it checks nothing that can
        #: refuse). PERF: its run route's permission check hands nothing over to the run (a
        #: context variable written a run: MCP tools/call 148,560 → 144,866 instructions,
        #: bench/mcp_call.py).
        self.plain_run = self.is_public and not self.input_schema
        self._permission = None if self.is_public else fitted(permission_callback, 1)
        #: The method the REST run route takes for it (WordPress's
        #: ``validate_request_method``): GET for ``readonly``, DELETE for ``destructive``
        #: and ``idempotent``, POST otherwise.
        self.run_method = _run_method(self.annotations)
        #: The run method of a plain run whose input the REST run route reads from the query
        #: (GET or DELETE), "" for any other ability: a run asked with it and no ``input``
        #: in the query is allowed and run without a look at the input or the permission.
        self.plain_method = self.run_method if self.plain_run and self.run_method != "POST" else ""
        # PERF: a quick test of values the schemas certainly accept, prepared here; anything
        # else gets the full check (tools/call of a readonly ability: see bench/mcp_call.py).
        self._input_ok = quick_check(self.input_schema)
        self._output_ok = quick_check(self.output_schema)

    @property
    def meta(self) -> dict[str, Any]:
        """WordPress's ``get_meta()``: ``{"annotations": {...}, "show_in_rest": bool}``."""
        return {"annotations": dict(self.annotations), "show_in_rest": self.show_in_rest}

    def normalize_input(self, input: Any = None) -> Any:
        """``input``, or the input schema's ``default`` when ``input`` is None."""
        if input is None and "default" in self.input_schema:
            return self.input_schema["default"]
        return input

    def checked_input(self, input: Any = None) -> Any:
        """``input`` with its default (:meth:`normalize_input`) when it fits the schema;
        else the RestError of :meth:`validate_input` (PERF: both in one call)."""
        schema = self.input_schema
        if input is None:
            if not schema:
                return None  # PERF: no input to an ability that takes none: nothing to check
            if "default" in schema:
                input = schema["default"]
        invalid = self.validate_input(input)
        return input if invalid is None else invalid

    def validate_input(self, input: Any = None) -> RestError | None:
        """None when ``input`` fits ``input_schema``; else ``ability_invalid_input`` with the
        schema's reason, or ``ability_missing_input_schema`` for an input to an ability that
        declares none."""
        schema = self.input_schema
        if not schema:
            if input is None:
                return None
            return RestError(
                "ability_missing_input_schema",
                f'Ability "{self.name}" does not define an input schema required to validate'
                " the provided input.",
            )
        quick = self._input_ok
        if quick is not None and quick(input):
            return None
        error = validate_value(input, schema, "input")
        if error is None:
            return None
        return RestError(
            "ability_invalid_input",
            f'Ability "{self.name}" has invalid input. Reason: {error.message}',
        )

    def validate_output(self, output: Any) -> RestError | None:
        """None when ``output`` fits ``output_schema`` (or there is none); else
        ``ability_invalid_output`` with the schema's reason."""
        schema = self.output_schema
        if not schema:
            return None
        quick = self._output_ok
        if quick is not None and quick(output):
            return None
        error = validate_value(output, schema, "output")
        if error is None:
            return None
        return RestError(
            "ability_invalid_output",
            f'Ability "{self.name}" has invalid output. Reason: {error.message}',
        )

    def permission_verdict(self, input: Any = None) -> Any:
        """What :meth:`check_permissions_async` answers for ``input``, given at once when the
        permission callback is not async (PERF: no coroutine), else an awaitable of it."""
        permission = self._permission
        if permission is None:
            return True
        try:
            verdict = permission(input)
        except RestError as raised:
            return raised
        if verdict is True:
            return True
        if type(verdict) not in NOT_AWAITABLE and is_awaitable(verdict):
            return _awaited_verdict(verdict)
        return verdict if isinstance(verdict, RestError) else False

    async def check_permissions_async(self, input: Any = None) -> bool | RestError:
        """The permission callback's verdict for ``input``: True, False, or the RestError it
        returned or raised (anything but True and a RestError counts as False)."""
        verdict = self.permission_verdict(input)
        if type(verdict) not in NOT_AWAITABLE and not isinstance(verdict, RestError):
            verdict = await verdict
        answer: bool | RestError = verdict
        return answer

    def check_permissions(self, input: Any = None) -> bool | RestError:
        """The sync form of :meth:`check_permissions_async`."""
        verdict: bool | RestError = run_sync(lambda: self.check_permissions_async(input))
        return verdict

    async def execute_async(self, input: Any = None) -> Any:
        """Run the ability as WordPress's ``WP_Ability::execute``: the input's default, the
        input check, the permission check (``ability_invalid_permissions`` when refused),
        the ``svc_before_execute_ability`` action, the execute callback (a RestError it returns
        or raises is the answer), the output check, the ``svc_after_execute_ability`` action.
        Returns the result or a RestError (without a status: 500 when answered over HTTP)."""
        input = self.normalize_input(input)
        invalid = self.validate_input(input)
        if invalid is not None:
            return invalid
        if await self.check_permissions_async(input) is not True:
            return RestError(
                "ability_invalid_permissions",
                f'Ability "{self.name}" does not have necessary permission.',
            )
        result = self.run_permitted(input)
        return await result if type(result) is Pending else result

    def run_permitted(self, input: Any) -> Any:
        """The part of :meth:`execute_async` after the input and permission checks, for a
        caller that has just made them for this ``input`` (the REST run route, whose
        permission check runs them as WordPress's ``check_ability_permissions`` does): the
        actions, the execute callback and the output check. Returns the result or a
        RestError; for an async execute callback, a coroutine (of type
        :data:`svcrest.chains.Pending`) of it (PERF: no coroutine for a sync one)."""
        hooks = self._hooks
        if hooks.version == self._quiet_at:
            # PERF: :meth:`Hooks.count_action` written out (two Python calls a run: ~1,000
            # instructions of an MCP tools/call, bench/mcp_call.py).
            counts = hooks.action_counts
            counts[_BEFORE] = counts.get(_BEFORE, 0) + 1
        else:
            hooks.do_action(_BEFORE, self.name, input)
            quiet = not hooks.has_callbacks(_BEFORE) and not hooks.has_callbacks(_AFTER)
            self._quiet_at = hooks.version if quiet else -1
        try:
            result = self._execute(input) if self._takes_input else self.execute_callback()
        except RestError as raised:
            return raised
        if type(result) is dict:  # PERF: the usual result, :meth:`_finish` written out
            quick = self._output_ok
            if quick is None or not quick(result):
                invalid = self.validate_output(result)
                if invalid is not None:
                    return invalid
            if hooks.version == self._quiet_at:  # PERF: :meth:`_after` written out
                counts = hooks.action_counts
                counts[_AFTER] = counts.get(_AFTER, 0) + 1
            else:
                hooks.do_action(_AFTER, self.name, input, result)
            return result
        if type(result) not in NOT_AWAITABLE and is_awaitable(result):
            return self._finish_later(result, input)
        return self._finish(result, input)

    async def _finish_later(self, pending: Any, input: Any) -> Any:
        try:
            result = await pending
        except RestError as raised:
            return raised
        return self._finish(result, input)

    def _finish(self, result: Any, input: Any) -> Any:
        """The output check and the ``svc_after_execute_ability`` action of a result."""
        if isinstance(result, RestError):
            return result
        quick = self._output_ok
        if quick is None or not quick(result):  # PERF: the quick test a call nearer
            invalid = self.validate_output(result)
            if invalid is not None:
                return invalid
        self._after(input, result)
        return result

    def _after(self, input: Any, result: Any) -> None:
        """The ``svc_after_execute_ability`` action of a result (counted alone while the
        hooks have not changed since a run found no callback of either action)."""
        hooks = self._hooks
        if hooks.version == self._quiet_at:
            hooks.count_action(_AFTER)
        else:
            hooks.do_action(_AFTER, self.name, input, result)

    def execute(self, input: Any = None) -> Any:
        """The sync form of :meth:`execute_async` (for code without a running event loop)."""
        return run_sync(lambda: self.execute_async(input))

    def __repr__(self) -> str:
        return f"<Ability {self.name!r}>"
