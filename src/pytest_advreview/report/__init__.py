"""Reports built from review results: the terminal operator summary, the JSON, markdown and
SARIF 2.1.0 files, and the GitHub Actions annotations and step summary."""
