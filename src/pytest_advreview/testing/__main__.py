"""``python -m pytest_advreview.testing install-claude PREFIX``: the testing kit's command line.

A package ``__main__`` rather than ``python -m pytest_advreview.testing.tools``: the
package imports ``tools`` itself, and runpy warns when the module it runs is already
imported.
"""

from __future__ import annotations

from .tools import main

raise SystemExit(main())
