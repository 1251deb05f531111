"""RAWP-DPS adapter for xcsh-family RPC agents."""
