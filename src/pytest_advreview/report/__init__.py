"""Reports built from review results: the terminal operator summary (more to come)."""
