"""What a hook does when the usual exchange with its owner is not the whole story (hooks/fast.py).

An answer other than the quiet one is parsed here (`answer`: what to print, an error, an older
owner); and when the owner of the hook's own folder could not take the event, the payload is read
and its own `cwd` followed (`parsed`): to the owner of that workspace, to an owner started for it or
the store opened in this process (`runtime.run`), or into the spool (`runtime.undelivered`).
Kept apart from fast.py so that the usual event compiles none of it.
"""

from __future__ import annotations

import sys

from .fast import (ELSEWHERE, EXIT_BLOCK, EXIT_OK, OLDER_OWNER, OTHER_PLACE, Missed, cwd_of,
                   find_workspace, parse, send)


def answer(reply: bytes, reader):
    """Any answer but the quiet one: parsed, after the notifications the owner fans out."""
    import json

    message = json.loads(reply)
    while not (isinstance(message, dict) and message.get("id") == 1
               and ("result" in message or "error" in message)):
        message = json.loads(reader.body())
    error = message.get("error")
    if error is not None:
        data = error.get("data") if isinstance(error, dict) and isinstance(error.get("data"), dict) \
            else {}
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


def parsed(agent: str, body: bytes, event: str | None, event_id: str, here: str | None, *,
           tried=None) -> int:
    """The payload read first, and handed to the owner of the workspace its own `cwd` names.
    `tried` is (a workspace, what came of handing the event to its owner): not tried twice."""
    raw = parse(body, event)
    place = find_workspace(cwd_of(raw, here))
    if place is None:
        return EXIT_OK  # not a workspace turnback knows (or not one of the user's own): no trace
    from . import runtime

    outcome = tried[1] if tried is not None and tried[0] == place else None
    if outcome is None and isinstance(raw, dict):
        outcome = send(place, agent, body, event, here, event_id)
        if isinstance(outcome, int):
            return outcome
    if outcome == OTHER_PLACE:  # its own owner says it is elsewhere: a moved workspace
        outcome = Missed("the owner of this workspace says the event's folder is elsewhere",
                         sent=True)
    if isinstance(outcome, Missed):
        return runtime.undelivered(agent, raw, body, event, event_id, place, outcome)
    return runtime.run(agent, event=event, body=body, event_id=event_id,
                       older_owner=outcome == OLDER_OWNER)
