"""What a user may do in a project: the role's grants plus per-user overrides."""

from __future__ import annotations

from projects.db import fetch_overrides, fetch_role, fetch_role_grants


def permissions_for(user_id: int, project_id: int) -> frozenset[str]:
    role = fetch_role(user_id, project_id)
    if role is None:
        return frozenset()
    granted = set(fetch_role_grants(role))
    for name, allowed in fetch_overrides(user_id, project_id):
        if allowed:
            granted.add(name)
        else:
            granted.discard(name)
    return frozenset(granted)


def require(user_id: int, project_id: int, permission: str) -> None:
    if permission not in permissions_for(user_id, project_id):
        raise PermissionError(f"user {user_id} may not {permission} in project {project_id}")
