"""Where fxlens keeps what it caches on disk: one folder per use under the user's cache folder (stdlib
only: the worker and the server import it)."""

from __future__ import annotations

import os


def user_cache_dir(name: str, env: str) -> str:
    """`$env` when set, else the user cache folder (`$XDG_CACHE_HOME` or `~/.cache`) + `fxlens/<name>`."""
    if os.environ.get(env):
        return os.environ[env]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fxlens", name)
