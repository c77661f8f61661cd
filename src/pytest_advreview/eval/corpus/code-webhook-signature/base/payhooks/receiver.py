"""HTTP endpoint for the payment processor's webhooks."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from http import HTTPStatus

from payhooks.handlers import HANDLERS
from payhooks.settings import WEBHOOK_SECRET

log = logging.getLogger(__name__)


def _signature_ok(body: bytes, header: str) -> bool:
    expected = hmac.new(WEBHOOK_SECRET, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


def receive(body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """Return (status, text). The processor retries any answer other than 2xx."""
    header = headers.get("X-Pay-Signature", "")
    if not _signature_ok(body, header):
        log.warning("webhook with a bad signature refused")
        return HTTPStatus.UNAUTHORIZED, "bad signature"
    event = json.loads(body)
    handler = HANDLERS.get(event["type"])
    if handler is None:
        return HTTPStatus.OK, "ignored"
    handler(event["data"])
    return HTTPStatus.OK, "ok"
