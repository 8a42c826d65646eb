"""API keys (admin): creating one, and a key as listed, with its secrets when just made."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from taskcrawler.contract.base import MAX_INT32, RequestModel, checked_url
from taskcrawler.domain.urls import MAX_URL_LENGTH


class KeyCreate(RequestModel):
    name: str = Field(min_length=1, max_length=200)
    is_admin: bool = False
    requests_per_minute: int | None = Field(None, ge=1, le=MAX_INT32)
    max_pending_jobs: int | None = Field(None, ge=1, le=MAX_INT32)
    callback_url: str | None = Field(None, max_length=MAX_URL_LENGTH)

    @field_validator("callback_url")
    @classmethod
    def _callback_acceptable(cls, url: str | None) -> str | None:
        return None if url is None else checked_url(url)


class KeyOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    is_admin: bool
    requests_per_minute: int | None
    max_pending_jobs: int | None
    callback_url: str | None
    created_at: datetime
    revoked_at: datetime | None


class KeyWithSecret(KeyOut):
    webhook_secret: str = Field(
        description="HMAC-SHA256 key that signs this key's webhooks. Shown once; store it now."
    )


class KeyCreated(KeyWithSecret):
    key: str = Field(description="The secret token. Shown once; store it now.")
