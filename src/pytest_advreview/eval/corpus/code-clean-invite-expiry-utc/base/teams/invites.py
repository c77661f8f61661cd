"""Invitations to join a team: a link that works for seven days, once."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

VALID_FOR = timedelta(days=7)


@dataclass
class Invite:
    team_id: int
    email: str
    token: str
    # Naive UTC, like every timestamp column of this database.
    expires_at: datetime
    used: bool = False


class InviteInvalid(Exception):
    pass


def create_invite(team_id: int, email: str) -> Invite:
    return Invite(team_id, email, secrets.token_urlsafe(32), datetime.utcnow() + VALID_FOR)


def is_expired(invite: Invite) -> bool:
    return datetime.now() >= invite.expires_at


def accept(invite: Invite) -> int:
    """Mark the invite used and return the team to join; the caller saves the invite."""
    if invite.used or is_expired(invite):
        raise InviteInvalid("this invitation has expired or was already used")
    invite.used = True
    return invite.team_id
