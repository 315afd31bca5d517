"""Request argument handling: defaults, required, validation and sanitising, with WordPress's
error codes (``rest_missing_callback_param``, ``rest_invalid_param``).

Defaults are checked once, when a route is registered (:func:`default_error` refuses one
that fails its own schema; :func:`prepare_defaults` validates and sanitises the rest): a
request that leaves a scalar default alone does not check it again. A default with a
``validate_callback`` or ``sanitize_callback`` is still handed to the callback on every
request (WordPress calls it with the default), and a list or object default is sanitised
into a new value per request (a callback may change what it is given).

PERF: a GET of a route with three arguments, one sent: 213,406 → 130,560 instructions when
the other two have defaults, 142,981 → 139,367 when none has (the defaults' bucket is a
copy, no longer built); a ``StoreCollection`` page of 10 1,492,367 → 1,317,124 with its
five defaults (callgrind, as bench/instructions.py counts).

Each handler's requests run its :class:`ArgPlan`, prepared with the route: the required
names, the callbacks fitted, and each schema's quick tests (``svcrest.rest.schema.quick``);
a value they are not sure of gets the full check, so every answer is the generic step's.
PERF: the internal GET of an ability's run route (``name`` from the URL, ``input`` left at
its null default) 128,727 → 83,368 instructions, its REST GET 221,799 → 175,651, an MCP
``tools/call`` 268,104 → 222,580 (``bench/mcp_call.py --instructions 300``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, cast

from svcrest.bounded import Memo
from svcrest.chains import NOT_AWAITABLE, is_awaitable
from svcrest.http.errors import RestError
from svcrest.http.request import FORM_BODY_METHODS, Request
from svcrest.rest.invoke import fitted
from svcrest.rest.schema import (
    UNSURE,
    accepted_type,
    quick_check,
    quick_sanitizer,
    sanitize_value,
    unchanged_type,
    validate_value,
)
from svcrest.rest.schema.common import within_64_bits
from svcrest.rest.schema.quick import Predicate, Sanitizer

__all__ = [
    "ArgPlan",
    "PreparedDefaults",
    "apply_defaults",
    "check_params",
    "default_error",
    "prepare_defaults",
    "sanitize_params",
    "settle",
]

#: Defaults of these types are shared by every request once checked (immutable values).
_SHAREABLE = frozenset({str, int, float, bool})
_NO_DEFAULTS: dict[str, Any] = {}
_NOTHING = object()
#: URL values remembered per argument as passing its quick test (PERF: see
#: :meth:`ArgPlan._url_only`): at most this many, each at most this long.
_URL_SEEN = 64
_URL_SEEN_LENGTH = 128
#: An argument's tests of :attr:`ArgPlan.lean`: the type it accepts, its quick test, the type
#: sanitising leaves as it is, and the URL strings that passed the quick test (or None).
_Lean = tuple[type | None, Predicate | None, type | None, Memo[str, bool] | None]


# PERF: ``type(x) is dict`` first: an ABC ``isinstance`` check costs ~0.2 µs, and argument
# definitions are dicts (the Mapping check stays for the others).


def default_error(name: str, definition: Any) -> RestError | None:
    """The error of an argument's ``default`` against its own schema (None: it has none,
    it is None, or it is valid): checked when the route is registered."""
    if not isinstance(definition, Mapping) or definition.get("default") is None:
        return None
    return validate_value(definition["default"], definition, name)


class PreparedDefaults:
    """The defaults of a handler's arguments, prepared when the route is registered.

    ``bucket``: every argument's default (the request's default bucket, copied per request);
    ``settled``: those already validated and sanitised (a scalar without a validate or
    sanitise callback), by name: :func:`check_params` and :func:`sanitize_params` skip such
    a value when it is the one the request has.
    """

    __slots__ = ("bucket", "settled")

    def __init__(self, bucket: dict[str, Any], settled: dict[str, Any]) -> None:
        self.bucket = bucket
        self.settled = settled


def prepare_defaults(args: Mapping[str, Any]) -> PreparedDefaults:
    """The :class:`PreparedDefaults` of ``args`` (a default that fails its schema stays as
    given, to be refused per request as before: registration refuses it first)."""
    bucket: dict[str, Any] = {}
    settled: dict[str, Any] = {}
    for name, definition in args.items():
        if not isinstance(definition, Mapping) or "default" not in definition:
            continue
        value = bucket[name] = definition["default"]
        if (
            type(value) not in _SHAREABLE
            or definition.get("validate_callback") is not None
            or definition.get("sanitize_callback") is not None
            or validate_value(value, definition, name) is not None
        ):
            continue
        cleaned = sanitize_value(value, definition, name)
        if type(cleaned) in _SHAREABLE:
            bucket[name] = settled[name] = cleaned
    return PreparedDefaults(bucket, settled)


def apply_defaults(request: Request, args: Mapping[str, Any]) -> None:
    """Put every argument's ``default`` into the request's default bucket."""
    defaults = {
        name: definition["default"]
        for name, definition in args.items()
        if (type(definition) is dict or isinstance(definition, Mapping)) and "default" in definition
    }
    if defaults:
        request.default_params = defaults


def _merged(
    buckets: tuple[dict[str, Any], ...], under: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every parameter, merged with the precedence of the buckets (``Request.get_params``),
    over ``under`` when given."""
    merged: dict[str, Any] = {} if under is None else dict(under)
    for bucket in reversed(buckets):
        merged.update(bucket)
    return merged


def _sent_null(buckets: tuple[dict[str, Any], ...], name: str) -> bool:
    """Whether the client sent ``name`` as null (a JSON ``null``): validated like any value
    it sends (an ``array`` argument given null is a 400), unlike an argument left out."""
    # The buckets before the query string and the defaults: those hold no JSON null.
    for bucket in buckets[:-2]:  # noqa: SIM110 - PERF: not any() over a generator (~300 ns)
        if name in bucket and bucket[name] is None:
            return True
    return False


def _awaitable(value: Any) -> bool:
    return type(value) not in NOT_AWAITABLE and is_awaitable(value)


def _error_detail(error: RestError) -> dict[str, Any]:
    return {"code": error.code, "message": error.message, "data": error.data}


def _noted(
    invalid: dict[str, RestError] | None, name: str, error: RestError
) -> dict[str, RestError]:
    if invalid is None:
        invalid = {}
    invalid[name] = error
    return invalid


def _callback_error(outcome: Any) -> RestError | None:
    """The error a ``validate_callback``'s answer means: a RestError its own, False
    WordPress's generic one, anything else none."""
    if isinstance(outcome, RestError):
        return outcome
    if outcome is False:
        return RestError("rest_invalid_param", "Invalid parameter.", None)
    return None


def _missing_params(required: tuple[str, ...], params: dict[str, Any]) -> RestError:
    """WordPress's 400 naming the ``required`` arguments no bucket holds (null counts as
    left out)."""
    missing = [name for name in required if params.get(name) is None]
    return RestError(
        "rest_missing_callback_param",
        "Missing parameter(s): " + ", ".join(missing),
        {"status": 400, "params": missing},
    )


def _invalid_params(invalid: dict[str, RestError]) -> RestError:
    return RestError(
        "rest_invalid_param",
        "Invalid parameter(s): " + ", ".join(invalid),
        {
            "status": 400,
            "params": {name: error.message for name, error in invalid.items()},
            "details": {name: _error_detail(error) for name, error in invalid.items()},
        },
    )


Buckets = tuple[dict[str, Any], ...]
#: The rest of a step once a callback answered with an awaitable: a coroutine of its result.
Later = Coroutine[Any, Any, RestError | None]
#: An argument's check: name, definition, the type whose values it accepts (or None), quick
#: predicate, fitted ``validate_callback``, and its settled default (or ``_NOTHING``).
_Check = tuple[
    str, Mapping[str, Any], type | None, Predicate | None, Callable[..., Any] | None, Any
]
#: An argument's sanitising: name, definition, the type whose values it leaves as they are
#: (or None), quick sanitiser, fitted ``sanitize_callback``, and whether its default is
#: settled (the default bucket is left alone).
_Clean = tuple[
    str, Mapping[str, Any], type | None, Sanitizer | None, Callable[..., Any] | None, bool
]


def _lean_url(lean: Mapping[str, _Lean | None], url_names: Iterable[str]) -> bool:
    """Whether a URL bringing ``url_names`` may be answered by :meth:`ArgPlan._url_only`:
    none of them is an argument with a callback or one that sanitising turns from the URL's
    string into another type."""
    for name in url_names:
        if name in lean:
            tests = lean[name]
            if tests is None or tests[2] is not str:
                return False
    return True


def _url_seen(
    accepted: type | None, quick: Predicate | None, unchanged: type | None
) -> Memo[str, bool] | None:
    """The memory of URL strings passing ``quick`` (see :data:`_Lean`): for an argument
    whose strings sanitising leaves as they are and whose quick test a string may fail."""
    if unchanged is not str or quick is None or accepted is str:
        return None
    return Memo(_URL_SEEN, _URL_SEEN_LENGTH)


class ArgPlan:
    """The argument step of one handler, prepared when its route is registered (and again
    whenever the route's handlers change: ``register_rest_field`` registers a controller's
    routes again with the field's args).

    What every request of the handler then runs (WordPress's ``has_valid_params`` then
    ``sanitize_params``): the defaults put into the default bucket (prepared:
    :class:`PreparedDefaults`); the ``required`` arguments that no bucket holds, a 400
    ``rest_missing_callback_param`` listing them; every argument supplied (a JSON ``null``
    included) checked against its schema, then by its ``validate_callback``, all of them
    before anything is sanitised, a 400 ``rest_invalid_param`` listing the failures in the
    order of the arguments; then each supplied value, in every bucket holding it, replaced
    by what its ``sanitize_callback`` (or its schema's type coercion) answers.

    Prepared here: which arguments are required, each callback fitted to the arguments it
    takes, and for each schema the quick test of the values it certainly accepts and the
    quick sanitiser (``svcrest.rest.schema.quick``); a value they are not sure of gets the
    full check, so every answer, error bodies included, is the generic step's.

    :meth:`run` answers None, the RestError, or (only when a callback answered with an
    awaitable) a coroutine of either. PERF: no coroutine otherwise; a route without args
    never gets here (the pipeline skips it).
    """

    __slots__ = (
        "args",
        "bucket",
        "checks",
        "cleans",
        "lean",
        "positions",
        "present",
        "refetch",
        "required",
        "size",
    )

    def __init__(
        self,
        args: Mapping[str, Any],
        defaults: PreparedDefaults | None = None,
        url_names: Iterable[str] | None = None,
    ) -> None:
        """The step for ``args``; ``url_names``, when known, are the names the route's
        pattern may take from the URL (see :attr:`lean`)."""
        self.args = args
        #: ``len(args)`` when prepared: a name added to or removed from the args in place
        #: is noticed per request (a definition changed in place is not: register the
        #: route again, as ``register_rest_field`` does).
        self.size = len(args)
        prepared = prepare_defaults(args) if defaults is None else defaults
        self.bucket = prepared.bucket
        #: The defaults that are not null: a null default is never checked nor sanitised.
        self.present = {name: value for name, value in self.bucket.items() if value is not None}
        settled = prepared.settled
        required: list[str] = []
        checks: list[_Check] = []
        cleans: list[_Clean] = []
        for name, definition in args.items():
            if not isinstance(definition, Mapping):
                continue
            if definition.get("required") is True:
                required.append(name)
            validate = definition.get("validate_callback")
            sanitize = definition.get("sanitize_callback")
            checks.append(
                (
                    name,
                    definition,
                    accepted_type(definition),
                    quick_check(definition),
                    None if validate is None else fitted(validate, 3),
                    settled.get(name, _NOTHING),
                )
            )
            cleans.append(
                (
                    name,
                    definition,
                    unchanged_type(definition) if sanitize is None else None,
                    quick_sanitizer(definition) if sanitize is None else None,
                    None if sanitize is None else fitted(sanitize, 3),
                    name in settled,
                )
            )
        self.required = tuple(required)
        self.checks = tuple(checks)
        self.cleans = tuple(cleans)
        #: Each argument's position in :attr:`checks` and :attr:`cleans`.
        self.positions = {check[0]: index for index, check in enumerate(checks)}
        #: A ``validate_callback`` may change the request: sanitising reads it again.
        self.refetch = any(check[4] is not None for check in checks)
        #: For a request whose only parameters are its URL's (no query, no body): each
        #: argument's ``(accepted type, quick test, unchanged type)``, or None for one with
        #: a callback (see :meth:`_url_only`); the whole is None while a non-null default is
        #: not settled (it is checked and sanitised per request).
        self.lean: dict[str, _Lean | None] | None = (
            {
                check[0]: None
                if check[4] is not None or clean[4] is not None
                else (check[2], check[3], clean[2], _url_seen(check[2], check[3], clean[2]))
                for check, clean in zip(checks, cleans, strict=True)
            }
            if all(name in settled for name in self.present)
            else None
        )
        if self.lean is not None and url_names is not None and not _lean_url(self.lean, url_names):
            # PERF: a route whose URL brings an argument that is never lean (``id`` of
            # ``(?P<id>\d+)``, an integer: sanitising changes the URL's string) never tries
            # (a StoreCollection item GET 262,044 → 258,816 instructions, bench/budget.py).
            self.lean = None

    def run(self, request: Request, args: Mapping[str, Any]) -> RestError | Later | None:
        """Defaults, required arguments, checks, then sanitising of the handler's ``args``
        (its definition's, as they are now): the first error, None, or a coroutine of
        either (see the class's documentation). Args replaced, or given or losing a name in
        place, since the plan was prepared are checked as they are, by a plan made for
        them for this request."""
        if args is not self.args or len(args) != self.size:
            return ArgPlan(args).run(request, args)
        if self.bucket:
            request.default_params = dict(self.bucket)
        # PERF: asked without handing out the query bucket (two calls less, and the query's
        # later reads without a look: an MCP tools/call 140,693 → 138,761 instructions,
        # bench/mcp_call.py); not asked of a request with a query or a form method (no call).
        url = (
            None
            if request.may_have_query or request.method in FORM_BODY_METHODS
            else request.lone_url_params()
        )
        if url is not None and self.lean is not None and self._url_only(url):
            return None
        # PERF: a request whose query can hold nothing walks an empty dict of its own in the
        # query's place (nothing is found or written there), so the steps that look only at
        # query parameters still skip it (a StoreCollection item GET stays on the default
        # finishing step: 248,455 → 228,785 instructions with get_param's, bench/budget.py).
        buckets = (url, {}, request.default_params) if url is not None else request.param_buckets()
        # The parameters, the null defaults left out. PERF: an argument whose default is
        # null and that the client left out is skipped at once, neither checked nor
        # sanitised (the run route's ``input``: 88,434 → 83,193 instructions an internal
        # GET); a GET's URL and query buckets merged here, and the required names tested
        # here, without a call (89,125 → 88,434).
        present = self.present
        params = (
            {**present, **buckets[1], **buckets[0]}
            if len(buckets) == 3
            else _merged(buckets[:-1], present)
        )
        for name in self.required:
            if params.get(name) is None:
                return _missing_params(self.required, params)
        invalid = self._validate(request, buckets, params, self.checks, None)
        if invalid is not None:
            if type(invalid) is dict:
                return _invalid_params(invalid)
            return self._then_sanitize(request, self._invalid_later(invalid))
        if self.refetch:
            buckets = request.param_buckets()
            params = _merged(buckets)
        return self._sanitize(request, buckets, params, self.cleans, None)

    def _url_only(self, url: dict[str, Any]) -> bool:
        """Whether the step has nothing to do for a request whose only parameters are the
        URL's ``url`` (its query empty, no body): each value of an argument passes its
        quick test and sanitising leaves it as it is, no argument has a callback, every
        ``required`` one is in the URL or has a default, every non-null default is settled.
        The step then answers None, changing nothing, as the generic one would; False
        leaves the request to the generic step. PERF: the run route of an ability (its
        ``name`` from the URL, ``input`` left out) skips both walks over its arguments: an
        MCP ``tools/call`` 159,495 → 154,849 instructions (bench/mcp_call.py)."""
        lean = self.lean
        if lean is None:
            return False
        for name in self.required:
            if url.get(name) is None and self.present.get(name) is None:
                return False
        for name, value in url.items():
            if name not in lean:
                continue  # not an argument: neither checked nor sanitised
            tests = lean[name]
            if tests is None or value is None:  # a callback, or a null sent
                return False
            accepted, quick, unchanged, seen = tests
            if type(value) is not unchanged:
                return False
            if type(value) is accepted:
                continue
            # PERF: a URL string that passed the quick test before (the same route's URLs
            # come again) passes without it: a pattern's regex search is ~0.45 µs (an
            # ability's run route: its ``name``; an MCP tools/call 143,095 → 140,693
            # instructions, bench/mcp_call.py). ``seen`` is kept only for ``unchanged``
            # str: ``value`` is a str here.
            if seen is not None and value in seen.entries:
                continue
            if quick is None or not quick(value):
                return False
            if seen is not None:
                seen.keep(cast(str, value), True)
        return True

    def check(self, request: Request) -> RestError | Later | None:
        """The required arguments and the checks alone (the request's buckets as they are)."""
        buckets = request.param_buckets()
        params = _merged(buckets)
        for name in self.required:
            if params.get(name) is None:
                return _missing_params(self.required, params)
        invalid = self._validate(request, buckets, params, self.checks, None)
        if invalid is None or type(invalid) is dict:
            return None if invalid is None else _invalid_params(invalid)
        return self._invalid_later(invalid)

    def sanitize(self, request: Request) -> RestError | Later | None:
        """The sanitising alone (the request's buckets as they are)."""
        buckets = request.param_buckets()
        return self._sanitize(request, buckets, _merged(buckets), self.cleans, None)

    async def _then_sanitize(self, request: Request, checking: Later) -> RestError | None:
        """:meth:`run` once a callback of the checks answered with an awaitable."""
        error = await checking
        if error is not None:
            return error
        return await settle(self.sanitize(request))

    @staticmethod
    async def _invalid_later(checking: Any) -> RestError | None:
        invalid = await checking
        return None if invalid is None else _invalid_params(invalid)

    def _validate(
        self,
        request: Request,
        buckets: Buckets,
        params: dict[str, Any],
        checks: tuple[_Check, ...],
        invalid: dict[str, RestError] | None,
    ) -> Any:
        """The failures of ``checks`` (the plan's, or the rest of them), by name (None for
        none), or a coroutine of them once a callback answers with an awaitable."""
        for name, definition, accepted, quick, callback, settled in checks:
            value = params.get(name, _NOTHING)
            if value is None:
                if not _sent_null(buckets, name):
                    continue
            elif value is settled or value is _NOTHING:
                continue  # PERF: left out, or the default itself, checked at registration
            if type(value) is not accepted and (quick is None or not quick(value)):
                error = validate_value(value, definition, name)
                if error is not None and error.code == "rest_out_of_bounds":
                    error = _from_path(value, definition, name, buckets[0], error)
                if error is not None:
                    invalid = _noted(invalid, name, error)
                    continue
            if callback is None:
                continue
            outcome = _called(callback, value, request, name)
            if _awaitable(outcome):
                return self._validate_later(request, buckets, params, name, outcome, invalid)
            error = _callback_error(outcome)
            if error is not None:
                invalid = _noted(invalid, name, error)
        return invalid

    async def _validate_later(
        self,
        request: Request,
        buckets: Buckets,
        params: dict[str, Any],
        name: str,
        pending: Any,
        invalid: dict[str, RestError] | None,
    ) -> dict[str, RestError] | None:
        error = _callback_error(await _awaited(pending))
        if error is not None:
            invalid = _noted(invalid, name, error)
        rest = self.checks[self.positions[name] + 1 :]
        found = self._validate(request, buckets, params, rest, invalid)
        if found is not None and type(found) is not dict:
            found = await found
        return found  # type: ignore[no-any-return]

    def _sanitize(
        self,
        request: Request,
        buckets: Buckets,
        params: dict[str, Any],
        cleans: tuple[_Clean, ...],
        invalid: dict[str, RestError] | None,
    ) -> RestError | Later | None:
        """Sanitise the arguments of ``cleans`` (the plan's, or the rest of them): the
        error of the failures, None, or a coroutine of either once a callback answers
        with an awaitable."""
        sent = buckets[:-1]  # the last bucket holds the defaults
        for name, definition, unchanged, quick, callback, settled in cleans:
            if name not in params:
                continue
            chosen = sent if settled else buckets  # a settled default is sanitised already
            if callback is None:
                for bucket in chosen:
                    if name not in bucket or (value := bucket[name]) is None:
                        continue
                    if type(value) is unchanged:
                        continue  # PERF: sanitising gives the value itself
                    result = UNSURE if quick is None else quick(value)
                    if result is UNSURE:
                        result = sanitize_value(value, definition, name)
                        if isinstance(result, RestError):
                            invalid = _noted(invalid, name, result)
                            break
                    bucket[name] = result
                continue
            outcome = _sanitize_by(callback, request, name, chosen)
            if outcome is _NOTHING:
                continue  # nothing to sanitise
            params = _merged(buckets)  # the callback may have set other parameters
            if outcome is None:
                continue
            if not isinstance(outcome, RestError):
                return self._sanitize_later(request, buckets, name, outcome, invalid)
            invalid = _noted(invalid, name, outcome)
        return None if invalid is None else _invalid_params(invalid)

    async def _sanitize_later(
        self,
        request: Request,
        buckets: Buckets,
        name: str,
        pending: Later,
        invalid: dict[str, RestError] | None,
    ) -> RestError | None:
        """:meth:`_sanitize` once argument ``name``'s ``sanitize_callback`` answered with an
        awaitable: ``pending`` (that argument's sanitising) awaited, then the arguments
        after it."""
        error = await pending
        if error is not None:
            invalid = _noted(invalid, name, error)
        rest = self.cleans[self.positions[name] + 1 :]
        return await settle(self._sanitize(request, buckets, _merged(buckets), rest, invalid))


def _from_path(
    value: Any, definition: Mapping[str, Any], name: str, url: dict[str, Any], error: RestError
) -> RestError | None:
    """The error of ``value`` refused as out of bounds: ``error`` itself, but for a value
    from the route's path pattern (the URL bucket), checked as PHP reads it (a whole number
    past 64 bits as the nearest end of the range): WordPress answers a URL's id of thirty
    digits with the resource's own not-found (``rest_post_invalid_id``), not a 400."""
    if url.get(name, _NOTHING) is not value:
        return error
    return validate_value(within_64_bits(value), definition, name)


def _called(callback: Callable[..., Any], value: Any, request: Request, name: str) -> Any:
    """A callback's answer for argument ``name``: what it returns, or the RestError it
    raises."""
    try:
        return callback(value, request, name)
    except RestError as raised:
        return raised


async def _awaited(pending: Any) -> Any:
    """An awaitable answer of a callback, awaited (the RestError it raises, returned)."""
    try:
        return await pending
    except RestError as raised:
        return raised


def _sanitize_by(callback: Callable[..., Any], request: Request, name: str, chosen: Buckets) -> Any:
    """``sanitize_callback`` over every bucket of ``chosen`` holding ``name`` (not as null),
    each value replaced by its answer: None, the RestError of the first refusal, or a
    coroutine of either from an awaitable answer on; ``_NOTHING`` when no bucket holds a
    value to sanitise (the callback is not called)."""
    answer: Any = _NOTHING
    for position, bucket in enumerate(chosen):
        if name not in bucket or (value := bucket[name]) is None:
            continue
        result = _called(callback, value, request, name)
        if _awaitable(result):
            return _sanitize_by_later(callback, request, name, chosen[position:], result)
        if isinstance(result, RestError):
            return result
        bucket[name] = result
        answer = None
    return answer


async def _sanitize_by_later(
    callback: Callable[..., Any], request: Request, name: str, chosen: Buckets, pending: Any
) -> RestError | None:
    """:func:`_sanitize_by` from ``pending`` (the answer for the first bucket of ``chosen``)
    on."""
    result = await _awaited(pending)
    for bucket in chosen:
        if result is _NOTHING:
            if name not in bucket or (value := bucket[name]) is None:
                continue
            result = _called(callback, value, request, name)
            if _awaitable(result):
                result = await _awaited(result)
        if isinstance(result, RestError):
            return result
        bucket[name] = result
        result = _NOTHING
    return None


async def settle(result: RestError | Later | None) -> RestError | None:
    """A step's result, awaited when it is the coroutine of its rest."""
    if result is None or isinstance(result, RestError):
        return result
    return await result


async def check_params(
    request: Request, args: Mapping[str, Any], settled: Mapping[str, Any] = _NO_DEFAULTS
) -> RestError | None:
    """Required arguments, then the schema keywords and ``validate_callback`` of every
    argument supplied (a JSON ``null`` included), but for a value that is the argument's
    ``settled`` default (:class:`PreparedDefaults`). Returns the first failing stage's error
    (a 400), or None. (A handler's requests run its :class:`ArgPlan`.)"""
    if not args:
        return None
    plan = ArgPlan(args, PreparedDefaults({}, dict(settled)))
    return await settle(plan.check(request))


async def sanitize_params(
    request: Request, args: Mapping[str, Any], settled: Mapping[str, Any] = _NO_DEFAULTS
) -> RestError | None:
    """Run ``sanitize_callback`` (or the schema's type coercion) over every supplied argument
    in every bucket that holds it (the default bucket's ``settled`` values aside: sanitised
    at registration); the sanitised value replaces the original. (A handler's requests run
    its :class:`ArgPlan`.)"""
    if not args:
        return None
    plan = ArgPlan(args, PreparedDefaults({}, dict(settled)))
    return await settle(plan.sanitize(request))
