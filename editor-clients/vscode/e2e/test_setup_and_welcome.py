"""Setup that survives real PATHs (issue 26 §7) and a view that says what to do before the first
turn (§6), in a real VS Code: code-server started with a PATH that has no `turnback` (as when it
was started before the docs' `export PATH=…`, or from a menu), on a folder with no session yet."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from editor import USER_SETTINGS, Browser, CodeServer, Workbench, wait_until


@pytest.fixture(scope="module")
def fresh(tools, scratch, shots):
    root = scratch / "fresh"
    root.mkdir()
    (root / "hello.py").write_text("print('hi')\n")
    home = scratch / "home"
    home.mkdir()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "SHELL": "/bin/bash", "LANG": "C.UTF-8"}
    server = CodeServer(tools["code_server"], scratch / "code-server-fresh", root, None, env=env)
    server.install_extension(tools["vsix"])
    browser = Browser()
    url = server.start()
    page = browser.page()
    ui = Workbench(page, shots)
    ui.open(url)
    env_ns = SimpleNamespace(root=root, home=home, server=server, ui=ui, tools=tools, shots=shots)
    try:
        yield env_ns
    finally:
        try:
            ui.shot("zz-fresh-last")
        except Exception:
            pass
        (shots / "Turnback-fresh.log").write_text("\n".join(p.read_text() for p in server.extension_logs()))
        page.close()
        browser.close()
        server.stop()


def test_a_server_it_cannot_find_says_exactly_which_setting_to_set(fresh):
    ui = fresh.ui
    ui.page.locator(".activitybar .action-item .action-label[aria-label^='Turnback']").first.click()  # activates
    item = wait_until("the status bar's word", lambda: (lambda i: i.is_visible() and i)(
        ui.status_item("server not found")), timeout=60)
    toast = wait_until("the notification", lambda: next((n for n in ui.notifications()
                                                         if "turnback.server.command" in n), None), timeout=30)
    assert "was not found" in toast and "login shell" in toast and ".venv/bin/turnback" in toast, toast
    assert "This message goes away as soon as the server runs" in toast, toast
    welcome = wait_until("the view's word", lambda: ui.welcome_text(), timeout=30)
    assert "The turnback server is not running" in welcome, welcome
    assert item
    ui.shot("20-server-not-found")


def test_setting_the_command_starts_the_server_and_clears_the_warning(fresh):
    ui = fresh.ui
    # what the message says to do, as a person does it: the setting, in the user's settings
    ui.set_user_settings(dict(USER_SETTINGS, **{"turnback.server.command": [fresh.tools["turnback"], "serve"]}))
    wait_until("the server to run", lambda: "turnback: running: session" in fresh.server.extension_log(), timeout=90)
    wait_until("the notification gone", lambda: not any("turnback.server.command" in n for n in ui.notifications()),
               timeout=30)
    wait_until("the status bar back to normal", lambda: not ui.status_item("server not found").is_visible())
    welcome = wait_until("the welcome before the first turn", lambda: (lambda t: "No turn yet" in t and t)(ui.welcome_text()),
                         timeout=30)
    assert "turnback hooks install claude-code" in welcome, welcome
    assert ui.page.locator(".welcome-view-content .monaco-button", has_text="Begin a Turn by Hand").count() == 1
    ui.shot("21-welcome-before-the-first-turn")


def test_a_path_set_in_the_login_shell_is_found(fresh):
    """The docs' `export PATH="$PWD/.venv/bin:$PATH"`, put in the shell's profile: a new terminal has
    it, VS Code's extension host does not; the extension asks the login shell, as a terminal would."""
    ui = fresh.ui
    venv_bin = Path(fresh.tools["turnback"]).parent
    (fresh.home / ".bash_profile").write_text(f'export PATH="{venv_bin}:$PATH"\n')
    before = fresh.server.extension_log().count("turnback: running: session")
    ui.set_user_settings(dict(USER_SETTINGS))  # back to the default: a bare `turnback`
    wait_until("the server found through the login shell", lambda: "found on your login shell's PATH"
               in fresh.server.extension_log(), timeout=90)
    wait_until("and running", lambda: fresh.server.extension_log().count("turnback: running: session") > before, timeout=90)
    assert not any("turnback.server.command" in n for n in ui.notifications())
    ui.shot("22-found-through-the-login-shell")
