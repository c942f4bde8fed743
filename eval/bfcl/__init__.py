"""BFCL (Berkeley Function-Calling Leaderboard): AST and relevance categories."""
