"""The ``adversarial_review`` fixture: reviews from inside ordinary tests.

.. code-block:: python

    def test_migration_plan(adversarial_review):
        outcome = adversarial_review.plan("docs/plans/migration.md", fail_on="high")
        outcome.assert_approved()

The fixture is registered in every pytest run, so this module stays light: the review
machinery (:mod:`.ondemand`) is imported when a test asks for the fixture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .ondemand import AdversarialReview

__all__ = ["adversarial_review"]


@pytest.fixture
def adversarial_review(request: pytest.FixtureRequest) -> AdversarialReview:
    """Run adversarial reviews of plans and code changes from a test."""
    from .ondemand import AdversarialReview

    assert isinstance(request.node, pytest.Item)
    return AdversarialReview(request.config, request.node)
