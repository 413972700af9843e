"""Where `fxlens.showGraph` writes a graph document: a folder only this server can enter.

A fixed folder under /tmp can be made first by another local user, with a symlink at a file's
name: writing there once overwrote the link's target and changed its mode. Here the folder is made
by `tempfile.mkdtemp` (a fresh random name, mode 0700, so nobody else can plant anything in it),
each document is written to a new file (`mkstemp`: O_EXCL, never through an existing name) and
renamed over the old one, and the folder goes when the server does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

READ_ONLY = 0o444  # generated output: read-only so nobody edits it by mistake


class GraphFiles:
    def __init__(self) -> None:
        self._folder: str | None = None

    @property
    def folder(self) -> str:
        if self._folder is None or not os.path.isdir(self._folder):
            self._folder = tempfile.mkdtemp(prefix=f"fxlens-graphs-{os.getuid()}-")
            weakref.finalize(self, shutil.rmtree, self._folder, True)
        return self._folder

    def write(self, name: str, text: str) -> str:
        """The path of a read-only file named `name` (a plain file name) holding `text`."""
        name = os.path.basename(name) or "graph.txt"
        handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".writing-", suffix=".txt")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temporary, READ_ONLY)
            path = os.path.join(self.folder, name)
            os.replace(temporary, path)
        except BaseException:
            if os.path.lexists(temporary):
                os.unlink(temporary)
            raise
        return path
