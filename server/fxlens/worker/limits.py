"""Limits the worker's steps share, torch-free so that the failure rules can name them too."""

# real CPU weights only for models this small (elements of parameters + buffers, 200 MB as float32)
MAX_CPU_ELEMENTS = 50_000_000
