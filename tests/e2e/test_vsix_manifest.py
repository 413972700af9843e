"""The packaged .vsix has what the VS Code Marketplace and Open VSX ask of an extension: publisher,
repository, a PNG icon, categories, keywords, license, CHANGELOG and a README whose screenshots resolve."""

from __future__ import annotations

import json
import re
import struct
import zipfile

import pytest
from test_vscode import CLIENT, VSIX, _newest_source_mtime, _run, npm  # noqa: F401 (npm is a fixture)

MARKETPLACE_CATEGORIES = {
    "Programming Languages",
    "Snippets",
    "Linters",
    "Themes",
    "Debuggers",
    "Formatters",
    "Keymaps",
    "SCM Providers",
    "Other",
    "Extension Packs",
    "Language Packs",
    "Data Science",
    "Machine Learning",
    "Visualization",
    "Notebooks",
    "Education",
    "Testing",
    "AI",
    "Chat",
}
PACKAGE_INPUTS = [
    CLIENT / "README.md",
    CLIENT / "CHANGELOG.md",
    CLIENT / "images" / "icon.png",
    CLIENT / ".vscodeignore",
    CLIENT / "scripts" / "extension-readme.mjs",
]


@pytest.fixture(scope="module")
def vsix(npm: str) -> zipfile.ZipFile:  # noqa: F811
    newest = max(_newest_source_mtime(), *(p.stat().st_mtime for p in PACKAGE_INPUTS))
    if not VSIX.exists() or VSIX.stat().st_mtime < newest:
        _run(npm, "package")
    with zipfile.ZipFile(VSIX) as archive:
        yield archive


def test_packaged_manifest_has_what_the_marketplaces_require(vsix):
    manifest = json.loads(vsix.read("extension/package.json"))
    assert manifest["publisher"] and manifest["name"] == "fxlens" and manifest["license"] == "MIT"
    assert manifest["repository"]["url"].startswith("https://")
    assert manifest["bugs"]["url"].startswith("https://") and manifest["homepage"].startswith("https://")
    assert set(manifest["categories"]) <= MARKETPLACE_CATEGORIES and "Machine Learning" in manifest["categories"]
    assert {"pytorch", "torch.fx"} <= set(manifest["keywords"]) and len(manifest["keywords"]) <= 30
    icon = vsix.read(f"extension/{manifest['icon']}")
    assert icon[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", icon[16:24])
    assert width == height >= 128  # the Marketplace shows 128x128
    names = {n.lower() for n in vsix.namelist()}
    assert {"extension/changelog.md", "extension/license.txt", "extension/readme.md"} <= names or {
        "extension/changelog.md",
        "extension/license",
        "extension/readme.md",
    } <= names


def test_packaged_readme_shows_the_screenshots_from_the_repository(vsix):
    readme = next(vsix.read(n).decode() for n in vsix.namelist() if n.lower() == "extension/readme.md")
    manifest = json.loads(vsix.read("extension/package.json"))
    base = manifest["repository"]["url"].removesuffix(".git") + "/raw/HEAD/vscode-client/"
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert len(images) >= 5
    for url in images:
        assert url.startswith(base), url
        assert (CLIENT / url.removeprefix(base)).is_file(), url  # each points at a screenshot in the repository
