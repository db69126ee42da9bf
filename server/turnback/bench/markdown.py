"""The figures of a `turnback bench --json` run as the markdown table of docs/performance.md.

    turnback bench --scale full --json > figures.jsonl
    python -m turnback.bench.markdown figures.jsonl
"""

from __future__ import annotations

import json
import sys

from .runner import _human


def table(lines) -> list[str]:
    out = ["| scenario | figure | ours | baseline | source | ours ÷ baseline | load |",
           "|---|---|---|---|---|---|---|"]
    for line in lines:
        line = line.strip()
        if not line:
            continue
        f = json.loads(line)
        if f["scenario"] == "*":
            continue
        if f["figure"] == "correct":
            verdict = "pass" if f["value"] == 1 else f"FAIL ({f.get('reason', '')})"
            out.append(f"| {f['scenario']} | **correctness** | {verdict} ({f.get('checks', '?')} checks) | | | | |")
            continue
        if f["figure"] == "wall":
            out.append(f"| {f['scenario']} | *scenario wall time* | {_human(f['value'], 's')} | | | | |")
            continue
        value = _human(f["value"], f["unit"])
        if isinstance(f["value"], int) and f["unit"] not in ("bytes", "s", "ms"):
            value = f"{f['value']:,} {f['unit']}"
        base = _human(f["baseline"], f["unit"]) if "baseline" in f else ""
        ratio = f"{f['ratio']:.3g}" if isinstance(f.get("ratio"), (int, float)) else ""
        load = f"{f['load']:.1f}" if isinstance(f.get("load"), (int, float)) else ""
        out.append(f"| {f['scenario']} | {f['figure']} | {value} | {base} | "
                   f"{f.get('baselineSource', '')} | {ratio} | {load} |")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with (open(argv[0]) if argv else sys.stdin) as src:
        print("\n".join(table(src)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
