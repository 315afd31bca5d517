"""The curated public API (DESIGN §2)."""

from __future__ import annotations

import svcrest
import svcrest.client

CONTRACT = {
    "App",
    "Request",
    "Response",
    "RestError",
    "RestServer",
    "Hooks",
    "DoingItWrong",
    "REST_API_VERSION",
    "REST_API_REL",
    "rest_parse_date",
    "rest_get_date_with_gmt",
    "rest_ensure_response",
    "is_rest_request",
    "paginate",
    "public",
    "Arg",
    "Serializer",
    "msgpack_serializer",
    "current_user",
    "RestController",
    "rest_get_endpoint_args_for_schema",
    "rest_filter_response_by_context",
    "rest_is_field_included",
    "StoreCollection",
}


def test_all_is_the_contract_and_sorted() -> None:
    assert set(svcrest.__all__) == CONTRACT
    assert list(svcrest.__all__) == sorted(svcrest.__all__)


def test_every_name_in_all_is_exported() -> None:
    for name in svcrest.__all__:
        assert hasattr(svcrest, name), name


def test_constants() -> None:
    assert svcrest.REST_API_VERSION == "2.0"
    assert svcrest.REST_API_REL == "https://api.w.org/"


def test_doing_it_wrong_is_a_user_warning() -> None:
    assert issubclass(svcrest.DoingItWrong, UserWarning)


def test_client_names() -> None:
    assert sorted(svcrest.client.__all__) == [
        "AsyncChangeStream",
        "AsyncRestProxy",
        "ChangeEvent",
        "ChangeStream",
        "ChangesExpired",
        "Operation",
        "ProxyError",
        "RestProxy",
        "ResultSet",
    ]
    for name in svcrest.client.__all__:
        assert getattr(svcrest.client, name).__module__.startswith("svcrest.client.")
