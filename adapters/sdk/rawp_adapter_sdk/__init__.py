"""RAWP-DPS adapter for in-process agent cores."""
