"""API keys: ``tc_<id>_<secret>``. Only the sha256 of the secret is stored."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

KEY_PREFIX = "tc"
#: A key id as :func:`generate_key` makes it (hex), with room to spare; the column holds 32.
KEY_ID_PATTERN = r"^[A-Za-z0-9-]{1,32}$"
_KEY_ID = re.compile(KEY_ID_PATTERN)
#: A secret as :func:`generate_key` makes it (URL-safe base64), with room to spare.
_SECRET = re.compile(r"[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    is_admin: bool
    created_at: datetime
    requests_per_minute: int | None = None
    max_pending_jobs: int | None = None
    callback_url: str | None = None
    webhook_secret: str | None = None
    revoked_at: datetime | None = None

    @property
    def owner(self) -> str:
        """The tenant its jobs belong to."""
        return self.id


#: The tenant of requests made without a key (when keys are not required).
ANONYMOUS_OWNER = ""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes a request: the tenant (owner) whose objects it sees, and its key if any."""

    owner: str = ANONYMOUS_OWNER
    key: ApiKey | None = None

    @property
    def is_admin(self) -> bool:
        return self.key is not None and self.key.is_admin


@dataclass(frozen=True, slots=True)
class NewKey:
    id: str
    secret: str

    @property
    def token(self) -> str:
        return f"{KEY_PREFIX}_{self.id}_{self.secret}"


def generate_key() -> NewKey:
    return NewKey(id=secrets.token_hex(8), secret=secrets.token_urlsafe(32))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def generate_webhook_secret() -> str:
    """The HMAC key that signs a key's webhooks: 256 random bits, as 64 hex characters."""
    return secrets.token_hex(32)


def parse_token(token: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed token, else None: nothing else reaches a query."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    key_id, secret = parts[1], parts[2]
    if not _KEY_ID.match(key_id) or not _SECRET.fullmatch(secret):
        return None
    return key_id, secret


def secret_matches(secret: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_hash)
