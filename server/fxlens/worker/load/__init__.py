"""A buffer becomes a live module: where the file sits in Python's namespace, the import hook that serves
editor buffers, what the execution policy runs, what the source says about each class (span, directive),
and each class's fingerprint.

May import: failures (a package `__init__` that fails is described as one) and fxlens's shared modules.
Knows nothing of construction or tracing.
"""
