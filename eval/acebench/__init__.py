"""ACEBench: normal, special and agent families."""
