"""Test support: a scripted LLM server and helpers that drive real peer agents."""
