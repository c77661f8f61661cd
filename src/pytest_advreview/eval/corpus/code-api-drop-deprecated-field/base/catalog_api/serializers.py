"""JSON shapes of the public catalogue API (web shop, iOS and Android apps)."""

from __future__ import annotations

from typing import Any

from catalog_api.models import Product


def serialize_product(product: Product) -> dict[str, Any]:
    return {
        "id": product.id,
        "name": product.name,
        "price": product.price_cents / 100,
        "price_cents": product.price_cents,
        "currency": product.currency,
        "in_stock": product.stock > 0,
        "image_url": product.image_url,
    }


def serialize_page(products: list[Product], next_cursor: str | None) -> dict[str, Any]:
    return {"products": [serialize_product(p) for p in products], "next": next_cursor}
