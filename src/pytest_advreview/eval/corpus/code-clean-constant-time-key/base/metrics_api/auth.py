"""Ingest keys: each agent sends `Authorization: Bearer <key>` with every batch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Agent:
    agent_id: str
    key: str


class Unauthorized(Exception):
    pass


def authenticate(header: str | None, agents: dict[str, Agent], agent_id: str) -> Agent:
    """Return the agent when the header carries its key; raise Unauthorized otherwise."""
    agent = agents.get(agent_id)
    if agent is None or header is None or not header.startswith("Bearer "):
        raise Unauthorized("missing or malformed credentials")
    presented = header[len("Bearer ") :]
    if presented != agent.key:
        raise Unauthorized("missing or malformed credentials")
    return agent
