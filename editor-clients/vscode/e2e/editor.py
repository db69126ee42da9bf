"""code-server (VS Code in a browser: 1.100 and 1.139, see run.sh) driven through headless Chromium,
the way a person uses it: the command palette, the quick pick, the activity bar, tree rows, dialogs,
the status bar, the text editor. Nothing here calls the extension or the server directly.

The window keeps the editor's default layout: the sidebar at its default width and, on 1.139, the
Chat view open beside the editors (issue 40: widening the sidebar hid what a new user sees).
"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

CHROMIUM = os.environ.get("TURNBACK_E2E_CHROMIUM", "/usr/bin/chromium")
NBSP = "\u00a0"

# A quiet workbench: no welcome page, no telemetry, no update or gallery checks, no trust prompt.
USER_SETTINGS = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.enableExperiments": False,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "security.workspace.trust.enabled": False,
    "editor.codeLens": True,
    "files.autoSave": "off",
    "window.dialogStyle": "custom",
    "workbench.colorTheme": "Default Light Modern",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(what: str, fn, timeout: float = 30.0, interval: float = 0.2):
    """Poll `fn` until it returns something truthy; fail naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = fn()
        except Exception as exc:  # a locator that is not there yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; last seen: {last!r}")
        time.sleep(interval)


class CodeServer:
    """One code-server process with its own user-data and extensions folders, on a loopback port."""

    def __init__(self, entry: str, home: Path, folder: Path, turnback_command: list[str] | None,
                 env: dict | None = None):
        self.entry, self.home, self.folder = entry, home, folder
        self.user_data = home / "user-data"
        self.extensions = home / "extensions"
        self.config = home / "config.yaml"
        self.log_path = home / "code-server.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.env = env  # None: this process's environment
        (self.user_data / "User").mkdir(parents=True, exist_ok=True)
        self.write_settings(turnback_command)
        self.extensions.mkdir(parents=True, exist_ok=True)
        self.config.write_text("")

    def write_settings(self, turnback_command: list[str] | None) -> None:
        """The user's settings.json (VS Code reads it again when it changes)."""
        settings = dict(USER_SETTINGS, **({"turnback.server.command": turnback_command} if turnback_command else {}))
        (self.user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))

    def _base(self) -> list[str]:
        # code-server.sh's launcher names the Node the release needs by its absolute path, so a bare
        # PATH (the welcome tests') cannot reach another one; a bare entry.js runs on PATH's node.
        program = ["node", self.entry] if self.entry.endswith(".js") else [self.entry]
        return program + ["--config", str(self.config), "--user-data-dir", str(self.user_data),
                          "--extensions-dir", str(self.extensions)]

    def install_extension(self, vsix: str) -> str:
        done = subprocess.run(self._base() + ["--install-extension", vsix], capture_output=True, text=True,
                              timeout=180)
        out = done.stdout + done.stderr
        if done.returncode != 0 or "successfully installed" not in out:
            raise RuntimeError(f"code-server --install-extension {vsix} failed ({done.returncode}):\n{out}")
        return out

    def start(self) -> str:
        self.port = free_port()
        env = dict(self.env if self.env is not None else os.environ)
        self.proc = subprocess.Popen(
            self._base() + ["--auth", "none", "--bind-addr", f"127.0.0.1:{self.port}", "--disable-telemetry",
                            "--disable-update-check", "--disable-workspace-trust", str(self.folder)],
            stdout=open(self.log_path, "a"), stderr=subprocess.STDOUT, env=env)
        wait_until("code-server to listen", self._listening, timeout=90)
        return f"http://127.0.0.1:{self.port}/?folder={self.folder}"

    def _listening(self) -> bool:
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"code-server exited {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def extension_logs(self) -> list[Path]:
        """The extension's output channel of every window so far, as VS Code writes it under the
        user-data folder, oldest first."""
        return sorted((Path(p) for p in glob.glob(str(
            self.user_data / "logs" / "*" / "exthost*" / "output_logging_*" / "*Turnback.log"))),
            key=os.path.getmtime)

    def extension_log(self) -> str:
        """The output channel of the latest window."""
        paths = self.extension_logs()
        return paths[-1].read_text() if paths else ""


class Browser:
    def __init__(self):
        self._pw = sync_playwright().start()
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=args)

    def page(self, clipboard: bool = False) -> Page:
        page = self.browser.new_page(viewport={"width": 1400, "height": 900})
        if clipboard:  # what "Copy Command" wrote, read back as a paste would
            page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        return page

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()


class Workbench:
    """The VS Code window in one page, with the gestures a person makes."""

    def __init__(self, page: Page, shots: Path):
        self.page, self.shots = page, shots
        self.shots.mkdir(parents=True, exist_ok=True)

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_selector(".monaco-workbench", timeout=90_000)
        # Wait for the workbench to restore (the explorer shows the folder).
        self.page.wait_for_selector(".explorer-folders-view, .monaco-workbench .part.sidebar", timeout=60_000)

    def shot(self, name: str, around=None, margin: int = 24) -> Path:
        """A screenshot of the window, or of the part of it around a locator (for the docs)."""
        path = self.shots / f"{name}.png"
        clip = None
        if around is not None:
            box = around.bounding_box()
            if box:
                clip = {"x": max(0, box["x"] - margin), "y": max(0, box["y"] - margin),
                        "width": box["width"] + 2 * margin, "height": box["height"] + 2 * margin}
        self.page.screenshot(path=str(path), clip=clip)
        return path

    # -- the command palette and quick picks ------------------------------------------------------
    def quick_input(self):
        return self.page.locator(".quick-input-widget")

    def run_command(self, title: str) -> None:
        """F1, type the command's title, pick the entry with exactly that label."""
        box = self.quick_input().locator("input")
        for attempt in range(3):
            self.page.keyboard.press("Escape")
            if attempt:  # the key went to a part that keeps it (a closing dialog, a busy tree)
                self.page.locator(".part.statusbar").first.click(position={"x": 600, "y": 5})
            self.page.keyboard.press("F1")
            try:
                box.wait_for(state="visible", timeout=5_000)
                break
            except Exception:
                if attempt == 2:
                    raise
        box.fill(">" + title)
        row = self.quick_input().locator(".monaco-list-row", has_text=title).first
        row.wait_for(state="visible", timeout=10_000)
        row.click()
        # The palette closes after the click, later on 1.139: what is read next (a quick pick the
        # command opens) must not be the palette's own rows.
        wait_until("the command palette to close", lambda: not box.is_visible()
                   or not (box.input_value() or "").startswith(">"), timeout=15)

    def quick_pick_rows(self) -> list[str]:
        rows = self.quick_input().locator(".monaco-list-row")
        rows.first.wait_for(state="visible", timeout=15_000)
        return [t.replace(NBSP, " ") for t in rows.all_inner_texts()]

    def pick(self, text: str) -> None:
        row = self.quick_input().locator(".monaco-list-row", has_text=text).first
        row.wait_for(state="visible", timeout=15_000)
        row.click()

    def open_file(self, name: str) -> None:
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("Control+P")
        box = self.quick_input().locator("input")
        box.wait_for(state="visible", timeout=10_000)
        box.fill(name)
        row = self.quick_input().locator(".monaco-list-row", has_text=name).first
        row.wait_for(state="visible", timeout=15_000)
        self.page.keyboard.press("Enter")
        self.page.locator(f".tab.active:has-text('{name}')").wait_for(timeout=15_000)
        self.page.locator(".editor-instance .monaco-editor .view-lines").first.wait_for(timeout=15_000)

    # -- what is on screen --------------------------------------------------------------------------
    def editor_text(self) -> str:
        """The active editor's text as drawn (every line of these small files is in view)."""
        lines = self.page.locator(".editor-instance .monaco-editor .view-lines").first.locator(".view-line")
        tops = []
        for handle in lines.element_handles():
            top = handle.evaluate("e => parseFloat(e.style.top) || 0")
            tops.append((top, (handle.inner_text() or "").replace(NBSP, " ")))
        return "\n".join(text for _, text in sorted(tops)).rstrip("\n") + "\n"

    def codelens_texts(self) -> list[str]:
        lenses = self.page.locator(".editor-instance .monaco-editor .codelens-decoration")
        return [t.replace(NBSP, " ") for t in lenses.all_inner_texts()]

    def status_item(self, contains: str):
        return self.page.locator(".part.statusbar .statusbar-item", has_text=contains).first

    def notifications(self) -> list[str]:
        return [t.replace(NBSP, " ") for t in
                self.page.locator(".notifications-toasts .notification-list-item-message").all_inner_texts()]

    def notification_where(self, what: str, match, timeout: float = 60.0) -> str:
        """The first toast whose text `match` accepts. On a timeout the failure says what the window
        showed instead: every toast and any dialog (a stale plan asks again, a rolled-back one says so
        in an error), so a run on another machine can be read without its screenshots."""
        try:
            return wait_until(what, lambda: next((n for n in self.notifications() if match(n)), None), timeout=timeout)
        except AssertionError as exc:
            dialog = self.dialog()
            shown = dialog.locator(".dialog-message-text").inner_text() if dialog.is_visible() else None
            raise AssertionError(f"{exc}; toasts: {self.notifications()!r}; dialog: {shown!r}") from None

    def clear_notifications(self) -> None:
        """Close every toast, so a new one is never queued behind earlier ones (VS Code shows three)."""
        self.run_command("Notifications: Clear All Notifications")
        wait_until("no toast", lambda: not self.notifications(), timeout=10)

    def _toast(self, contains: str):
        return self.page.locator(".notifications-toasts .notification-toast-container",
                                 has=self.page.locator(".notification-list-item-message", has_text=contains)).first

    def notification_buttons(self, contains: str) -> list[str]:
        toast = self._toast(contains)
        toast.wait_for(state="visible", timeout=30_000)
        return [t.replace(NBSP, " ").strip() for t in
                toast.locator(".notification-list-item-buttons-container .monaco-button").all_inner_texts()]

    def notification_button(self, contains: str, label: str):
        return self._toast(contains).locator(".notification-list-item-buttons-container .monaco-button",
                                             has_text=label).first

    def whole_notification(self, command: str) -> str:
        """The toast that shows `command`, drawn whole: its message is not cut (no ellipsis, no clipped
        line) and holds the whole command. Returns the message."""
        toast = self._toast(command)
        toast.wait_for(state="visible", timeout=30_000)
        message = toast.locator(".notification-list-item-message").first
        wait_until(f"the notification with {command!r} drawn whole", lambda: message.evaluate(
            "e => e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1"), timeout=15)
        text = message.inner_text().replace(NBSP, " ")
        assert command in " ".join(text.split()), (command, text)
        return " ".join(text.split())

    def clipboard(self) -> str:
        return self.page.evaluate("navigator.clipboard.readText()")

    def choose_file(self, path: str) -> None:
        """The file dialog of a browser VS Code (a quick input with the path): type the whole path, Enter."""
        box = self.quick_input().locator("input")
        box.wait_for(state="visible", timeout=15_000)
        # the dialog fills in its starting folder first; a path typed before that is replaced
        wait_until("the dialog's starting folder", lambda: (box.input_value() or "").endswith("/"), timeout=15)
        self.page.wait_for_timeout(500)
        box.fill(path)
        wait_until("the dialog to take the path", lambda: box.input_value() == path, timeout=10)
        self.page.wait_for_timeout(500)
        ok = self.quick_input().locator(".monaco-button", has_text="Use This Program").first
        ok.click()
        self.quick_input().wait_for(state="hidden", timeout=15_000)

    def _modal_editor(self):
        """VS Code 1.139 opens settings (the editor and settings.json) in a modal editor, not a tab."""
        return self.page.locator(".monaco-modal-editor-block").first

    def close_settings(self) -> None:
        """Close the settings editor: a modal editor (1.139) with Escape, a tab (1.100) with Ctrl+W."""
        if self._modal_editor().is_visible():
            for _ in range(3):  # the first Escape may only leave the search box
                self.page.keyboard.press("Escape")
                if not self._modal_editor().is_visible():
                    break
                self.page.wait_for_timeout(300)
        else:
            self.page.locator(".settings-editor").first.click(position={"x": 5, "y": 5})
            self.page.keyboard.press("Control+W")
        wait_until("the settings closed", lambda: not self.page.locator(".settings-editor").first.is_visible(), timeout=15)

    def dialog(self):
        return self.page.locator(".monaco-dialog-box")

    def dialog_texts(self) -> tuple[str, str]:
        box = self.dialog()
        box.wait_for(state="visible", timeout=20_000)
        message = box.locator(".dialog-message-text").inner_text()
        detail = box.locator(".dialog-message-detail").inner_text() if box.locator(".dialog-message-detail").count() else ""
        return message.replace(NBSP, " "), detail.replace(NBSP, " ")

    def dialog_switch(self, label: str) -> None:
        """A button that answers with another dialog at once (a rewind shown in another mode)."""
        before = self.dialog().locator(".dialog-message-text").inner_text()
        self._button(label).click()
        wait_until("the next dialog", lambda: self.dialog().is_visible()
                   and self.dialog().locator(".dialog-message-text").inner_text() != before, timeout=20)

    def _button(self, label: str):
        """The dialog's button with exactly this label ("Redo" is not "Redo, Keep My Edits")."""
        import re

        return self.dialog().locator(".dialog-buttons .monaco-button", has_text=re.compile(
            rf"^\s*{re.escape(label)}\s*$")).first

    def dialog_button(self, label: str) -> None:
        self._button(label).click()
        self.dialog().wait_for(state="hidden", timeout=10_000)

    # -- the Turnback view ----------------------------------------------------------------------------
    def _pane(self, title: str):
        """A view of the Turnback container (Turnback Session, Directives), by its header."""
        return self.page.locator(".part.sidebar .pane", has=self.page.locator(".pane-header", has_text=title)).first

    def show_session_view(self) -> None:
        """The Turnback container, at the sidebar's default width (never widened: issue 40)."""
        sidebar = self.page.locator(".part.sidebar")
        if not sidebar.locator(".pane-header", has_text="Turnback Session").first.is_visible():
            self.page.locator(".activitybar .action-item .action-label[aria-label^='Turnback']").first.click()
        sidebar.locator(".pane-header", has_text="Turnback Session").first.wait_for(timeout=15_000)
        self.page.mouse.move(self.page.viewport_size["width"] * 0.6, 450)  # away from the activity bar's tooltip

    def cut_rows(self) -> list[dict]:
        """The session view's rows whose label or description the sidebar cuts (drawn narrower than
        their text), with their whole text."""
        return self._session_list().locator(".monaco-list-row").evaluate_all(
            """rows => rows.map(r => {
                const box = r.querySelector('.monaco-icon-label-container');
                const name = r.querySelector('.label-name'), desc = r.querySelector('.label-description');
                return {text: [name, desc].map(e => e ? e.textContent : '').join(' | '),
                        label: name ? name.textContent : '', description: desc ? desc.textContent : '',
                        cut: !!box && box.scrollWidth > box.clientWidth + 1};
            }).filter(r => r.cut)""")

    def hover_text(self, row) -> str:
        """The tooltip a row shows when the pointer rests on it."""
        hover = self.page.locator(".monaco-hover, .custom-hover, .workbench-hover").first
        self.page.mouse.move(5, 5)
        self.page.keyboard.press("Escape")
        wait_until("the last tooltip gone", lambda: not hover.is_visible(), timeout=10)
        row.hover()
        hover.wait_for(state="visible", timeout=10_000)
        return hover.inner_text().replace(NBSP, " ")

    def _session_list(self):
        return self._pane("Turnback Session").locator(".monaco-list")

    def directive_rows(self) -> list[str]:
        rows = self._pane("Directives").locator(".monaco-list .monaco-list-row").evaluate_all(
            """rows => rows.map(r => [r.querySelector('.label-name'), r.querySelector('.label-description')]
                .map(e => e ? e.textContent : '').join(' | '))""")
        return [r.replace(NBSP, " ").strip() for r in rows]

    def directive_row(self, contains: str):
        return self._pane("Directives").locator(".monaco-list-row", has_text=contains).first

    def pane_action(self, view: str, title: str):
        """A button of a view's header (shown while the header is hovered)."""
        pane = self._pane(view)
        pane.locator(".pane-header").first.hover()
        button = pane.locator(f".pane-header .action-label[aria-label='{title}']").first
        button.wait_for(state="visible", timeout=10_000)
        return button

    def set_user_settings(self, settings: dict, saved_to: Path) -> None:
        """What a person does: Preferences: Open User Settings (JSON), replace the text, save, close.
        (An edit of settings.json behind code-server's back is not noticed.) 1.100 opens it in a tab,
        1.139 in a modal editor; `saved_to` (the user's settings.json) says when the save is done."""
        self.run_command("Preferences: Open User Settings (JSON)")
        modal = self._modal_editor()
        tab = self.page.locator(".tab.active", has_text="settings.json").first
        wait_until("settings.json open", lambda: modal.is_visible() or tab.is_visible(), timeout=20)
        in_modal = modal.is_visible()
        lines = (modal if in_modal else self.page).locator(".editor-instance .monaco-editor .view-lines").first
        # empty first, and seen empty: a Ctrl+A that reached no editor (the modal still taking focus)
        # would leave the old text under the new one
        for _ in range(5):
            lines.click()
            self.page.keyboard.press("Control+A")
            self.page.keyboard.press("Delete")
            if not lines.inner_text().strip():
                break
            self.page.wait_for_timeout(500)
        # pasted, as a person would bring a whole file: 1.139's JSON editor treats inserted text as
        # typed (auto-indent, an auto-closed brace left over at the end)
        self.page.evaluate("text => navigator.clipboard.writeText(text)", json.dumps(settings, indent=2))
        self.page.keyboard.press("Control+V")
        self.page.keyboard.press("Control+S")
        wait_until("settings.json saved", lambda: json.loads(saved_to.read_text() or "{}") == settings, timeout=20)
        if in_modal:
            for _ in range(4):  # an Escape may first close a suggestion or the find widget
                self.page.keyboard.press("Escape")
                self.page.wait_for_timeout(400)
                if not modal.is_visible():
                    break
            wait_until("the modal editor closed", lambda: not modal.is_visible(), timeout=15)
        else:
            self.page.locator(".tab.active.dirty").wait_for(state="detached", timeout=15_000)
            self.page.keyboard.press("Control+W")

    def welcome_text(self) -> str:
        return self._pane("Turnback Session").locator(".welcome-view-content").inner_text().replace(NBSP, " ")

    def session_rows(self) -> list[str]:
        """Each row as `label | description`."""
        rows = self._session_list().locator(".monaco-list-row").evaluate_all(
            """rows => rows.map(r => [r.querySelector('.label-name'), r.querySelector('.label-description')]
                .map(e => e ? e.textContent : '').join(' | '))""")
        return [r.replace(NBSP, " ").strip() for r in rows]

    def session_row(self, contains: str):
        return self._session_list().locator(".monaco-list-row", has_text=contains).first

    def session_row_labelled(self, label: str):
        """The row whose label is exactly `label` (a group's header also names this window's session,
        so a row found by the text it contains can be the header)."""
        name = self.page.locator(".label-name").get_by_text(label.strip(), exact=True)
        return self._session_list().locator(".monaco-list-row").filter(has=name).first

    def quiet_view(self) -> list[str]:
        """Wait until the session view stops redrawing (three equal looks in a row): a row's menu or
        button used while the tree redraws acts on no element, as it would for a person."""
        seen: list[list[str]] = []

        def same() -> bool:
            seen.append(self.session_rows())
            return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3]
        wait_until("the session view to settle", same, timeout=30, interval=0.3)
        return seen[-1]

    def context_menu(self, row, entry: str) -> None:
        """Right-click the row, then choose the entry (hover it, Enter: VS Code's menus act on keys)."""
        self.quiet_view()
        row.click(button="right")
        menu = self.page.locator(".context-view .monaco-menu .action-item", has_text=entry).first
        menu.wait_for(state="visible", timeout=10_000)
        menu.hover()
        self.page.keyboard.press("Enter")
        try:
            menu.wait_for(state="hidden", timeout=3_000)
        except Exception:  # the key went elsewhere (a busy machine): a plain click then
            menu.click()

    def inline_action(self, row, title: str) -> None:
        """The icon button a tree row shows on hover."""
        self.quiet_view()
        row.hover()
        button = row.locator(f".actions .action-label[aria-label='{title}']").first
        button.wait_for(state="visible", timeout=10_000)
        button.click()
