"""``python -m pytest_advreview.testing``: the testing kit's command line.

``serve`` starts the playground (:mod:`.playground`, docs/try-it.md); ``install-claude
PREFIX`` installs the pinned Claude Code (:mod:`.tools`).  A package ``__main__`` rather
than ``python -m pytest_advreview.testing.tools``: the package imports ``tools`` itself,
and runpy warns when the module it runs is already imported.
"""

from __future__ import annotations

import argparse

from . import playground, tools

parser = argparse.ArgumentParser(
    prog="python -m pytest_advreview.testing", description="The pytest-advreview testing kit."
)
commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
playground.add_arguments(
    commands.add_parser(
        "serve",
        help="a scripted reviewer on 127.0.0.1 to try the plugin in your repository, offline",
        description="Start the scripted reviewer and print the settings that point "
        "pytest-advreview's Codex at it; serve until Ctrl-C.",
    )
)
install = commands.add_parser("install-claude", help="install the pinned Claude Code into PREFIX")
install.add_argument("prefix", metavar="PREFIX")
args = parser.parse_args()
if args.command == "serve":
    raise SystemExit(playground.serve(args))
raise SystemExit(tools.main(["install-claude", args.prefix]))
