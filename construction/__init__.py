"""Construction: turn sources (NL2SQL pairs, tool catalogs, models) into benchsmith samples."""
