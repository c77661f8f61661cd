import pytest

from teams.invites import InviteInvalid, accept, create_invite


def test_fresh_invite_is_accepted_once():
    invite = create_invite(7, "a@example.com")
    assert accept(invite) == 7
    with pytest.raises(InviteInvalid):
        accept(invite)
