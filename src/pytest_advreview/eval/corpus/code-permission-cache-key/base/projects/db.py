"""Queries behind the permission model (one round trip each)."""

from __future__ import annotations

from projects.conn import query


def fetch_role(user_id: int, project_id: int) -> str | None:
    row = query(
        "SELECT role FROM memberships WHERE user_id = %s AND project_id = %s",
        (user_id, project_id),
    )
    return row[0][0] if row else None


def fetch_role_grants(role: str) -> list[str]:
    return [r[0] for r in query("SELECT permission FROM role_grants WHERE role = %s", (role,))]


def fetch_overrides(user_id: int, project_id: int) -> list[tuple[str, bool]]:
    return query(
        "SELECT permission, allowed FROM overrides WHERE user_id = %s AND project_id = %s",
        (user_id, project_id),
    )
