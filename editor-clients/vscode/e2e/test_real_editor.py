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
INTERRUPT = Path(__file__).resolve().parents[2] / "fixtures" / "interrupted_rewind.py"


def plan_beside(ui, window_height: int = 900) -> str:
    """A plan too long for a modal (issue 26 §3): the short modal fits the window, its detail says
    where the rest is, and the whole plan is in the preview beside it; returns the preview's text."""
    _message, short = ui.dialog_texts()
    assert "is in the panel beside this dialog" in short, short
    box = ui.dialog().bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= window_height, box
    frame = ui.page.frame_locator("iframe.webview.ready").frame_locator("iframe#active-frame")
    plan = frame.locator("#plan")
    plan.wait_for(timeout=20_000)
    # At the default layout (on 1.139 the Chat view takes the right of the window, the preview gets
    # about 270 px): every button of the preview is drawn whole, inside it (issue 40).
    cut = plan.evaluate("""() => [...document.querySelectorAll('button[data-choice]')].filter(b => {
        const r = b.getBoundingClientRect();
        return r.width === 0 || r.left < 0 || r.right > window.innerWidth + 1 || b.scrollWidth > b.clientWidth + 1;
    }).map(b => b.textContent)""")
    assert not cut, f"preview buttons cut: {cut}"
    return plan.inner_text()


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
    try:  # a launch that fails still stops code-server and the browser
        launch()
        yield env
    finally:
        try:
            if getattr(env, "ui", None) is not None:
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


def test_a_turns_file_opens_its_diff_in_words(vscode):
    """Issue 26 §2: a file of a turn opens VS Code's diff editor on turnback's read-only images,
    titled in words."""
    ui = vscode.ui
    ui.show_session_view()
    ui.session_row(f"Turn 3: {PROMPTS[2]}").click()
    wait_until("turn 3's files", lambda: any(r.startswith("app.py | changed") for r in ui.session_rows()))
    ui.session_row("app.py").click()
    tab = wait_until("the diff editor's tab", lambda: (lambda t: t.is_visible() and t)(
        ui.page.locator(".tab", has_text="app.py (before turn 3 ↔ after turn 3)").first), timeout=30)
    diff = ui.page.locator(".monaco-diff-editor").first
    diff.wait_for(timeout=20_000)
    wait_until("both sides drawn", lambda: "farewell" in diff.locator(".editor.modified").inner_text()
               and "farewell" not in diff.locator(".editor.original").inner_text())
    assert "turnback-image" not in tab.inner_text()
    ui.shot("docs-turn-diff")
    ui.page.keyboard.press("Control+W")
    ui.session_row(f"Turn 3: {PROMPTS[2]}").click()


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
    # the steps by what they did, under the people's names of their buckets (issue 26 §4)
    assert "Already left this machine; nothing undoes them:" in detail and "posted to the team chat (turn 3)" in detail, detail
    assert "s3." not in detail.split("What the discarded steps did:")[1], detail
    ui.dialog_button("Rewind")
    # One transaction writes the files one after the other: wait for the last of them too.
    wait_until("app.py restored and farewell.md deleted on disk",
               lambda: (root / "app.py").read_text() == APP_V1 and not (root / "farewell.md").exists())
    assert (root / "util.py").read_text() == UTIL_V2
    wait_until("the open editor to show the restored text", lambda: ui.editor_text() == APP_V1)
    wait_until("the view without turn 3", lambda: not any(r.startswith("Turn 3") for r in ui.session_rows()) and
               any(r.startswith("Turn 2") for r in ui.session_rows()))
    ui.shot("06-after-rewind")


def test_redo_brings_the_state_back(vscode):
    ui, root = vscode.ui, vscode.root
    ui.run_command("Turnback: Redo…")
    rows = ui.quick_pick_rows()
    # labelled by what it brings back: the turns, the files, the time (issue 26 §6)
    assert any(r.strip().startswith(f"Turn 3 back: {PROMPTS[2]}") and "app.py, farewell.md" in r and "saved " in r
               for r in rows), rows
    ui.shot("07-redo-picker")
    ui.pick("Turn 3 back")
    message, detail = ui.dialog_texts()
    assert "Redo: bring back 3 turns" in message, message
    assert "app.py" in detail and "farewell.md" in detail, detail
    ui.shot("08-redo-confirmation")
    ui.dialog_button("Redo")
    wait_until("app.py and farewell.md back on disk", lambda: (root / "app.py").read_text() == APP_V3
               and (root / "farewell.md").exists() and (root / "farewell.md").read_text() == FAREWELL)
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
    # with your edit and what keeping it does, the plan draws more lines than a modal holds
    detail = plan_beside(ui)
    ui.shot("10-rewind-with-my-edit")
    assert "app.py" in detail and "✎ your edit (saved in the editor)" in detail, detail
    assert "Your own edits, made by no discarded turn (1): app.py." in detail, detail
    # the line typed at the end meets turn 3's farewell() at the end: a conflict, said, kept as it is
    assert "app.py: a conflict with turn 3: left as it is now (or with conflict markers)" in detail, detail
    assert ui.dialog().locator(".dialog-buttons .monaco-button", has_text="Keep My Edits, Mark Conflicts").count() == 1
    ui.dialog_button("Rewind, Keep My Edits")
    wait_until("farewell.md deleted", lambda: not (root / "farewell.md").exists())
    assert (root / "app.py").read_text() == APP_V3 + MINE + "\n", "the user's file is left as it was"
    assert ui.editor_text() == APP_V3 + MINE + "\n"
    wait_until("the notification", lambda: any("app.py left as it is (a conflict: resolve it by hand)" in n
                                                for n in ui.notifications()))
    ui.shot("11-kept-my-edit")


def test_your_own_edits_show_as_yours_and_open_their_diff(vscode):
    ui = vscode.ui
    ui.show_session_view()
    row = wait_until("your edits in the view", lambda: (lambda r: any(x.startswith("Your edits after turn 2") for x in r) and r)(
        ui.session_rows()))
    ui.session_row("Your edits after turn 2").click()
    wait_until("its file", lambda: any(r.startswith("app.py | changed (saved in the editor)") for r in ui.session_rows()))
    ui.shot("11b-your-edits-in-the-view")
    ui.session_rows()  # (row order may shift as the view refreshes)
    ui.page.locator(".part.sidebar .monaco-list-row", has_text="changed (saved in the editor)").first.click()
    wait_until("the diff of your edit", lambda: ui.page.locator(
        ".tab", has_text="app.py (as turn 2 left it ↔ your edit after turn 2, saved in the editor)").first.is_visible(), timeout=30)
    ui.shot("11c-your-edit-diff")
    ui.page.keyboard.press("Control+W")
    assert row


def test_the_rewind_modes_in_the_confirmation(vscode):
    """Issue 23 item 4: the same boundary shown for the files only, then the conversation only."""
    ui = vscode.ui
    ui.show_session_view()
    ui.context_menu(ui.session_row(f"Turn 2: {PROMPTS[1]}"), "Rewind to Before Prompt…")
    message, _detail = ui.dialog_texts()
    assert "Rewind to before prompt 2: keep 1 turn, discard 1 turn?" in message, message
    ui.dialog_switch("Files Only…")
    message, detail = ui.dialog_texts()
    assert message == "Rewind the files only to before prompt 2: every turn stays?", message
    assert "The conversation: every turn stays (2 turns)." in detail, detail
    ui.shot("11d-files-only")
    ui.dialog_switch("Conversation Only…")
    message, detail = ui.dialog_texts()
    assert message.startswith("Rewind the conversation only to before prompt 2: discard 1 turn, every file stays?"), message
    assert "Files: every file stays as it is now" in detail, detail
    ui.shot("11e-conversation-only")
    ui.dialog_button("Cancel")


def test_restore_to_turn_from_the_explorer_then_redo(vscode):
    """Issue 23 item 4: "Restore to Turn…" on a file of the explorer puts that file back; the
    conversation stays; Redo brings the file back again."""
    ui, root = vscode.ui, vscode.root
    ui.page.keyboard.press("Control+Shift+E")
    row = ui.page.locator(".explorer-folders-view .monaco-list-row", has_text="util.py").first
    row.wait_for(timeout=15_000)
    ui.context_menu(row, "Restore to Turn…")
    rows = ui.quick_pick_rows()
    assert any(r.strip().startswith("As it was before turn 2") for r in rows), rows
    ui.shot("11f-restore-picker")
    ui.pick("As it was before turn 2")
    message, detail = ui.dialog_texts()
    assert message == "Restore util.py to how it was before turn 2? The conversation stays.", message
    assert "restore  util.py" in detail.replace("• ", "  ") or "util.py" in detail, detail
    ui.shot("11g-restore-confirmation")
    ui.dialog_button("Restore")
    wait_until("util.py as before turn 2", lambda: (root / "util.py").read_text() == UTIL_V0)
    wait_until("the notification", lambda: any(n.startswith("Restored util.py; the conversation did not change")
                                                for n in ui.notifications()))
    ui.show_session_view()
    assert any(r.startswith(f"Turn 2: {PROMPTS[1]}") for r in ui.session_rows()), "the turns stay"
    ui.run_command("Turnback: Redo…")
    rows = ui.quick_pick_rows()
    ui.pick("util.py")
    ui.dialog_texts()
    ui.dialog_button("Redo")
    wait_until("util.py back", lambda: (root / "util.py").read_text() == UTIL_V2)
    ui.shot("11h-restore-redone")


def test_fork_at_this_response_freezes_this_session_and_shows_the_lineage(vscode):
    ui, root = vscode.ui, vscode.root
    ui.show_session_view()
    ui.inline_action(ui.session_row(f"Turn 1: {PROMPTS[0]}"), "Fork at This Response")
    message, _short = ui.dialog_texts()
    # few but long lines (what the branch does not preserve): 1,897 characters drawn on ~40 lines
    detail = plan_beside(ui)
    ui.shot("12-fork-confirmation")
    assert "Fork at the response of turn 1: continue in a new branch and freeze this session?" in message, message
    assert f"ending with turn 1 “{PROMPTS[0]}”" in detail, detail
    assert f"1 later turn from turn 2 “{PROMPTS[1]}”" in detail, detail
    assert "util.py" in detail and "The branch does not preserve" in detail, detail
    ui.dialog_button("Fork Here")
    wait_until("util.py back at the end of turn 1", lambda: (root / "util.py").read_text() == UTIL_V0)
    wait_until("the notification", lambda: any(n.startswith("Forked at turn 1: a new branch continues from there")
                                                for n in ui.notifications()))
    rows = wait_until("the lineage in the view", lambda: (lambda r: any(x.startswith("Sessions (2)") for x in r) and r)(
        ui.session_rows()))
    assert any("frozen" in r for r in rows), rows
    assert any(r.startswith("↳ ●") or "↳ ●" in r for r in rows), rows
    ui.shot("13-lineage")


def test_sessions_are_named_by_their_first_prompt_and_the_frozen_parent_opens(vscode):
    ui = vscode.ui
    ui.show_session_view()
    rows = ui.session_rows()
    assert any(r.startswith(f"“{PROMPTS[0]}”") and "2 turns · frozen" in r for r in rows), rows
    frozen = ui.page.locator(".part.sidebar .monaco-list-row", has_text="frozen").first
    reading = lambda r: any(x.startswith("Reading") for x in r)  # noqa: E731
    for attempt in range(3):
        # a click that lands while the view redraws selects the row without running its command
        # (a loaded machine, after the fork's refreshes); a person clicks again, and so does this
        frozen.click()
        try:
            wait_until("the frozen parent, read only", lambda: (lambda r: reading(r) and any(
                x.startswith(f"Reading “{PROMPTS[0]}”") for x in r) and any(
                x.startswith(f"Turn 2: {PROMPTS[1]}") for x in r))(ui.session_rows()), timeout=15)
            break
        except AssertionError:
            if attempt == 2 or reading(ui.session_rows()):
                raise
    ui.shot("13b-frozen-parent")
    ui.session_row("Reading").click()
    wait_until("back to this session", lambda: not any(r.startswith("Reading") for r in ui.session_rows()))


def test_a_new_folder_is_no_gap(vscode):
    """Issue 26 §6: the watcher's `**/*` reports folders; a folder is not a file and no gap."""
    ui, root = vscode.ui, vscode.root
    gaps = ui.status_item("turnback").inner_text()
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- ship it\n")
    ui.show_session_view()
    wait_until("the new file in the view, as your edit", lambda: any(
        x.startswith("Your edits after turn 1") for x in ui.session_rows()), timeout=30)
    assert ui.status_item("turnback").inner_text() == gaps, "no not-a-file gap for the folder"
    assert "not-a-file" not in (ui.status_item("turnback").get_attribute("aria-label") or "")


def test_new_directive_begin_attempt_then_cancel_the_running_turn(vscode):
    """Issue 26 §5 and §6: a directive from the editor, an attempt begun (the agent's hooks join it),
    and the running turn cancelled from the view."""
    ui = vscode.ui
    ui.open_file("app.py")
    ui.page.locator(".editor-instance .monaco-editor .view-lines").first.click()
    ui.page.keyboard.press("Control+Home")
    ui.run_command("Turnback: New Directive on This Line…")
    box = ui.quick_input().locator("input")
    box.wait_for(state="visible", timeout=10_000)
    box.fill("Greet in French too")
    ui.page.keyboard.press("Enter")
    ui.show_session_view()
    wait_until("the directive in its panel", lambda: any(r.startswith("Greet in French too") for r in ui.directive_rows()))
    ui.shot("13c-directive-panel")
    ui.inline_action(ui.directive_row("Greet in French too"), "Begin an Attempt at a Directive…")
    wait_until("the running attempt", lambda: any("Greet in French too" in r and "running: settle or cancel it here" in r
                                                  for r in ui.session_rows()), timeout=30)
    ui.shot("13d-running-attempt")
    ui.inline_action(ui.session_row("running: settle or cancel it here"), "Cancel the Running Turn")
    wait_until("the turn cancelled", lambda: any("Greet in French too" in r and "cancelled" in r for r in ui.session_rows()), timeout=30)


def test_a_long_plan_in_a_small_window_a_short_modal_beside_a_preview(vscode):
    """Issue 26 §3: a plan of 30 files in a 1000×600 window: the modal fits, the whole plan scrolls in
    the preview beside it, and nothing changes until a choice is made there."""
    ui, root, turnback = vscode.ui, vscode.root, vscode.tools["turnback"]
    cli = lambda *a: subprocess.run([turnback, "--workspace", str(root), *a], check=True, capture_output=True,  # noqa: E731
                                    text=True, cwd=root)
    cli("turn", "begin", "--prompt", "Scaffold thirty modules")
    for i in range(30):
        (root / "pkg").mkdir(exist_ok=True)
        (root / "pkg" / f"mod{i:02d}.py").write_text(f"VALUE = {i}\n")
    cli("turn", "capture", *[f"pkg/mod{i:02d}.py" for i in range(30)])
    cli("turn", "settle")
    before = sorted(p.name for p in (root / "pkg").iterdir())
    ui.page.set_viewport_size({"width": 1000, "height": 600})
    ui.show_session_view()
    wait_until("the new turn, settled", lambda: any("Scaffold thirty modules | 30 files" in r for r in ui.session_rows()),
               timeout=30)
    row = ui.session_row("Scaffold thirty modules")
    ui.context_menu(row, "Rewind to Before Prompt…")
    message, detail = ui.dialog_texts()
    box = ui.dialog().bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 600, box
    assert "The whole plan" in detail and "is in the panel beside this dialog" in detail, detail
    assert len(detail.splitlines()) <= 8, detail
    for label in ("Rewind", "Read the Whole Plan"):
        b = ui.dialog().locator(".dialog-buttons .monaco-button", has_text=label).first
        bb = b.bounding_box()
        assert bb and bb["y"] + bb["height"] <= 600, (label, bb)
    ui.page.locator(".tab", has_text="Turnback: the plan (Rewind)").first.wait_for(timeout=20_000)
    ui.shot("docs-long-plan-small-window")
    ui.dialog_button("Read the Whole Plan")
    frame = ui.page.frame_locator("iframe.webview.ready").frame_locator("iframe#active-frame")
    plan = frame.locator("#plan")
    plan.wait_for(timeout=20_000)
    assert "pkg/mod29.py" in plan.inner_text()
    frame.locator("#plan").hover()
    ui.page.mouse.wheel(0, 2000)
    ui.shot("18b-long-plan-scrolled")
    frame.locator("button[data-choice='Cancel']").click()
    wait_until("the preview closed", lambda: ui.page.locator(".tab", has_text="Turnback: the plan").count() == 0)
    assert sorted(p.name for p in (root / "pkg").iterdir()) == before, "nothing changed"
    # a window too small for any preview: the preview says so and offers no button to approve with
    ui.context_menu(ui.session_row("Scaffold thirty modules"), "Rewind to Before Prompt…")
    ui.dialog_texts()
    ui.dialog_button("Read the Whole Plan")
    frame = ui.page.frame_locator("iframe.webview.ready").frame_locator("iframe#active-frame")
    frame.locator("#plan").wait_for(timeout=20_000)
    ui.page.set_viewport_size({"width": 380, "height": 240})
    wait_until("the word that the window is too small", lambda: frame.locator("#small").is_visible(), timeout=20)
    assert not frame.locator("button[data-choice='Rewind']").is_visible()
    ui.shot("18c-window-too-small")
    ui.page.set_viewport_size({"width": 1000, "height": 600})
    wait_until("the buttons back", lambda: frame.locator("button[data-choice='Cancel']").is_visible(), timeout=20)
    frame.locator("button[data-choice='Cancel']").click()
    wait_until("the preview closed", lambda: ui.page.locator(".tab", has_text="Turnback: the plan").count() == 0)
    assert sorted(p.name for p in (root / "pkg").iterdir()) == before, "nothing changed"
    ui.page.set_viewport_size({"width": 1400, "height": 900})


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
    row = f"Turn {vscode.hand_turn}: Edit by hand | running: settle or cancel it here"
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
    ui.pane_action("Turnback Session", "Refresh Session View").click()  # the view's Refresh button
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


def test_a_rewind_a_crash_interrupted_is_rolled_back_at_open_and_the_editor_says_so(vscode):
    # The editor is shut (the test above). The hand turn is settled from the command line, then an
    # owner is killed half-way through a rewind of two more turns: the editor's server, opening the
    # store, rolls it back and sends turnback/recovered, which the extension shows as a warning.
    turnback, root = vscode.tools["turnback"], vscode.root
    subprocess.run([turnback, "--workspace", str(root), "turn", "settle"], check=True, capture_output=True, cwd=root)
    planted = subprocess.run([sys.executable, str(INTERRUPT), str(root), "20"], check=True,
                             capture_output=True, text=True).stdout.split()[-1]
    assert any(".tbtmp." in p.name for p in (root / "f").iterdir()), "half written"
    vscode.launch()
    ui = vscode.ui
    said = wait_until("the warning", lambda: next((n for n in ui.notifications() if "was rolled back" in n), None),
                      timeout=90)
    assert said.startswith(f"turnback: An interrupted rewind ({planted[:12]}) was rolled back"), said
    assert [(root / f"f/{i:03}.txt").read_text() for i in range(20)] == [f"two {i}\n" for i in range(20)]
    assert not [p.name for p in (root / "f").iterdir() if ".tbtmp." in p.name]
    assert f"turnback: An interrupted rewind ({planted[:12]})" in vscode.server.extension_log()
    ui.shot("18-recovered-at-open")
