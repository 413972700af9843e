"""The git a graph diff needs: the repository's root, the Python files changed since a ref, and that
ref's tree written to a folder (so the old version of a file imports the old versions of its siblings)."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile


class GitError(Exception):
    """Not a repository, an unknown ref, no git: a usage error."""


def _git(args: list[str], cwd: str) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=300)
    except FileNotFoundError as error:
        raise GitError("git is not installed (fxlens diff compares against a git ref)") from error
    if done.returncode != 0:
        raise GitError(done.stderr.decode(errors="replace").strip() or f"git {' '.join(args)} failed")
    return done.stdout


def toplevel(cwd: str) -> str:
    return _git(["rev-parse", "--show-toplevel"], cwd).decode().strip()


def resolve(ref: str, root: str) -> str:
    try:
        return _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root).decode().strip()
    except GitError:
        raise GitError(f"unknown git ref: {ref}") from None


def changed_python_files(commit: str, root: str) -> dict[str, str]:
    """Repository-relative path -> status letter (`A`, `M`, `D`) of the `.py` files that differ between
    `commit` and the working tree, untracked files (not ignored) included as added."""
    changes: dict[str, str] = {}
    raw = _git(["diff", "--name-status", "--no-renames", "-z", commit, "--", "*.py"], root).decode().split("\0")
    for status, path in zip(raw[0::2], raw[1::2]):
        if path:
            changes[path] = status[:1]
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard", "--", "*.py"], root).decode().split("\0")
    changes.update({path: "A" for path in untracked if path})
    return changes


def export_tree(commit: str, root: str, folder: str) -> None:
    """`commit`'s files into `folder` (git archive: no worktree registered, nothing left in the repository)."""
    archive = _git(["archive", "--format=tar", commit], root)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        try:
            tar.extractall(folder, filter="data")
        except TypeError:  # a Python before the extraction filters (3.10.11, 3.11.3): git's own archive
            tar.extractall(folder)
    os.makedirs(folder, exist_ok=True)
