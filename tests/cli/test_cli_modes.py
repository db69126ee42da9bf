"""`turnback rewind` and `turnback redo` put a file's permission bits back, a chmod alone included."""

from __future__ import annotations

import os
import stat

from cli_helpers import cli, ws  # noqa: F401  (fixtures)


def mode(p) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_rewind_and_redo_of_a_chmod_alone(cli, ws):
    tool = ws / "tool.sh"
    tool.write_text("#!/bin/sh\necho hi\n")
    os.chmod(tool, 0o644)
    cli.ok("turn", "begin", "--prompt", "write it")
    cli.ok("turn", "capture", "tool.sh")
    cli.ok("turn", "settle")
    cli.ok("turn", "begin", "--prompt", "make it executable")
    cli.ok("turn", "capture", "--phase", "before", "tool.sh")
    os.chmod(tool, 0o755)
    cli.ok("turn", "capture", "tool.sh")
    cli.ok("turn", "settle")
    head = cli.json("info")["headSeq"]

    cli.ok("rewind", "--before-prompt", "2", "--yes")
    assert mode(tool) == 0o644
    plan = cli.json("redo", "--head", str(head))
    assert [f["action"] for f in plan["plan"]["files"] if f["path"] == "tool.sh"] == ["restore"]
    doc = cli.json("redo", "--head", str(head), "--yes")
    assert doc["commit"]["status"] == "committed"
    assert mode(tool) == 0o755 and tool.read_text() == "#!/bin/sh\necho hi\n"
