"""The VS Code extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) in headless
Chromium, checked through the UI as a person would: the status bar, the session view, CodeLens, the
command palette, the confirmation dialogs, the editor. The tests run in order on one window; each
step leaves a screenshot under the build folder (see conftest.shots)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from editor import Browser, CodeServer, Workbench, wait_until
from workspace import APP_V1, APP_V3, FAREWELL, PROMPTS, UTIL_V2, image_bytes, make_workspace

TYPED = "# edited in the editor"


@pytest.fixture(scope="module")
def vscode(tools, scratch, shots):
    root = scratch / "workspace"
    facts = make_workspace(root, tools["turnback"])
    server = CodeServer(tools["code_server"], scratch / "code-server", root, [tools["turnback"], "serve"])
    server.install_extension(tools["vsix"])
    browser = Browser()
    env = SimpleNamespace(root=root, facts=facts, server=server, browser=browser, shots=shots, tools=tools)

    def launch():
        url = server.start()
        env.page = browser.page()
        env.ui = Workbench(env.page, shots)
        env.ui.open(url)

    def shut():
        env.page.close()
        server.stop()

    env.launch, env.shut = launch, shut
    launch()
    try:
        yield env
    finally:
        try:
            env.ui.shot("zz-last")
        except Exception:
            pass
        log = server.extension_log()
        (shots / "Turnback.log").write_text(log)
        (shots / "code-server.log").write_text(server.log_path.read_text() if server.log_path.exists() else "")
        browser.close()
        server.stop()


def test_the_server_starts(vscode):
    ui = vscode.ui
    wait_until("the status bar item", lambda: ui.status_item("turnback").is_visible(), timeout=60)
    log = wait_until("the server to answer", lambda: "turnback: starting" in vscode.server.extension_log()
                     and vscode.server.extension_log(), timeout=60)
    assert "unrecognized arguments" not in log
    assert "is not running" not in ui.status_item("turnback").inner_text()
    ui.shot("01-server-started")


def test_the_status_bar_shows_the_gap_count_from_the_server(vscode):
    ui = vscode.ui
    gaps = vscode.facts["info"]["liveGaps"]
    assert gaps == 1, "the workspace has one gap: turn 3's step of unknown scope"
    item = wait_until("the gap count", lambda: (ui.status_item("gap").is_visible() and ui.status_item("gap")),
                      timeout=60)
    assert item.inner_text().strip().endswith(f"turnback: {gaps} gap")
    item.hover()
    tooltip = wait_until("the tooltip", lambda: ui.page.locator(".monaco-hover, .custom-hover").first.inner_text())
    assert "step-scope-unknown" in tooltip
    ui.shot("02-status-bar-gaps")


def test_the_session_view_lists_the_turns(vscode):
    ui = vscode.ui
    ui.show_session_view()
    rows = wait_until("three turns in the view", lambda: (lambda r: len(r) >= 3 and r)(ui.session_rows()))
    assert [r.split(" | ")[0] for r in rows[:3]] == [
        f"Turn 3: {PROMPTS[2]}", f"Turn 2: {PROMPTS[1]}", f"Turn 1: {PROMPTS[0]}"], rows
    ui.shot("03-session-view")


def test_a_directive_codelens_shows_its_state(vscode):
    ui = vscode.ui
    ui.open_file("util.py")
    state = vscode.facts["directiveState"]
    lenses = wait_until("the directive's CodeLens", lambda: (lambda t: any("turnback:" in x for x in t) and t)(
        ui.codelens_texts()), timeout=30)
    text = " ".join(lenses)
    assert f"turnback: {state}" in text and "1 attempt" in text, lenses
    assert "Rewind before attempt (turn 2)" in text
    ui.shot("04-directive-codelens")


def test_rewind_at_this_response_confirms_then_restores_disk_and_editor(vscode):
    ui, root = vscode.ui, vscode.root
    ui.open_file("app.py")
    wait_until("app.py as turn 3 left it", lambda: ui.editor_text() == APP_V3)
    ui.show_session_view()
    ui.context_menu(ui.session_row(f"Turn 2: {PROMPTS[1]}"), "Rewind at This Response")
    message, detail = ui.dialog_texts()
    ui.shot("05-rewind-confirmation")
    # Both sides of the boundary, the files, the gaps and the effects.
    assert "keep 2 turns, discard 1 turn" in message, message
    assert f"Keeps: turns 1–2, ending with turn 2 “{PROMPTS[1]}”" in detail, detail
    assert f"Discards: 1 turn from turn 3 “{PROMPTS[2]}”" in detail, detail
    assert "app.py" in detail and "farewell.md" in detail, detail
    assert "step-scope-unknown" in detail, detail
    assert "Already left this machine" in detail and "s3.3" in detail, detail
    ui.dialog_button("Rewind")
    wait_until("app.py restored on disk", lambda: (root / "app.py").read_text() == APP_V1)
    assert not (root / "farewell.md").exists()
    assert (root / "util.py").read_text() == UTIL_V2
    wait_until("the open editor to show the restored text", lambda: ui.editor_text() == APP_V1)
    wait_until("the view without turn 3", lambda: not any(r.startswith("Turn 3") for r in ui.session_rows()) and
               any(r.startswith("Turn 2") for r in ui.session_rows()))
    ui.shot("06-after-rewind")


def test_redo_brings_the_state_back(vscode):
    ui, root = vscode.ui, vscode.root
    ui.run_command("Turnback: Redo…")
    rows = ui.quick_pick_rows()
    assert any("3 turns" in r and PROMPTS[2] in r for r in rows), rows
    ui.shot("07-redo-picker")
    ui.pick("3 turns")
    message, detail = ui.dialog_texts()
    assert "Redo: bring back 3 turns" in message, message
    assert "app.py" in detail and "farewell.md" in detail, detail
    ui.shot("08-redo-confirmation")
    ui.dialog_button("Redo")
    wait_until("app.py back on disk", lambda: (root / "app.py").read_text() == APP_V3)
    assert (root / "farewell.md").read_text() == FAREWELL
    wait_until("the open editor to show turn 3's text", lambda: ui.editor_text() == APP_V3)
    ui.show_session_view()
    wait_until("turn 3 back in the view", lambda: any(r.startswith("Turn 3") for r in ui.session_rows()))
    ui.shot("09-after-redo")


def test_a_save_in_the_editor_reaches_the_server_as_a_capture(vscode):
    # A save belongs to a turn only while one runs; the command line begins one while no editor owns
    # the store, then the editor comes back and the person edits and saves.
    vscode.shut()
    turnback, root = vscode.tools["turnback"], vscode.root
    subprocess.run([turnback, "--workspace", str(root), "turn", "begin", "--prompt", "Edit by hand"],
                   check=True, capture_output=True, cwd=root)
    vscode.launch()
    ui = vscode.ui
    wait_until("the status bar item", lambda: ui.status_item("turnback").is_visible(), timeout=60)
    ui.open_file("app.py")
    wait_until("app.py", lambda: ui.editor_text() == APP_V3)
    ui.page.locator(".editor-instance .monaco-editor .view-lines").first.click()
    ui.page.keyboard.press("Control+End")
    ui.page.keyboard.type(TYPED)
    ui.page.keyboard.press("Control+S")
    wait_until("the save on disk", lambda: (root / "app.py").read_text() == APP_V3 + TYPED)
    ui.show_session_view()
    wait_until("turn 4 with the saved file in the view",
               lambda: any(r.startswith("Turn 4: Edit by hand | running") and "1 file" in r for r in ui.session_rows()),
               timeout=30)
    ui.shot("10-save-captured")
    vscode.shut()
    log = subprocess.run([turnback, "--workspace", str(root), "--json", "log"], check=True,
                         capture_output=True, text=True, cwd=root).stdout
    import json

    turn4 = json.loads(log)["turns"][3]
    files = {f["path"]: f for f in turn4["files"]}
    assert list(files) == ["app.py"], turn4
    assert image_bytes(root, files["app.py"]["after"]) == (APP_V3 + TYPED).encode()
