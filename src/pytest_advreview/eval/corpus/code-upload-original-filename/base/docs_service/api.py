"""HTTP handlers; the framework has already authenticated `user`."""

from __future__ import annotations

from docs_service import storage


def post_document(user, request):
    doc_id = storage.save_upload(user.tenant_id, request.content_type, request.body)
    return 201, {"id": doc_id}


def get_document(user, doc_id):
    return 200, storage.open_document(user.tenant_id, doc_id)
