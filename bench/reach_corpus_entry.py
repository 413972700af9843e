"""How a package enters the installed-package corpus (bench/reach_corpus.py): its files and its builders."""

from __future__ import annotations

from typing import NamedTuple

# a language model's input: token ids from the `ids()` helper of the builders' namespace (bench/reach_packages_torch.py)
IDS = "(ids(),)"


class Builder(NamedTuple):
    label: str
    build: str
    args: str = "()"
    kwargs: str = "{}"


class Package(NamedTuple):
    name: str  # the distribution, as pip knows it
    module: str  # the import name
    model_files: tuple  # globs under the package folder
    builders: tuple
