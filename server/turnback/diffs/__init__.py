"""What changed, in a person's words: the changes of a turn or a range, their unified diffs, and the
text rules (what counts as text, how lines split) the three-way merge of kept user edits shares."""
