"""A hook command that records what a real agent sends before passing it on to turnback:

    python recorder.py OUT.jsonl -- /abs/turnback hook claude-code

For each event it appends one line to OUT: the payload, how many lines the agent's transcript had
when the hook ran (Claude Code often writes a turn's last record after its Stop hook), and what
turnback answered (exit status, standard output, time taken). Standard output and the exit status are
turnback's, so the agent sees exactly what it would have seen without the recorder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def _lines(path) -> int | None:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except (OSError, TypeError):
        return None


def main(argv: list[str]) -> int:
    out, rest = argv[0], argv[argv.index("--") + 1:]
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {"unparsed": raw.decode("utf-8", "replace")}
    transcript = payload.get("transcript_path") if isinstance(payload, dict) else None
    agent_transcript = payload.get("agent_transcript_path") if isinstance(payload, dict) else None
    seen = {"transcriptLines": _lines(transcript), "agentTranscriptLines": _lines(agent_transcript)}
    start = time.monotonic()
    proc = subprocess.run(rest, input=raw, capture_output=True)
    record = {"at": time.time(), "payload": payload, **seen,
              "turnback": {"exit": proc.returncode, "stdout": proc.stdout.decode("utf-8", "replace"),
                           "stderr": proc.stderr.decode("utf-8", "replace"),
                           "seconds": round(time.monotonic() - start, 4)}}
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
