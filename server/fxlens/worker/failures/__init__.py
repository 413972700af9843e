"""Exceptions become diagnostics a person can act on: where (the user's innermost frame), what it means
and the fix that works (rules.py: one rule per failure real code hits), and the limits every step
shares.

May import: fxlens's shared modules only (report, lines). A new failure rule goes in rules.py.
"""
