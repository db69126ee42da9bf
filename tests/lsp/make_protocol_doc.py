"""Build the examples of docs/protocol.md from a recording of the end-to-end tests.

    TURNBACK_RECORD=/tmp/rec.jsonl .venv/bin/python -m pytest tests/lsp -k "emacs or not vscode"
    .venv/bin/python tests/lsp/make_protocol_doc.py /tmp/rec.jsonl > /tmp/examples.md

Prints one "request / response" pair per method (and one error per data.code) with temporary paths
replaced by /home/me/proj and long lists shortened; docs/protocol.md pastes these blocks.
"""

from __future__ import annotations

import json
import re
import sys

PATH = re.compile(r"/tmp/pytest-of-[^/]+/pytest-\d+/[^/\"]+/(?:crash\d+/|probe/)?ws")


def clean(value, depth=0):
    if isinstance(value, str):
        value = PATH.sub("/home/me/proj", value)
        return value if len(value) <= 400 else value[:60] + "…(shortened)"
    if isinstance(value, list):
        items = [clean(v, depth + 1) for v in value[:4]]
        return items
    if isinstance(value, dict):
        return {k: clean(v, depth + 1) for k, v in value.items() if k != "traceback"}
    return value


def dump(value) -> str:
    return json.dumps(clean(value), indent=2, ensure_ascii=False)


PREFER = {
    "turnback/rewind/prepare": lambda e: len(e["result"]["files"]) == 2 and e["result"]["effects"]["restored"],
    "turnback/redo/list": lambda e: e["result"]["available"],
    "turnback/turn/capture": lambda e: e["params"].get("phase") == "before",
    "turnback/turn/step": lambda e: "summary" in e["params"],
    "turnback/rewind/commit": lambda e: e["result"]["status"] == "committed",
    "turnback/session/info": lambda e: e["result"]["turnCount"] > 0,
    "turnback/session/log": lambda e: len(e["result"]["turns"]) == 2,
    "turnback/directive/upsert": lambda e: "parentId" not in e["params"],
    "turnback/turn/begin": lambda e: e["params"].get("kind") == "directive",
    "turnback/turn/settle": lambda e: e["result"].get("headSeq"),
    "turnback/workflow/set": lambda e: "tasks" in e["params"],
    "turnback/agent/transcript": lambda e: "agentId" in e["params"],
    "turnback/directive/record": lambda e: "answer" in e["params"],
}


def main(path: str) -> None:
    recs = [json.loads(line) for line in open(path, encoding="utf-8")]
    done = set()
    for e in recs:
        if e["kind"] != "request" or "error" in e or e["method"] in done:
            continue
        if e["method"] == "initialize":
            continue
        chosen = next((x for x in recs if x["kind"] == "request" and x["method"] == e["method"]
                       and "error" not in x and PREFER.get(e["method"], lambda _: True)(x)), e)
        done.add(e["method"])
        print(f"### {e['method']}\n\n```json\n--> {dump(chosen['params'])}\n<-- {dump(chosen['result'])}\n```\n")
    codes = set()
    for e in recs:
        if "error" in e and isinstance(e["error"]["data"], dict):
            code = e["error"]["data"].get("code")
            if code not in codes:
                codes.add(code)
                print(f"### error {code} ({e['method']})\n\n```json\n--> {dump(e['params'])}\n"
                      f"<-- {dump({'error': e['error']})}\n```\n")
    seen = set()
    for e in recs:
        if e["kind"] in ("notification", "server-request") and e["method"] not in seen:
            seen.add(e["method"])
            print(f"### {e['method']}\n\n```json\n{dump(e['params'])}\n```\n")


if __name__ == "__main__":
    main(sys.argv[1])
