"""``taskcrawler keys create|list|revoke|rotate-secret``: manage API keys straight in the database
(the way to make the first admin key; later ones can also be made over the API with an admin
key)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from taskcrawler.settings import Settings

if TYPE_CHECKING:  # imported when a command runs: `taskcrawler --help` stays fast
    from taskcrawler.service.keys import KeyService

T = TypeVar("T")


def add_keys_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = sub.add_parser(
        "keys",
        help="create, list and revoke API keys, rotate their webhook secrets",
        description="Manage API keys in TASKCRAWLER_DATABASE_URL. A key is shown once, at "
        "creation; only its hash is stored. Requests send it as `Authorization: Bearer <key>`; "
        "TASKCRAWLER_AUTH_REQUIRED=true makes it mandatory. Each key also has a webhook secret "
        "that signs its jobs' webhooks: shown once at creation, and again only when rotated.",
    )
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create",
        help="create a key and print it and its webhook secret (once)",
        description="Print the key on stdout and its webhook secret on stderr (or both as one "
        "JSON object with --json). Neither is shown again.",
    )
    create.add_argument("--name", required=True, help="who or what the key is for")
    create.add_argument("--admin", action="store_true", help="may manage keys over the API")
    create.add_argument("--requests-per-minute", type=int, help="rate limit of this key")
    create.add_argument("--max-pending-jobs", type=int, help="unfinished jobs at most")
    create.add_argument(
        "--json",
        action="store_true",
        help='print {"id", "key", "webhook_secret"} as JSON on stdout (for scripts)',
    )
    create.set_defaults(func=cmd_keys_create)
    listing = actions.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(func=cmd_keys_list)
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", help="the id shown by `keys list`")
    revoke.set_defaults(func=cmd_keys_revoke)
    rotate = actions.add_parser(
        "rotate-secret",
        help="give a key a new webhook secret and print it (once)",
        description="Replace a key's webhook secret and print the new one on stdout. Every "
        "webhook POST from now on is signed with it, retries of earlier deliveries included; "
        "the old secret stops working at once, so update the receiver next (a delivery it "
        "refuses meanwhile is retried with backoff).",
    )
    rotate.add_argument("key_id", help="the id shown by `keys list`")
    rotate.set_defaults(func=cmd_keys_rotate_secret)


def _with_keys(settings: Settings, action: Callable[[KeyService], Awaitable[T]]) -> T:
    from taskcrawler.bootstrap import key_service, storage_only
    from taskcrawler.cli.loop import run_async

    async def main() -> T:
        async with storage_only(settings, pool_size=1) as storage:
            return await action(key_service(storage, settings))

    return run_async(main())


def _on_key(
    settings: Settings, key_id: str, action: Callable[[KeyService], Awaitable[T]]
) -> T | None:
    """What ``action`` returns, or None when ``key_id`` is unknown or revoked (after saying so)."""
    from taskcrawler.domain.errors import NotFound

    try:
        return _with_keys(settings, action)
    except NotFound:
        sys.stderr.write(f"no active key {key_id}\n")
        return None


def cmd_keys_create(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from taskcrawler.contract.keys import KeyCreate

    try:
        # The rules POST /api/v1/keys applies: what one database stores, the other must too.
        wanted = KeyCreate(
            name=args.name,
            is_admin=args.admin,
            requests_per_minute=args.requests_per_minute,
            max_pending_jobs=args.max_pending_jobs,
        )
    except ValidationError as exc:
        for error in exc.errors():
            flag = "--" + str(error["loc"][0]).replace("_", "-")
            sys.stderr.write(f"{flag}: {error['msg']}\n")
        return 2
    new, key = _with_keys(
        settings,
        lambda keys: keys.create(
            wanted.name,
            is_admin=wanted.is_admin,
            requests_per_minute=wanted.requests_per_minute,
            max_pending_jobs=wanted.max_pending_jobs,
        ),
    )
    secret = key.webhook_secret or ""
    if args.json:
        document = {"id": key.id, "key": new.token, "webhook_secret": secret}
        sys.stdout.write(json.dumps(document) + "\n")
        return 0
    # The key alone on stdout, so `KEY=$(taskcrawler keys create ...)` keeps working.
    sys.stderr.write(f"created key {key.id} ({key.name}{', admin' if key.is_admin else ''}); ")
    sys.stderr.write("store it and its webhook secret now, neither is shown again:\n")
    sys.stdout.write(new.token + "\n")
    sys.stdout.flush()
    sys.stderr.write(f"webhook secret (verifies this key's webhook signatures): {secret}\n")
    return 0


def cmd_keys_list(settings: Settings, args: argparse.Namespace) -> int:
    for key in _with_keys(settings, lambda keys: keys.list_keys()):
        state = "revoked" if key.revoked_at else ("admin" if key.is_admin else "active")
        sys.stdout.write(f"{key.id}\t{state}\t{key.created_at:%Y-%m-%d %H:%M}\t{key.name}\n")
    return 0


def _malformed(key_id: str) -> bool:
    from taskcrawler.domain.keys import KEY_ID_PATTERN

    if re.match(KEY_ID_PATTERN, key_id):
        return False
    sys.stderr.write(f"not a key id: {key_id!r} (see `taskcrawler keys list`)\n")
    return True


def cmd_keys_revoke(settings: Settings, args: argparse.Namespace) -> int:
    if _malformed(args.key_id):
        return 2
    if _on_key(settings, args.key_id, lambda keys: _revoked(keys, args.key_id)) is None:
        return 1
    sys.stdout.write(f"revoked {args.key_id}\n")
    return 0


async def _revoked(keys: KeyService, key_id: str) -> str:
    await keys.revoke(key_id)
    return key_id


def cmd_keys_rotate_secret(settings: Settings, args: argparse.Namespace) -> int:
    if _malformed(args.key_id):
        return 2
    key = _on_key(settings, args.key_id, lambda keys: keys.rotate_webhook_secret(args.key_id))
    if key is None:
        return 1
    sys.stderr.write(
        f"new webhook secret of key {key.id} ({key.name}); the old one no longer signs "
        "anything. Store it now, it is not shown again:\n"
    )
    sys.stdout.write(f"{key.webhook_secret}\n")
    return 0
