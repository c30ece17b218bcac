"""Screens of the ktui app."""
