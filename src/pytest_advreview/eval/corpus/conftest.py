"""The bundled corpus is data: its cases' own tests are material for the reviewer.

A copy of this package inside a project (a vendored folder, a virtualenv pytest does not
recognise) would otherwise have pytest collect them as the project's tests, and fail on
their imports.
"""

collect_ignore_glob = ["*"]
