"""T-Eval: instruct, plan, reason, retrieve, understand and review, in json and str formats."""
