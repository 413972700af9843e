"""Byte counts as a person reads them: `448 B`, `2.71 KB`, `481 MB`, `1.20 GB` (3 significant digits, binary
units as torch's memory tools use). A note that read "492084.3 KB" made the reader do the division.

Stdlib only, shared: the worker writes sizes into its notes with it, the renderers into lenses and hovers."""

from __future__ import annotations

_UNITS = ("KB", "MB", "GB", "TB")


def bytes_text(count: float) -> str:
    if count < 1000:
        return f"{int(count)} B"
    value = float(count)
    for index, unit in enumerate(_UNITS):
        value /= 1024
        # the most decimals that keep 3 significant digits once rounded (0.9997 MB is "1.00 MB")
        text = next(
            (t for t in (f"{value:.{d}f}" for d in (3, 2, 1)) if len(t.replace(".", "").lstrip("0")) <= 3),
            f"{value:.0f}",
        )
        # 1023.7 KB would print as "1024 KB" (four digits): the next unit says it in three
        if float(text) < 1000 or index == len(_UNITS) - 1:
            return f"{text} {unit}"
    raise AssertionError("unreachable")
