"""The release's linux-x64 .vsix brings its own server (issue 41): installed into code-server whose
PATH has no `turnback` (nor any way to find one), it runs the turnback bundled inside it with the
machine's python3, and a session recorded before is rewound through the UI. Then the terminal's
`turnback` the extension writes (what `turnback hooks install` in VS Code's terminal records) runs
from a bare environment.

Run by .ci/release.sh on a copy of dist/, far from the clone:
    TURNBACK_BUNDLED_VSIX   dist/vscode/turnback-linux-x64-V.vsix
    TURNBACK_E2E_TURNBACK   a turnback installed from the dist/ wheel (records the session beforehand;
                            it is NOT on code-server's PATH)
    TURNBACK_CODE_SERVER    code-server's entry script (e2e/code-server.sh)
Skipped in the ordinary real-editor suite (e2e/run.sh), which has no release build.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from editor import USER_SETTINGS, Browser, CodeServer, Workbench, wait_until
from workspace import APP_V0, APP_V1, Cli, agent_writes

VSIX = os.environ.get("TURNBACK_BUNDLED_VSIX")
pytestmark = pytest.mark.skipif(not VSIX, reason="no release .vsix (TURNBACK_BUNDLED_VSIX): .ci/release.sh runs this")

BARE_PATH = "/usr/local/bin:/usr/bin:/bin"
APP_V2 = APP_V1 + "\n\ndef wave():\n    return 'o/'\n"
PROMPTS = ["Make the greeting friendlier", "Add a wave"]


@pytest.fixture(scope="module")
def bundled(scratch, shots):
    entry = os.environ.get("TURNBACK_CODE_SERVER")
    recorder = os.environ.get("TURNBACK_E2E_TURNBACK")
    assert entry and recorder, "TURNBACK_CODE_SERVER and TURNBACK_E2E_TURNBACK must be set (.ci/release.sh)"
    assert shutil.which("turnback", path=BARE_PATH) is None, f"a turnback on {BARE_PATH} would hide the bundled server"
    assert shutil.which("python3", path=BARE_PATH), f"no python3 on {BARE_PATH} to run the bundled server"

    root = scratch / "bundled-workspace"
    root.mkdir()
    (root / "app.py").write_text(APP_V0)
    cli = Cli(recorder, root)
    for prompt, text in zip(PROMPTS, (APP_V1, APP_V2)):
        cli("turn", "begin", "--prompt", prompt)
        agent_writes(cli, root, "app.py", text, prompt)
        cli("turn", "respond", "--final", f"Done: {prompt}.")
        cli("turn", "settle")

    home = scratch / "bundled-home"
    home.mkdir()
    env = {"PATH": BARE_PATH, "HOME": str(home), "SHELL": "/bin/sh", "LANG": "C.UTF-8"}
    server = CodeServer(entry, scratch / "code-server-bundled", root, None, env=env)
    server.install_extension(VSIX)
    browser = Browser()
    url = server.start()
    page = browser.page()
    ui = Workbench(page, shots)
    ui.open(url)
    try:
        yield type("Bundled", (), {"root": root, "server": server, "ui": ui, "home": home})
    finally:
        try:
            ui.shot("zz-bundled-last")
        except Exception:
            pass
        (shots / "Turnback-bundled.log").write_text("\n".join(p.read_text() for p in server.extension_logs()))
        page.close()
        browser.close()
        server.stop()


def test_the_bundled_server_starts_with_no_turnback_on_path(bundled):
    ui = bundled.ui
    ui.page.locator(".activitybar .action-item .action-label[aria-label^='Turnback']").first.click()  # activates
    wait_until("the bundled server to run", lambda: "turnback: running: session" in bundled.server.extension_log(),
               timeout=120)
    log = bundled.server.extension_log()
    assert "using the server bundled with the extension, run by /usr/bin/python3" in log, log
    assert "python3 on PATH" in log, log
    assert "2 turn(s)" in log, log
    assert not any("was not found" in n for n in ui.notifications())
    ui.shot("40-bundled-server-running")


def test_a_session_rewinds_through_the_bundled_server(bundled):
    ui, root = bundled.ui, bundled.root
    ui.show_session_view()
    ui.context_menu(ui.session_row(f"Turn 1: {PROMPTS[0]}"), "Rewind at This Response")
    message, _detail = ui.dialog_texts()
    assert "keep 1 turn, discard 1 turn" in message, message
    ui.shot("41-bundled-rewind-confirmation")
    ui.dialog_button("Rewind")
    wait_until("app.py as turn 1 left it", lambda: (root / "app.py").read_text() == APP_V1, timeout=60)
    wait_until("the view without turn 2", lambda: not any(r.startswith("Turn 2") for r in ui.session_rows()) and
               any(r.startswith("Turn 1") for r in ui.session_rows()))
    ui.shot("42-bundled-after-rewind")


def test_the_terminals_turnback_runs_the_bundled_server_from_a_bare_environment(bundled):
    shims = glob.glob(str(bundled.server.user_data / "User" / "globalStorage" / "*turnback*" / "bin" / "turnback"))
    assert len(shims) == 1, shims
    done = subprocess.run([shims[0], "--workspace", str(bundled.root), "--json", "info"], capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(bundled.home)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turnCount"] == 1, done.stdout


def test_install_agent_hooks_offers_the_terminals_turnback(bundled):
    """"Install Agent Hooks…" with the bundled server: the command offered is the terminal's turnback
    (`python3 -m turnback` would lack the bundle's PYTHONPATH), it runs in the terminal, and the hook
    it writes runs from a bare environment."""
    ui, root = bundled.ui, bundled.root
    shim = glob.glob(str(bundled.server.user_data / "User" / "globalStorage" / "*turnback*" / "bin" / "turnback"))[0]
    ui.run_command("Turnback: Install Agent Hooks…")
    ui.pick("Claude Code")
    command = f"{shim} hooks install claude-code"
    ui.whole_notification(command)
    ui.notification_button(command, "Run in Terminal").click()
    settings = root / ".claude" / "settings.json"
    wait_until("the hooks installed by the terminal", lambda: settings.exists()
               and "hook claude-code" in settings.read_text(), timeout=60)
    ui.shot("43-bundled-hooks-installed")
    hook = json.loads(settings.read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert hook.startswith(shim), hook
    done = subprocess.run(["sh", "-c", hook], input=json.dumps({"session_id": "e2e", "hook_event_name": "SessionStart",
                                                                "cwd": str(root)}),
                          capture_output=True, text=True, timeout=120, cwd=root,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(bundled.home)})
    assert done.returncode == 0, done.stderr
