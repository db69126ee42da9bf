"""The VS Code extension in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) in headless
Chromium, checked through the UI as a person would: the status bar, the session view, CodeLens, the
command palette, the confirmation dialogs, the editor. The tests run in order on one window; each
step leaves a screenshot under the build folder (see conftest.shots)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from editor import Browser, CodeServer, Workbench, wait_until
from workspace import APP_V1, APP_V3, FAREWELL, PROMPTS, UTIL_V0, UTIL_V2, image_bytes, make_workspace

TYPED = "# edited in the editor"
MINE = "# my own line, saved between turns"
RECOVERED = "Goodbye notes, as the backup has them.\n"
PLANT = Path(__file__).resolve().parents[1] / "fixtures" / "plant_recovery.py"


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
        (shots / "Turnback.log").write_text("\n".join(f"== {p}\n{p.read_text()}" for p in server.extension_logs()))
        (shots / "code-server.log").write_text(server.log_path.read_text() if server.log_path.exists() else "")
        browser.close()
        server.stop()


def test_the_server_starts(vscode):
    ui = vscode.ui
    wait_until("the status bar item", lambda: ui.status_item("turnback").is_visible(), timeout=60)
    log = wait_until("the server to answer", lambda: "turnback: running: session" in vscode.server.extension_log()
                     and vscode.server.extension_log(), timeout=60)
    assert f"running: session {vscode.facts['info']['sessionId']}, owner, 3 turn(s), 1 gap(s)" in log, log
    assert "unrecognized arguments" not in log
    assert ui.status_item("turnback").locator(".codicon-circle-slash").count() == 0, "not the stopped icon"
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
    # Turn 3 opened: its files, as the docs show the view.
    ui.session_row(f"Turn 3: {PROMPTS[2]}").click()
    wait_until("turn 3's files", lambda: any(r.startswith("farewell.md | created") for r in ui.session_rows()))
    ui.session_row("farewell.md").hover()
    ui.shot("docs-session-view", around=ui.page.locator(".part.sidebar .monaco-list").first.locator(".monaco-list-rows"),
            margin=40)
    ui.session_row(f"Turn 3: {PROMPTS[2]}").click()
    wait_until("turn 3 closed", lambda: not any(r.startswith("farewell.md") for r in ui.session_rows()))


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
    ui.shot("docs-rewind-confirmation", around=ui.dialog())
    # Both sides of the boundary, the files, the gaps and the effects.
    assert "keep 2 turns, discard 1 turn" in message, message
    assert f"Keeps: turns 1–2, ending with turn 2 “{PROMPTS[1]}”" in detail, detail
    assert f"Discards: 1 turn from turn 3 “{PROMPTS[2]}”" in detail, detail
    assert "app.py" in detail and "farewell.md" in detail, detail
    assert "• " in detail, detail  # the file lines keep their shape: bullets, not lost spaces
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


def test_rewind_keep_my_edits_leaves_the_users_own_save(vscode):
    ui, root = vscode.ui, vscode.root
    ui.open_file("app.py")
    wait_until("app.py", lambda: ui.editor_text() == APP_V3)
    type_at_end(ui, MINE + "\n")
    wait_until("the save on disk", lambda: (root / "app.py").read_text() == APP_V3 + MINE + "\n")
    ui.show_session_view()
    ui.context_menu(ui.session_row(f"Turn 2: {PROMPTS[1]}"), "Rewind at This Response")
    message, detail = ui.dialog_texts()
    ui.shot("10-rewind-with-my-edit")
    assert "app.py" in detail and "✎ your edit (saved in the editor)" in detail, detail
    assert "Your own edits, made by no discarded turn (1): app.py." in detail, detail
    ui.dialog_button("Rewind, Keep My Edits")
    wait_until("farewell.md deleted", lambda: not (root / "farewell.md").exists())
    assert (root / "app.py").read_text() == APP_V3 + MINE + "\n", "the user's file is left as it was"
    assert ui.editor_text() == APP_V3 + MINE + "\n"
    wait_until("the notification", lambda: any("your own edits left as they were" in n for n in ui.notifications()))
    ui.shot("11-kept-my-edit")


def test_fork_at_this_response_freezes_this_session_and_shows_the_lineage(vscode):
    ui, root = vscode.ui, vscode.root
    ui.show_session_view()
    ui.inline_action(ui.session_row(f"Turn 1: {PROMPTS[0]}"), "Fork at This Response")
    message, detail = ui.dialog_texts()
    ui.shot("12-fork-confirmation")
    assert "Fork at the response of turn 1: continue in a new branch and freeze this session?" in message, message
    assert f"ending with turn 1 “{PROMPTS[0]}”" in detail, detail
    assert f"1 later turn from turn 2 “{PROMPTS[1]}”" in detail, detail
    assert "util.py" in detail and "The branch does not preserve" in detail, detail
    ui.dialog_button("Fork Here")
    wait_until("util.py back at the end of turn 1", lambda: (root / "util.py").read_text() == UTIL_V0)
    wait_until("the notification", lambda: any(n.startswith("Forked at turn 1: branch") for n in ui.notifications()))
    rows = wait_until("the lineage in the view", lambda: (lambda r: any(x.startswith("Sessions (2)") for x in r) and r)(
        ui.session_rows()))
    assert any("frozen" in r for r in rows), rows
    assert any(r.startswith("↳ ●") or "↳ ●" in r for r in rows), rows
    ui.shot("13-lineage")


def type_at_end(ui, text: str) -> None:
    """Click into the editor, go to the end, type, save."""
    ui.page.locator(".editor-instance .monaco-editor .view-lines").first.click()
    ui.page.keyboard.press("Control+End")
    ui.page.keyboard.type(text)
    ui.page.keyboard.press("Control+S")


def test_a_save_in_the_editor_reaches_the_server_as_a_capture(vscode):
    # A save belongs to a turn only while one runs; the command line begins one while no editor owns
    # the store, then the editor comes back and the person edits and saves. A failed rollback's
    # recovery record is left at the same time, for the next test.
    vscode.shut()
    turnback, root = vscode.tools["turnback"], vscode.root
    began = subprocess.run([turnback, "--workspace", str(root), "turn", "begin", "--prompt", "Edit by hand"],
                           check=True, capture_output=True, text=True, cwd=root)
    vscode.hand_turn, before = int(began.stdout.strip()), (root / "app.py").read_text()
    vscode.saved = before + TYPED
    (root / "farewell.md").write_text("half-writ")
    subprocess.run([sys.executable, str(PLANT), str(root), "farewell.md", RECOVERED, "disk full while restoring farewell.md"],
                   check=True, capture_output=True)
    vscode.launch()
    ui = vscode.ui
    ui.show_session_view()
    row = f"Turn {vscode.hand_turn}: Edit by hand | running"
    # The server is up once the view shows the running turn (with no file yet): a save before that
    # reaches no server (the settle sweep would still catch it).
    wait_until("the running turn in the view", lambda: row in ui.session_rows(), timeout=90)
    ui.open_file("app.py")
    wait_until("app.py", lambda: ui.editor_text() == before)
    type_at_end(ui, TYPED)
    wait_until("the save on disk", lambda: (root / "app.py").read_text() == vscode.saved)
    wait_until("the running turn with the saved file in the view",
               lambda: f"{row} · 1 file" in ui.session_rows(), timeout=30)
    ui.shot("14-save-captured")


def test_recovery_from_the_status_bar_retry_puts_the_file_back(vscode):
    ui, root = vscode.ui, vscode.root
    item = wait_until("the recovery count", lambda: (ui.status_item("turnback").inner_text().strip().endswith("1")
                                                     and ui.status_item("turnback")), timeout=30)
    item.click()
    message, detail = ui.dialog_texts()
    ui.shot("15-recovery")
    assert "could not put everything back" in message, message
    assert "disk full while restoring farewell.md" in detail and "farewell.md ← image" in detail, detail
    ui.dialog_button("Retry")
    wait_until("farewell.md put back", lambda: (root / "farewell.md").read_text() == RECOVERED)
    wait_until("the notification", lambda: any(n.startswith("Put back: farewell.md") for n in ui.notifications()))
    wait_until("no recovery count", lambda: not ui.status_item("turnback").inner_text().strip().endswith("1"))
    ui.shot("16-recovered")


def test_restart_server_from_the_palette(vscode):
    ui = vscode.ui
    running = lambda: vscode.server.extension_log().count("turnback: running: session")  # noqa: E731
    before = running()
    ui.run_command("Turnback: Restart Server")
    wait_until("the new server to answer", lambda: running() == before + 1, timeout=90)
    assert ui.status_item("turnback").locator(".codicon-circle-slash").count() == 0, "not the stopped icon"
    ui.page.locator(".part.sidebar .codicon-refresh").first.click()  # the view's Refresh button
    wait_until("the view from the new server",
               lambda: any(r.startswith(f"Turn {vscode.hand_turn}: Edit by hand") for r in ui.session_rows()), timeout=30)
    ui.shot("17-restarted")


def test_the_session_log_has_the_save_as_a_capture(vscode):
    vscode.shut()
    turnback, root = vscode.tools["turnback"], vscode.root
    log = subprocess.run([turnback, "--workspace", str(root), "--json", "log"], check=True,
                         capture_output=True, text=True, cwd=root).stdout
    turn = json.loads(log)["turns"][vscode.hand_turn - 1]
    assert turn["prompt"] == "Edit by hand" and turn["state"] == "running", turn
    files = {f["path"]: f for f in turn["files"]}
    assert "app.py" in files, turn
    assert image_bytes(root, files["app.py"]["after"]) == vscode.saved.encode()
