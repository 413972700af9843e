"""fxlens.showGraph's documents are written where no other local user can reach: a symlink planted
at the name fxlens writes to never leads the write to the link's target."""

from __future__ import annotations

import os
import stat
import tempfile

from fxlens.lsp.graph_files import GraphFiles


def _victim(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("someone else's file\n")
    victim.chmod(0o600)
    return victim


def test_a_symlink_planted_under_the_old_fixed_folder_is_never_written_through(tmp_path):
    victim = _victim(tmp_path)
    # what another user could prepare: the fixed folder fxlens used to write to, links at its names
    planted = os.path.join(tempfile.gettempdir(), f"fxlens-graphs-{os.getuid()}")
    os.makedirs(planted, exist_ok=True)
    link = os.path.join(planted, "model.Net.fx.txt")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(victim, link)
    files = GraphFiles()
    try:
        path = files.write("model.Net.fx.txt", "graph():\n")
    finally:
        os.unlink(link)
    assert victim.read_text() == "someone else's file\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    folder = os.stat(os.path.dirname(path))
    assert os.path.dirname(path) != planted and folder.st_uid == os.getuid()
    assert stat.S_IMODE(folder.st_mode) == 0o700
    assert open(path).read() == "graph():\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_a_symlink_at_the_name_inside_the_folder_is_replaced_not_followed(tmp_path):
    victim = _victim(tmp_path)
    files = GraphFiles()
    os.symlink(victim, os.path.join(files.folder, "model.Net.fx.txt"))
    path = files.write("model.Net.fx.txt", "graph():\n")
    assert victim.read_text() == "someone else's file\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert not os.path.islink(path) and open(path).read() == "graph():\n"


def test_writing_again_replaces_the_read_only_document_and_leaves_nothing_else(tmp_path):
    files = GraphFiles()
    files.write("a.txt", "one")
    path = files.write("a.txt", "two")
    assert open(path).read() == "two" and os.listdir(files.folder) == ["a.txt"]
    assert files.write("../../escape.txt", "x").startswith(files.folder + os.sep)


def test_the_folder_goes_with_the_server():
    files = GraphFiles()
    folder = files.folder
    files.write("a.txt", "one")
    del files
    assert not os.path.exists(folder)
