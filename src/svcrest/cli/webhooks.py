"""``svcrest webhook``: add, list, delete and deliveries (the site's webhook subscriptions)."""

from __future__ import annotations

import argparse
import contextlib

from svcrest.app import App
from svcrest.cli.common import DEFAULT_HOME, CliError
from svcrest.cli.site import existing_site


def _existing_site(db: str | None) -> contextlib.AbstractContextManager[App]:
    """The site of ``db`` (which must exist); its store closed after."""
    return existing_site(App(DEFAULT_HOME, store=db), db)


def split_events(value: str) -> list[str]:
    """The event names of ``--events a,b`` (spaces around the commas ignored)."""
    return [name.strip() for name in value.split(",") if name.strip()]


def cmd_webhook_add(args: argparse.Namespace) -> int:
    with _existing_site(args.db) as app:
        try:
            subscription = app.webhooks.subscribe(
                args.url, split_events(args.events), secret=args.secret
            )
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    events = ",".join(subscription.events)
    shown = f"Created webhook {subscription.id} ({subscription.url}; {events})"
    if args.secret is None:  # SECURITY: a secret given on the command line is not echoed
        print(f"{shown} with secret: {subscription.secret}")
    else:
        print(f"{shown}.")
    return 0


def cmd_webhook_list(args: argparse.Namespace) -> int:
    with _existing_site(args.db) as app:
        subscriptions = app.webhooks.list()
    for subscription in subscriptions:  # never the secrets
        print(f"{subscription.id}\t{subscription.url}\t{','.join(subscription.events)}")
    return 0


def cmd_webhook_delete(args: argparse.Namespace) -> int:
    with _existing_site(args.db) as app:
        deleted = app.webhooks.delete(args.id)
    if not deleted:
        raise CliError(f"no webhook with the id {args.id}", 1)
    print(f"Deleted webhook {args.id} and its deliveries.")
    return 0


def cmd_webhook_deliveries(args: argparse.Namespace) -> int:
    with _existing_site(args.db) as app:
        deliveries = app.webhooks.deliveries(args.limit)
    for delivery in deliveries:
        print(
            f"{delivery.message_id}\t{delivery.event}\t{delivery.url}"
            f"\t{delivery.attempts}\t{delivery.status}"
        )
    return 0
