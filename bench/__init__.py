"""fxlens's benchmarks: `python -m bench` lists them, `python -m bench NAME [ARGS...]` runs one (README.md)."""
