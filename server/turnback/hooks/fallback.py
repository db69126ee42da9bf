"""What a hook does when the owner of its own folder could not take the event (hooks/fast.py `run`):
the payload is read and its own `cwd` followed (`parsed`): to the owner of that workspace, to an
owner started for it or the store opened in this process (`runtime.run`), or into the spool
(`runtime.undelivered`). Kept apart from fast.py so that the usual event compiles none of it.
"""

from __future__ import annotations

from .fast import cwd_of, find_workspace, parse, send
from . import EXIT_OK, OLDER_OWNER, OTHER_PLACE, Missed


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
