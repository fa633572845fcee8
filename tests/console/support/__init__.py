"""Helpers the console tests share (never imported from a test module)."""
