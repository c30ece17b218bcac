"""ktui: read, diff, compare and re-execute LLM GPU-kernel agent traces in the terminal."""

__version__ = "0.1.0"
