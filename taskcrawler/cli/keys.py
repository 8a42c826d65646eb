"""``taskcrawler keys create|list|revoke``: manage API keys straight in the database (the way to
make the first admin key; later ones can also be made over the API with an admin key)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from taskcrawler.settings import Settings

if TYPE_CHECKING:  # imported when a command runs: `taskcrawler --help` stays fast
    from taskcrawler.storage.ports import KeyRepository

T = TypeVar("T")


def add_keys_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser(
        "keys",
        help="create, list and revoke API keys",
        description="Manage API keys in TASKCRAWLER_DATABASE_URL. A key is shown once, at "
        "creation; only its hash is stored. Requests send it as `Authorization: Bearer <key>`; "
        "TASKCRAWLER_AUTH_REQUIRED=true makes it mandatory.",
    )
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a key and print it (once)")
    create.add_argument("--name", required=True, help="who or what the key is for")
    create.add_argument("--admin", action="store_true", help="may manage keys over the API")
    create.add_argument("--requests-per-minute", type=int, help="rate limit of this key")
    create.add_argument("--max-pending-jobs", type=int, help="unfinished jobs at most")
    create.set_defaults(func=cmd_keys_create)
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(func=cmd_keys_list)
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", help="the id shown by `keys list`")
    revoke.set_defaults(func=cmd_keys_revoke)


def _with_keys(settings: Settings, action: Callable[[KeyRepository], Awaitable[T]]) -> T:
    from taskcrawler.bootstrap import storage_only
    from taskcrawler.cli.main import run_async

    async def main() -> T:
        async with storage_only(settings, pool_size=1) as storage:
            return await action(storage.keys)

    return run_async(main())


def cmd_keys_create(settings: Settings, args: argparse.Namespace) -> int:
    new, key = _with_keys(
        settings,
        lambda keys: keys.create(
            args.name,
            is_admin=args.admin,
            requests_per_minute=args.requests_per_minute,
            max_pending_jobs=args.max_pending_jobs,
        ),
    )
    sys.stderr.write(f"created key {key.id} ({key.name}{', admin' if key.is_admin else ''}); ")
    sys.stderr.write("store it now, it is not shown again:\n")
    sys.stdout.write(new.token + "\n")
    return 0


def cmd_keys_list(settings: Settings, args: argparse.Namespace) -> int:
    for key in _with_keys(settings, lambda keys: keys.list_keys()):
        state = "revoked" if key.revoked_at else ("admin" if key.is_admin else "active")
        sys.stdout.write(f"{key.id}\t{state}\t{key.created_at:%Y-%m-%d %H:%M}\t{key.name}\n")
    return 0


def cmd_keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    if _with_keys(settings, lambda keys: keys.revoke(args.key_id)):
        sys.stdout.write(f"revoked {args.key_id}\n")
        return 0
    sys.stderr.write(f"no active key {args.key_id}\n")
    return 1
