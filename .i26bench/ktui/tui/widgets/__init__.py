"""Widgets of the replay app: they render, they do no I/O."""
