"""One VS Code extension per platform, its server bundled (tools/build-dist).

The way Microsoft's Python tool extensions ship (black-formatter, isort, pylint: the tool and its
libraries in `bundled/libs`, run with the Python extension's interpreter), with one difference:
turnback's dependencies xxhash, zstandard, psutil and cbor2 are compiled, so each CPython version
gets its own folder. Inside the .vsix:

    bundled/libs/common/      what is the same for every version (turnback, pygls, ...: pure Python)
    bundled/libs/cp310/ ...   what differs (the compiled wheels installed for that version)
    bundled/tool/probe.py     run first by the extension: which version, and do the imports work
    bundled/wheels/turnback-V-py3-none-any.whl   for "Install into a private environment"

The wheels come from PyPI with `pip download --only-binary=:all: --platform ... --python-version ...`
(cached under the build cache), are installed offline with `pip install --target`, and the files
identical across versions move to common/. The extension sets PYTHONPATH to
`libs/cpXY:libs/common` and runs `python -m turnback serve` (editor-clients/vscode/src/bundled.ts).
"""
from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

_built_once: set[str] = set()
# the interpreter whose pip downloads and installs the bundled wheels (build-dist's own venv)
PIP_PYTHON = [sys.executable]


def run(argv: list, **kw) -> None:
    print("+", " ".join(str(a) for a in argv), flush=True)
    subprocess.run([str(a) for a in argv], check=True, **kw)


def _pip_target_args(platforms: list[str], py: str) -> list[str]:
    tag = "cp" + py.replace(".", "")
    args = ["--only-binary=:all:", "--implementation", "cp", "--python-version", py, "--abi", tag, "--abi", "abi3",
            "--abi", "none"]
    for p in platforms:
        args += ["--platform", p]
    return args


def fetch_wheels(wheel: Path, target: str, platforms: list[str], py: str, cache: Path) -> Path:
    """turnback's dependencies for one platform and Python version, from the registry (cached)."""
    folder = cache / "wheels" / target / ("cp" + py.replace(".", ""))
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("turnback-*.whl"):
        old.unlink()
    run([PIP_PYTHON[0], "-m", "pip", "download", "-q", "--dest", folder, "--find-links", folder,
         *_pip_target_args(platforms, py), wheel])
    return folder


def install_libs(wheel: Path, wheels: Path, platforms: list[str], py: str, dest: Path) -> None:
    run([PIP_PYTHON[0], "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels,
         "--no-compile", "--target", dest, *_pip_target_args(platforms, py), wheel])
    shutil.rmtree(dest / "bin", ignore_errors=True)  # the `turnback` script: the extension runs -m turnback


def _same_tree(a: Path, b: Path) -> bool:
    if a.is_file() or b.is_file():
        return a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    if any(not filecmp.cmp(a / f, b / f, shallow=False) for f in cmp.common_files):
        return False
    return all(_same_tree(a / d, b / d) for d in cmp.common_dirs)


def split_common(libs: Path, tags: list[str]) -> None:
    """Move what every version's folder holds identically into libs/common."""
    common = libs / "common"
    common.mkdir()
    first = libs / tags[0]
    for entry in sorted(first.iterdir()):
        if all((libs / t / entry.name).exists() and _same_tree(entry, libs / t / entry.name) for t in tags[1:]):
            entry.rename(common / entry.name)
            for t in tags[1:]:
                gone = libs / t / entry.name
                shutil.rmtree(gone) if gone.is_dir() else gone.unlink()


def build_extension(src: Path) -> None:
    if "built" in _built_once:
        return
    if not (src / "node_modules").is_dir():
        run(["npm", "ci", "--no-audit", "--no-fund"], cwd=src)
    run(["npm", "run", "build"], cwd=src)
    _built_once.add("built")


def stage(repo: Path, src: Path, stage_dir: Path, ver: str) -> None:
    shutil.rmtree(stage_dir, ignore_errors=True)
    stage_dir.mkdir(parents=True)
    manifest = json.loads((src / "package.json").read_text("utf-8"))
    manifest["version"] = ver
    manifest["scripts"].pop("vscode:prepublish", None)  # out/ is built already, by the real tsc
    (stage_dir / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    shutil.copy2(src / "package-lock.json", stage_dir / "package-lock.json")
    shutil.copy2(src / "README.md", stage_dir / "README.md")
    shutil.copy2(repo / "LICENSE", stage_dir / "LICENSE")
    shutil.copy2(repo / "CHANGELOG.md", stage_dir / "CHANGELOG.md")
    shutil.copytree(src / "media", stage_dir / "media")
    shutil.copytree(src / "out", stage_dir / "out", ignore=shutil.ignore_patterns("test", "*.map"))
    (stage_dir / ".vscodeignore").write_text("**/*.map\n**/__pycache__/**\n.vscodeignore\n", "utf-8")
    run(["npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"], cwd=stage_dir)


def build(repo: Path, out: Path, ver: str, wheel: Path, target: str, platforms: list[str], pythons: list[str],
          cache: Path) -> Path:
    src = repo / "editor-clients" / "vscode"
    build_extension(src)
    stage_dir = repo / "build" / f"vsix-{target}"
    stage(repo, src, stage_dir, ver)
    bundled = stage_dir / "bundled"
    libs = bundled / "libs"
    tags = []
    for py in pythons:
        tag = "cp" + py.replace(".", "")
        wheels = fetch_wheels(wheel, target, platforms, py, cache)
        install_libs(wheel, wheels, platforms, py, libs / tag)
        tags.append(tag)
    split_common(libs, tags)
    (bundled / "tool").mkdir()
    shutil.copy2(src / "python" / "probe.py", bundled / "tool" / "probe.py")
    (bundled / "wheels").mkdir()
    shutil.copy2(wheel, bundled / "wheels" / wheel.name)
    (bundled / "target.json").write_text(json.dumps({"target": target, "pythons": pythons, "version": ver}) + "\n")
    out.mkdir(parents=True, exist_ok=True)
    vsix = out / f"turnback-{target}-{ver}.vsix"
    if vsix.exists():
        vsix.unlink()
    vsce = src / "node_modules" / ".bin" / "vsce"
    run([vsce, "package", "--target", target, "--out", vsix], cwd=stage_dir,
        env={**os.environ, "VSCE_TELEMETRY": "off"})
    shutil.rmtree(stage_dir)
    return vsix
