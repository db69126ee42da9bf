"""The seam's rule, checked: nothing outside `store/fs/` mutates the file system.

Every call in server/turnback that writes, renames, removes, makes a folder or changes a mode (the
`os`, `shutil` and `pathlib` calls, and `open` for writing) is in the seam, or in one of the places
named below, each with its reason. A new one elsewhere is invisible to every fault loop, so it fails
here until it goes through the seam (or joins this list with a reason a reviewer accepts).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "turnback"

OS = {"rename", "replace", "unlink", "remove", "rmdir", "removedirs", "mkdir", "makedirs", "chmod",
      "fchmod", "lchmod", "chown", "truncate", "ftruncate", "symlink", "link", "utime", "write",
      "mkfifo"}
SHUTIL = {"rmtree", "move", "copy", "copy2", "copyfile", "copytree", "copymode", "copystat",
          "chown"}
PATHLIB = {"write_text", "write_bytes", "touch", "symlink_to", "hardlink_to", "unlink", "rmdir",
           "mkdir", "rename", "chmod", "lchmod"}  # not `replace`: every str has one

# Where writing around the seam is the point. Module (under server/turnback) or folder -> why.
OUTSIDE_THE_SEAM = {
    "store/fs/": "the seam itself",
    "store/testing/crashfs.py": "the crash model (tests only): it undoes, at a simulated power cut, "
                                "what the seam wrote and did not sync",
    "capture/watcher.py": "os.write to its own wake-up pipe, not to a file",
    "bench/": "drives the product as its users do: it makes their workspaces and edits their files",
    "cli/demo.py": "`turnback demo` plays the agent and the user in a scratch workspace it owns",
    "cli/demo_agent.py": "the same, for `turnback demo --agent`",
    "cli/demo_fork.py": "the same, for the demo's fork",
    "hooks/replay.py": "a recorded agent's own writes and transcript, replayed in a scratch workspace",
}


def mutations(source: str):
    """(line, call) for each call of `source` that mutates the file system directly."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute):
            base = f.value.id if isinstance(f.value, ast.Name) else None
            if base == "os" and f.attr in OS or base == "shutil" and f.attr in SHUTIL:
                yield node.lineno, f"{base}.{f.attr}"
            elif base not in ("os", "shutil", "fs", "crashfs") and f.attr in PATHLIB:
                yield node.lineno, f".{f.attr}()"
        elif isinstance(f, ast.Name) and f.id == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) \
                    and set(mode.value) & set("wax+"):
                yield node.lineno, f"open(..., {mode.value!r})"


def _excepted(rel: str) -> bool:
    return any(rel == place or (place.endswith("/") and rel.startswith(place))
               for place in OUTSIDE_THE_SEAM)


def test_nothing_outside_the_seam_mutates_the_file_system():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not _excepted(rel):
            found += [f"{rel}:{line} {call}" for line, call in mutations(path.read_text())]
    assert found == []


def test_every_exception_still_needs_its_place():
    """An exception that no longer writes leaves the list, so it cannot come back unseen."""
    for place in OUTSIDE_THE_SEAM:
        paths = sorted((PACKAGE / place).rglob("*.py")) if place.endswith("/") else [PACKAGE / place]
        assert any(list(mutations(p.read_text())) for p in paths), place


def test_the_check_sees_each_way_of_writing():
    probe = ("import os, shutil\nfrom pathlib import Path\nos.rename('a', 'b')\nshutil.rmtree('c')\n"
             "Path('d').write_text('x')\nopen('e', 'ab')\nopen('f')\nfs.unlink('g')\n"
             "'h'.replace('i', 'j')\n")
    assert [call for _, call in mutations(probe)] == [
        "os.rename", "shutil.rmtree", ".write_text()", "open(..., 'ab')"]


def test_production_never_loads_the_fault_models():
    """The fault and crash models sit outside the seam (store/testing/): the server, the command line
    and a hook's fast path run without them, unless the environment of a crash test asks."""
    import os
    import subprocess
    import sys

    code = ("import sys, turnback.lsp.server, turnback.cli.main, turnback.hooks.fast, turnback.workbench\n"
            "print(sorted(m for m in sys.modules if m.startswith('turnback.store.testing')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    env["TURNBACK_FAIL_AT"] = "1000000"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert "turnback.store.testing.plan" in out
