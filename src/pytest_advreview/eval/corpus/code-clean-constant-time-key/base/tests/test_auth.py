import pytest

from metrics_api.auth import Agent, Unauthorized, authenticate

AGENTS = {"a1": Agent("a1", "k-123")}


def test_right_key_is_accepted():
    assert authenticate("Bearer k-123", AGENTS, "a1").agent_id == "a1"


@pytest.mark.parametrize("header", [None, "", "Basic k-123", "Bearer k-124", "Bearer "])
def test_anything_else_is_refused(header):
    with pytest.raises(Unauthorized):
        authenticate(header, AGENTS, "a1")


def test_unknown_agent_is_refused():
    with pytest.raises(Unauthorized):
        authenticate("Bearer k-123", AGENTS, "a2")
