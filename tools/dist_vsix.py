"""One VS Code extension per platform, its server bundled (tools/build-dist).

The way Microsoft's Python tool extensions ship (black-formatter, isort, pylint: the tool and its
libraries in `bundled/libs`, run with the Python extension's interpreter), with one difference:
turnback's dependencies xxhash, zstandard, psutil and cbor2 are compiled, so each CPython version
gets its own folder. Inside the .vsix:

    bundled/libs/common/      what is the same for every version (turnback, pygls, ...: pure Python)
    bundled/libs/cp310/ ...   what differs (the compiled wheels installed for that version)
    bundled/tool/probe.py     run first by the extension: which version, and do the imports work
    bundled/wheels/turnback-V-py3-none-any.whl   for "Install into a private environment"

The wheels come from PyPI as binaries only (`uv pip install --target --python-version
--python-platform --only-binary :all:`, cached under the build cache), and the files identical across
versions move to common/. On a Linux machine of the target's architecture, the bundle is tried with
each bundled version this machine has (pip check, `turnback --version`, one `turnback demo`) before
the .vsix is made. The extension sets PYTHONPATH to `libs/cpXY:libs/common` and runs `python -m turnback serve` (editor-clients/vscode/src/bundled.ts).
"""
from __future__ import annotations

import filecmp
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_built_once: set[str] = set()
# build-dist's own venv's python (uv is beside it)
TOOL_PYTHON = [sys.executable]


def run(argv: list, **kw) -> None:
    print("+", " ".join(str(a) for a in argv), flush=True)
    subprocess.run([str(a) for a in argv], check=True, **kw)


# uv, not pip: pip evaluates environment markers against the interpreter running it, whatever
# --python-version says, so a bundle for 3.10 built on 3.11 lacked tomli and exceptiongroup
# (`tomli; python_version < "3.11"`). `uv pip install --python-version --python-platform` resolves for
# the target. Both come from PyPI into build-dist's own venv.
UV_PLATFORMS = {"linux-x64": "x86_64-manylinux_2_17", "linux-arm64": "aarch64-manylinux_2_17"}


def install_libs(wheel: Path, target: str, py: str, dest: Path, cache: Path) -> None:
    """turnback and its dependencies for one platform and CPython version, as wheels from the
    registry only (cached in the build cache), unpacked into dest."""
    uv = Path(TOOL_PYTHON[0]).with_name("uv")
    run([uv, "pip", "install", "--quiet", "--target", dest, "--python-version", py, "--python-platform",
         UV_PLATFORMS[target], "--only-binary", ":all:", "--no-compile", wheel],
        env={**os.environ, "UV_CACHE_DIR": str(cache / "uv")})
    shutil.rmtree(dest / "bin", ignore_errors=True)  # the `turnback` script: the extension runs -m turnback


def local_python(py: str) -> str | None:
    """An interpreter of version py on this machine (on PATH, or pyenv's), to try the bundle with."""
    candidates = [shutil.which(f"python{py}")] + sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{py}.*/bin/python{py}")))
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip() == py:
            return candidate
    return None


def _bundled_names(libs: Path, tag: str) -> set[str]:
    """The distributions in the bundle, normalized as pip check prints them (lowercase, dashes)."""
    names = set()
    for folder in (libs / tag, libs / "common"):
        for info in folder.glob("*.dist-info"):
            names.add(info.name[: -len(".dist-info")].rsplit("-", 1)[0].lower().replace("_", "-"))
    return names


def _pip_check(python: str, env: dict, libs: Path, tag: str) -> str:
    """`pip check` of the bundle with that version (markers evaluated by it: the 3.10 bundle once lacked
    tomli). Only lines about the bundle's own distributions count: a system Python's other packages
    are not ours to judge. No pip in that Python: skipped, said so."""
    if subprocess.run([python, "-c", "import pip"], env=env, capture_output=True).returncode != 0:
        return "no pip check (no pip in it)"
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([python, "-m", "pip", "check"], cwd=scratch, env=env, capture_output=True, text=True)
    ours = _bundled_names(libs, tag)
    broken = [line for line in done.stdout.splitlines()
              if line.split(" ", 1)[0].lower().replace("_", "-") in ours]
    if broken:
        raise SystemExit(f"build-dist: the {tag} bundle is incomplete for {python}:\n" + "\n".join(broken))
    return "pip check"


def smoke(libs: Path, tags: list[str], pythons: list[str]) -> None:
    """Each bundled version this machine has: pip check and `turnback --version`; `turnback demo` with
    the first of them (one demo proves the bundle's layout; the checks prove each version's contents)."""
    demo_done = False
    for py, tag in zip(pythons, tags):
        python = local_python(py)
        if not python:
            print(f"build-dist: no Python {py} here: the {tag} bundle is not tried", flush=True)
            continue
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(libs / tag), str(libs / "common")]),
               "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        passed = [_pip_check(python, env, libs, tag)]
        runs = [["--version"]] + ([] if demo_done else [["demo"]])
        for args in runs:
            with tempfile.TemporaryDirectory() as scratch:
                done = subprocess.run([python, "-m", "turnback", *args], cwd=scratch, env=env,
                                      capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"build-dist: the {tag} bundle fails `turnback {args[0]}` with {python}:\n"
                                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
            passed.append(f"turnback {args[0]}")
        demo_done = True
        print(f"build-dist: the {tag} bundle passes {', '.join(passed)} with {python}", flush=True)


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


def _host_target() -> str:
    return {"x86_64": "linux-x64", "aarch64": "linux-arm64"}.get(os.uname().machine, "") if sys.platform == "linux" else ""


def build(repo: Path, out: Path, ver: str, wheel: Path, target: str, pythons: list[str], cache: Path) -> Path:
    src = repo / "editor-clients" / "vscode"
    build_extension(src)
    stage_dir = repo / "build" / f"vsix-{target}"
    stage(repo, src, stage_dir, ver)
    bundled = stage_dir / "bundled"
    libs = bundled / "libs"
    tags = []
    for py in pythons:
        tag = "cp" + py.replace(".", "")
        install_libs(wheel, target, py, libs / tag, cache)
        tags.append(tag)
    split_common(libs, tags)
    if target == _host_target():
        smoke(libs, tags, pythons)
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
