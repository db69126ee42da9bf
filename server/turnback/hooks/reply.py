"""A live owner's answer other than the quiet one (hooks/fast.py recognises that one byte for byte):
parsed after the notifications the owner fans out, and what it says printed. Apart from fast.py so
that the usual event compiles none of it.
"""

from __future__ import annotations

import sys

from . import ELSEWHERE, EXIT_BLOCK, EXIT_OK, OLDER_OWNER, OTHER_PLACE, Missed


def answer(reply: bytes, reader):
    """Any answer but the quiet one: parsed, after the notifications the owner fans out."""
    import json

    message = json.loads(reply)
    while not (isinstance(message, dict) and message.get("id") == 1
               and ("result" in message or "error" in message)):
        message = json.loads(reader.body())
    error = message.get("error")
    if error is not None:
        given = error.get("data") if isinstance(error, dict) else None
        data: dict = given if isinstance(given, dict) else {}
        code = data.get("code")
        if code == ELSEWHERE:
            return OTHER_PLACE
        if code == "method-not-found":  # an older owner
            return OLDER_OWNER
        message_text = error.get("message", "") if isinstance(error, dict) else error
        return Missed(f"the owner answered [{code or 'internal'}] {message_text}", sent=True)
    return emit(message.get("result"))


def emit(answer) -> int:
    """Print what the owner said the hook prints; its exit status."""
    answer = answer if isinstance(answer, dict) else {}
    out, err = answer.get("stdout"), answer.get("stderr")
    if isinstance(out, str) and out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if isinstance(err, str) and err:
        sys.stderr.write(err)
    code = answer.get("exit")
    return code if code in (EXIT_OK, EXIT_BLOCK) else EXIT_OK
