"""NL2API scoring: intent and slot P/R/F1, full-sequence match, completion rate by execution."""
