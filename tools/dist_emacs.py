"""The Emacs package as a package.el archive (tools/build-dist): `archive-contents` and
`turnback-VERSION.tar`, installable with `package-install` once the folder is in `package-archives`.

The tar holds every `turnback*.el` of editor-clients/emacs (not the tests), a `turnback-pkg.el`
stamped with the release's version, and the release's wheel, which `turnback-install-server` installs
from when it finds it beside the package (editor-clients/emacs/turnback-install.el).
"""
from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

SUMMARY = "Rewind and Redo for AI coding-agent sessions"
KEYWORDS = ("tools", "convenience", "processes")
URL = "https://github.com/turnback/turnback"


def requirements(main_file: Path) -> list[tuple[str, str]]:
    """The `Package-Requires` header of the main file, as (package, version) pairs."""
    header = re.search(r"^;; Package-Requires: (.*)$", main_file.read_text("utf-8"), re.M)
    if not header:
        raise SystemExit(f"build-dist: no Package-Requires header in {main_file}")
    return re.findall(r'\(([\w-]+) "([\d.]+)"\)', header.group(1))


def _elisp_version(v: str) -> str:
    return "(" + " ".join(str(int(x)) for x in v.split(".")) + ")"


def pkg_file(ver: str, reqs: list[tuple[str, str]]) -> str:
    req = " ".join(f'({name} "{v}")' for name, v in reqs)
    keywords = " ".join(f'"{k}"' for k in KEYWORDS)
    return (f';;; turnback-pkg.el --- package description of turnback.el  -*- lexical-binding: t; no-byte-compile: t -*-\n'
            f'(define-package "turnback" "{ver}"\n  "{SUMMARY}"\n  \'({req})\n'
            f'  :keywords \'({keywords})\n  :url "{URL}")\n;;; turnback-pkg.el ends here\n')


def archive_contents(ver: str, reqs: list[tuple[str, str]]) -> str:
    req = " ".join(f"({name} {_elisp_version(v)})" for name, v in reqs)
    keywords = " ".join(f'"{k}"' for k in KEYWORDS)
    return (f'(1\n (turnback . [{_elisp_version(ver)} ({req}) "{SUMMARY}" tar\n'
            f'              ((:keywords {keywords}) (:url . "{URL}"))]))\n')


def build(repo: Path, out: Path, ver: str, wheel: Path) -> Path:
    source = repo / "editor-clients" / "emacs"
    reqs = requirements(source / "turnback.el")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("turnback-*.tar"):
        old.unlink()
    tar_path = out / f"turnback-{ver}.tar"
    top = f"turnback-{ver}"
    files = sorted(p for p in source.glob("turnback*.el") if p.name != "turnback-pkg.el")
    with tarfile.open(tar_path, "w", format=tarfile.USTAR_FORMAT) as tar:
        def add_bytes(name: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))

        for path in files:
            add_bytes(path.name, path.read_bytes())
        add_bytes("turnback-pkg.el", pkg_file(ver, reqs).encode("utf-8"))
        add_bytes(wheel.name, wheel.read_bytes())
    (out / "archive-contents").write_text(archive_contents(ver, reqs), "utf-8")
    print(f"build-dist: emacs archive {tar_path} ({len(files)} files and the wheel)", flush=True)
    return tar_path
