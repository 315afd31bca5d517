"""``svcrest user``: add, list, delete, set-password and app-password add|list|delete."""

from __future__ import annotations

import argparse
import contextlib

from svcrest.app import App
from svcrest.auth.users import ApplicationPassword, DuplicateUserError
from svcrest.cli.common import DEFAULT_HOME, CliError, generate_password, read_password
from svcrest.cli.site import existing_site, prepare_database_file, prepare_new_database
from svcrest.http.user import User


def cmd_user_add(args: argparse.Namespace) -> int:
    password = read_password() if args.password_stdin else generate_password()
    created = prepare_database_file(args.db)
    app = App(DEFAULT_HOME, store=args.db)
    prepare_new_database(app, args.db, created)
    try:
        user = app.users.create(args.login, password, roles=args.role)
    except DuplicateUserError as exc:
        raise CliError(str(exc), 1) from exc
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    finally:
        app.store.close()
    roles = ", ".join(user.roles)
    if args.password_stdin:
        print(f"Created user {user.login} ({roles}).")
    else:
        print(f"Created user {user.login} ({roles}) with password: {password}")
    return 0


def _existing_users(db: str | None) -> contextlib.AbstractContextManager[App]:
    """The site of ``db`` (which must exist), its user tables open; its store closed after."""
    return existing_site(App(DEFAULT_HOME, store=db), db)


def _user_named(app: App, login: str) -> User:
    user = app.users.get_by_login(login)
    if user is None:
        raise CliError(f"no user with the login {login!r}", 1)
    return user


def cmd_user_list(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        users = app.users.list_users()
    for user in users:
        print(f"{user.id}\t{user.login}\t{','.join(user.roles)}\t{user.display_name}")
    return 0


def cmd_user_delete(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        app.users.delete(user.id)
    print(f"Deleted user {user.login}.")
    return 0


def cmd_user_set_password(args: argparse.Namespace) -> int:
    password = read_password() if args.password_stdin else generate_password()
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        app.users.set_password(user.id, password)
    if args.password_stdin:
        print(f"Changed the password of {user.login}.")
    else:
        print(f"Changed the password of {user.login} to: {password}")
    return 0


def cmd_app_password_add(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        try:
            password, item = app.users.create_application_password(
                user.id, args.name, scope=args.scope, read_only=args.read_only
            )
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    scope = _scope_text(item)
    limited = f", {scope}" if scope else ""
    print(
        f"Created application password {item['name']!r} ({item['uuid']}{limited}) of {user.login}:"
    )
    print(password)
    return 0


def _scope_text(item: ApplicationPassword) -> str:
    """``scope: notes/v1, other/v1; read-only`` for a scoped password, "" for another."""
    parts = []
    if item["scope"] is not None:
        parts.append("scope: " + ", ".join(item["scope"]))
    if item["read_only"]:
        parts.append("read-only")
    return "; ".join(parts)


def cmd_app_password_list(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        items = app.users.list_application_passwords(user.id)
    for item in items:
        scope = _scope_text(item)
        print(f"{item['uuid']}\t{item['name']}" + (f"\t{scope}" if scope else ""))
    return 0


def cmd_app_password_delete(args: argparse.Namespace) -> int:
    with _existing_users(args.db) as app:
        user = _user_named(app, args.login)
        deleted = app.users.delete_application_password(user.id, args.uuid)
    if not deleted:
        raise CliError(f"{user.login} has no application password {args.uuid!r}", 1)
    print(f"Deleted application password {args.uuid} of {user.login}.")
    return 0
