"""Saved views, built-in presets and the Work list's column chooser: the console's own
records about how people look at the store, kept in Django's tables, never in it."""
