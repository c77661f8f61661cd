"""What a run trusts, decided once: whether its verdict gates and why (:mod:`.run`)."""
