"""A buffer becomes a live module: where the file sits in Python's namespace, the import hook that serves
editor buffers, what the execution policy runs, what the source says about each class (span, directive),
and each class's fingerprint.

May import: fxlens's shared modules only (report, lines, outline). Knows nothing of building or tracing.
"""
