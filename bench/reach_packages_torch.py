"""The raw-torch side of bench/reach_packages.py, one process per installed package (nothing of fxlens loaded):

classes  import every model file of the package (bench/reach_corpus.py) and list its nn.Module classes;
truth    build each of the package's tiny models with its own public constructors (reach_corpus.py), run it
         once on small CPU tensors with a forward pre-hook on every submodule, and for the first instance
         of each model-file class in the built trees ask raw torch: does `torch.fx.symbolic_trace(instance)`
         succeed, does `torch.export.export(instance, args, kwargs, strict=False)` succeed on the inputs
         the run gave that instance;
rebuild  rebuild what fxlens reported it built for a class (bench/reach_rebuild.py) and list raw torch's
         nodes, for the node-by-node agreement.

python bench/reach_packages_torch.py < request.json > answer.json
"""

from __future__ import annotations

import ast
import contextlib
import copy
import glob
import importlib
import importlib.util
import signal
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import torch  # noqa: E402
from reach_corpus import PACKAGES  # noqa: E402
from reach_rebuild import error_text, rebuild, serve  # noqa: E402

TRACE_SECONDS = 120  # one symbolic_trace or export of one instance
BUILD_SECONDS = 300  # one builder: construction and the recording run


class Timeout(Exception):
    pass


@contextlib.contextmanager
def limit(seconds: int):
    def expired(signum, frame):
        raise Timeout(f"more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def package_folder(package) -> Path:
    return Path(importlib.util.find_spec(package.module).origin).parent


def model_files(package) -> list[Path]:
    folder = package_folder(package)
    found = {Path(p) for pattern in package.model_files for p in glob.glob(str(folder / pattern), recursive=True)}
    return sorted(p for p in found if p.name != "__init__.py" and p.is_file())


def module_name(path: Path) -> str:
    site = next(Path(p) for p in sys.path if p and path.is_relative_to(Path(p).resolve()) and "site-packages" in p)
    return ".".join(path.resolve().relative_to(site.resolve()).with_suffix("").parts)


def _syntactic_modules(path: Path, known: set) -> list[str]:
    """For a file that does not import: its classes whose bases name a Module (or a Module class of the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = [ast.unparse(b).split(".")[-1] for b in node.bases]
            if any(b.endswith("Module") or b in known or b in found for b in bases):
                found.append(node.name)
    return found


def classes(package) -> dict:
    """file -> {"module", "classes": [qualname...], "import_error"} for every model file of the package."""
    out, known = {}, set()
    for path in model_files(package):
        name = module_name(path)
        entry = {"module": name, "classes": [], "import_error": ""}
        try:
            with limit(BUILD_SECONDS):
                module = importlib.import_module(name)
            entry["classes"] = [
                c.__qualname__
                for c in vars(module).values()
                if isinstance(c, type) and issubclass(c, torch.nn.Module) and c.__module__ == name
            ]
            known.update(c.split(".")[-1] for c in entry["classes"])
        except BaseException as error:  # noqa: BLE001 - a file of the package that does not import: said so
            entry["import_error"] = error_text(error)
        out[str(path)] = entry
    for path, entry in out.items():
        if entry["import_error"]:
            entry["classes"] = _syntactic_modules(Path(path), known)
    return out


def scope(package) -> dict:
    def ids(batch: int = 2, length: int = 8, vocab: int = 100):
        return torch.randint(0, vocab, (batch, length))

    def image(channels: int = 3, size: int = 32, batch: int = 2):
        return torch.randn(batch, channels, size, size)

    namespace = {
        "torch": torch,
        "importlib": importlib,
        "ids": ids,
        "image": image,
        "m": importlib.import_module(package.module),
    }
    if package.module == "monai":
        namespace["n"] = importlib.import_module("monai.networks.nets")
    return namespace


def _record(model: torch.nn.Module, args: tuple, kwargs: dict) -> dict:
    """id(module) -> the (args, kwargs) of its first call while the model runs once."""
    seen: dict = {}
    handles = [
        m.register_forward_pre_hook(lambda mod, a, k: seen.setdefault(id(mod), (a, k)) and None, with_kwargs=True)
        for m in model.modules()
    ]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return seen


def _trace(instance, inputs) -> dict:
    entry: dict = {}
    for level in ("export", "fx"):
        if level == "export" and inputs is None:
            entry.update(export_ok=None, export_error="never called while the top model ran")
            continue
        try:
            subject = copy.deepcopy(instance)
        except Exception:  # noqa: BLE001 - traced as is
            subject = instance
        start = time.perf_counter()
        try:
            torch.manual_seed(0)
            with limit(TRACE_SECONDS):
                if level == "fx":
                    nodes = len(torch.fx.symbolic_trace(subject).graph.nodes)
                else:
                    nodes = len(
                        torch.export.export(subject, tuple(inputs[0]), dict(inputs[1]), strict=False).graph.nodes
                    )
            entry.update({f"{level}_ok": True, f"{level}_nodes": nodes})
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            entry.update({f"{level}_ok": False, f"{level}_error": error_text(error)})
        entry[f"{level}_seconds"] = round(time.perf_counter() - start, 2)
    return entry


def truth(package, files: dict) -> dict:
    """(file, qualname) -> raw torch's answer for the first instance of that class the builders made."""
    wanted = {(entry["module"], q): path for path, entry in files.items() for q in entry["classes"]}
    out: dict = {"classes": {}, "builders": {}}
    for builder in package.builders:
        try:
            torch.manual_seed(0)
            with limit(BUILD_SECONDS):
                namespace = scope(package)
                model = eval(builder.build, namespace)
                args, kwargs = eval(builder.args, namespace), eval(builder.kwargs, namespace)
                model.eval()
                seen = _record(model, args, kwargs)
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            out["builders"][builder.label] = error_text(error)
            continue
        out["builders"][builder.label] = ""
        for path, module in model.named_modules():
            key = (type(module).__module__, type(module).__qualname__)
            if key not in wanted:
                continue
            file = wanted[key]
            done = out["classes"].get(f"{file}::{key[1]}")
            if done and (done["called"] or id(module) not in seen):
                continue  # the first instance the run called wins; else the first instance
            inputs = seen.get(id(module))
            out["classes"][f"{file}::{key[1]}"] = {
                "file": file,
                "class": key[1],
                "builder": builder.label,
                "path": path or "(top)",
                "called": inputs is not None,
                **_trace(module, inputs),
            }
    return out


def rebuilds(jobs: list[dict]) -> list[dict]:
    out = []
    for job in jobs:
        try:
            with limit(BUILD_SECONDS):
                module = importlib.import_module(job["module"])
                names = {**vars(module), "torch": torch, "nn": torch.nn}
                out.append({"file": job["file"], "class": job["class"], **rebuild(job, names, job["file"])})
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            out.append(
                {
                    "file": job["file"],
                    "class": job["class"],
                    **{level: {"error": error_text(error)} for level in job["levels"]},
                }
            )
    return out


def answer(request: dict) -> dict:
    package = next(p for p in PACKAGES if p.name == request["package"])
    if request["mode"] == "rebuild":
        return {"rebuilds": rebuilds(request["jobs"])}
    files = classes(package)
    version = importlib.import_module("importlib.metadata").version(package.name)
    return {"version": version, "files": files, **truth(package, files)}


def main() -> None:
    torch.set_num_threads(1)
    serve(answer)


if __name__ == "__main__":
    main()
