"""Where tenants' uploaded documents live on disk."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

ROOT = Path(os.environ.get("DOCS_ROOT", "/srv/docs"))
MAX_BYTES = 25 * 1024 * 1024
ALLOWED_TYPES = {"application/pdf", "image/png", "image/jpeg"}


class UploadRejected(Exception):
    pass


def tenant_dir(tenant_id: int) -> Path:
    return ROOT / f"tenant-{tenant_id}"


def save_upload(tenant_id: int, content_type: str, data: bytes) -> str:
    """Store one upload and return its document id."""
    if content_type not in ALLOWED_TYPES:
        raise UploadRejected(f"type {content_type} is not accepted")
    if len(data) > MAX_BYTES:
        raise UploadRejected("file is larger than 25 MB")
    doc_id = uuid.uuid4().hex
    folder = tenant_dir(tenant_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / doc_id).write_bytes(data)
    return doc_id


def open_document(tenant_id: int, doc_id: str) -> bytes:
    if not doc_id.isalnum():
        raise FileNotFoundError(doc_id)
    return (tenant_dir(tenant_id) / doc_id).read_bytes()
