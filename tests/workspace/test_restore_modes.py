"""Defect 6: images carry their permission bits. A deleted 0600 `.env` comes back 0600, an agent's
`chmod +x` is rewound, the candidate names each file's mode, and stores of format 1 read as before."""

import os
import stat

from turnback.store import records
from turnback.store.layout import FORMAT_VERSION, Store


def mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_a_deleted_private_file_comes_back_with_its_mode(agent):
    a = agent()
    env = a.root / ".env"
    env.write_text("TOKEN=secret\n")
    os.chmod(env, 0o600)
    a.turn("one", {})  # the first sweep sees .env at 0600
    a.turn("two", {".env": None})  # the agent deletes it
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}})
    planned = {f["path"]: f for f in c["files"]}
    assert planned[".env"]["action"] == "restore" and planned[".env"]["mode"] == 0o600
    out = a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 2},
                              "planHash": c["planHash"]})
    assert out["status"] == "committed"
    assert env.read_text() == "TOKEN=secret\n" and mode(env) == 0o600  # was 0644 (or 0666)


def test_an_agents_chmod_is_rewound(agent):
    a = agent()
    script = a.root / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    os.chmod(script, 0o644)
    a.turn("one", {})
    a.begin("make it executable")
    a.wb.turns.capture({"uris": [a.uri("run.sh")], "phase": "before"})
    os.chmod(script, 0o755)
    a.wb.turns.capture({"uris": [a.uri("run.sh")]})
    a.settle()
    entry = a.wb.state.turn(2).files["run.sh"]
    assert (entry.before_mode, entry.after_mode) == (0o644, 0o755)
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}})
    planned = {f["path"]: f for f in c["files"]}
    assert planned["run.sh"]["action"] == "restore" and planned["run.sh"]["mode"] == 0o644
    a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 2}, "planHash": c["planHash"]})
    assert mode(script) == 0o644 and script.read_text() == "#!/bin/sh\necho hi\n"


def test_a_sweep_sees_a_chmod_and_modes_survive_publication(agent):
    a = agent()
    tool = a.root / "tool"
    tool.write_text("x")
    os.chmod(tool, 0o640)
    a.turn("one", {})
    a.begin("two")
    os.chmod(tool, 0o750)  # no capture hook: only the settle sweep sees it
    a.settle()
    assert a.wb.state.turn(2).files["tool"].after_mode == 0o750
    a.reopen()  # published and read back: the modes are in the store
    assert a.wb.state.known.mode("tool") == 0o750
    assert a.wb.state.turn(2).files["tool"].before_mode == 0o640
    c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 2}})
    a.wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": 2}, "planHash": c["planHash"]})
    assert mode(tool) == 0o640


def test_a_format_1_store_opens_and_keeps_todays_behaviour(agent, tmp_path):
    assert FORMAT_VERSION >= 2  # format 3 (packs) reads format 1 the same way
    a = agent()
    a.turn("one", {"a.txt": "one"})
    a.close()
    fmt = a.root / ".turnback" / "FORMAT"
    body = records.read_record(fmt, "format")
    body["format"] = 1
    os.chmod(fmt, 0o600)
    fmt.unlink()
    records.write_record(fmt, "format", body)
    assert Store.open(a.root / ".turnback", create=False).version == 1
    a.reopen()
    assert a.log()["turns"][0]["prompt"] == "one"
