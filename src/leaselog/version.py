"""leaselog's version (also `leaselog.__version__`; pyproject.toml carries the same)."""

VERSION = "0.1.0"
