"""Whether Gemini CLI will run the hooks installed for a project (docs/agents/gemini.md, "Gemini
runs it only in a trusted folder").

Gemini CLI 0.61 runs no hooks at all in a folder it does not trust (the project's, and the user's
too), and headless (`gemini -p`) it refuses to start there. A folder is trusted when folder trust
is off (`security.folderTrust.enabled: false` in its user settings), or when the longest rule of
`trustedFolders.json` that covers it says `TRUST_FOLDER` (the folder and below) or `TRUST_PARENT`
(the rule's parent and below); `DO_NOT_TRUST` or no rule: untrusted. turnback only reads these
files: trusting a folder is the person's decision, made in Gemini's own dialog.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

TRUSTING = ("TRUST_FOLDER", "TRUST_PARENT")
STEP = ("open `gemini` in this folder and answer its trust question with \"Trust folder\" (or "
        "/permissions there); a headless run can set GEMINI_CLI_TRUST_WORKSPACE=true instead "
        "(`--skip-trust` runs Gemini but not its hooks)")


def gemini_dir() -> Path:
    """`.gemini` under GEMINI_CLI_HOME, else the home (install.USER_DIRS; not imported from there:
    install imports this module)."""
    return Path(os.path.expanduser(os.environ.get("GEMINI_CLI_HOME") or "~")) / ".gemini"


def trusted_folders_path() -> Path:
    env = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    return Path(env) if env else gemini_dir() / "trustedFolders.json"


def _read(path: Path) -> tuple[dict | None, str | None]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path} cannot be read ({exc})"
    return (data, None) if isinstance(data, dict) else (None, f"{path} holds no JSON object")


def _folder_trust_enabled() -> bool:
    data, _ = _read(gemini_dir() / "settings.json")
    value = ((data or {}).get("security") or {}).get("folderTrust") or {}
    return not (isinstance(value, dict) and value.get("enabled") is False)


def _inside(folder: Path, rule: Path) -> bool:
    return folder == rule or rule in folder.parents


def verdict(root: Path) -> tuple[str | None, str | None]:
    """(the trust level of the longest rule covering `root`, the rule's folder), or (None, None)."""
    data, _ = _read(trusted_folders_path())
    folder = Path(os.path.realpath(root))
    best: tuple[int, str, str] | None = None
    for rule, level in (data or {}).items():
        if not isinstance(rule, str) or not isinstance(level, str):
            continue
        path = Path(os.path.realpath(os.path.expanduser(rule)))
        effective = path.parent if level == "TRUST_PARENT" else path
        if _inside(folder, effective) and (best is None or len(str(effective)) > best[0]):
            best = (len(str(effective)), level, str(effective))
    return (best[1], best[2]) if best else (None, None)


def check(root: Path) -> dict:
    """{"blocked": why Gemini will not run the hooks here or None, "step": what fixes it}."""
    if not _folder_trust_enabled():
        return {"blocked": None, "step": None, "folderTrust": False}
    path = trusted_folders_path()
    _, problem = _read(path)
    if problem:
        return {"blocked": f"Gemini cannot read its trusted folders: {problem}", "step": STEP}
    level, rule = verdict(root)
    if level in TRUSTING:
        return {"blocked": None, "step": None, "trustedBy": rule}
    why = (f"Gemini was told not to trust {rule} ({path})" if level == "DO_NOT_TRUST" else
           f"this folder is not trusted by Gemini (no rule in {path})")
    return {"blocked": why + "; Gemini runs no hooks in an untrusted folder", "step": STEP}
