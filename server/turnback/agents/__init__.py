"""The agents' records: what agent hooks keep between their short processes, inside a store.

`agentrecord` (which agent session feeds which turnback session, the turn it is in, its tool calls),
`spool` (events a hook could not hand to an owner, kept in order) and `agenttranscript` (reading an
agent's own transcript). They are the hooks' and the workbench's vocabulary, not the object space's:
they sit one floor above `store/` (they write through its seam, lock with its budgeted locks and
check files with its trust rules) and below everything that reads them. Standard library and
`store/` only: a hook's fast path imports them.
"""
