"""GTA: step-by-step and end-to-end metrics with whitelist/blacklist answers."""
