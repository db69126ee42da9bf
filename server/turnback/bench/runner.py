"""The bench runner: argument parsing, the scenario registry, figures, checks and output."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

SCALES = ("tiny", "small", "full")


class Unavailable(Exception):
    """A scenario that cannot measure its subject says so instead of inventing a number; the command
    then exits 1 like a failed check (every subject is built, so this is a broken build)."""


class CheckFailed(Exception):
    pass


@dataclass
class Figure:
    scenario: str
    figure: str
    value: object
    unit: str | None
    baseline: float | None = None
    baseline_source: str | None = None
    note: str | None = None
    load: float | None = None  # the machine's 1-minute load average when the figure was taken

    def to_json(self) -> dict:
        out = {"scenario": self.scenario, "figure": self.figure, "value": self.value, "unit": self.unit}
        if self.load is not None:
            out["load"] = self.load
        if self.baseline is not None:
            out["baseline"] = self.baseline
            out["baselineSource"] = self.baseline_source
            if isinstance(self.value, (int, float)) and self.baseline:
                out["ratio"] = round(self.value / self.baseline, 6)
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Context:
    scenario: str
    scale: str
    work: Path
    shared: dict
    figures: list[Figure] = field(default_factory=list)
    checks: list[tuple[str, bool, str]] = field(default_factory=list)

    def pick(self, tiny, small, full):
        return {"tiny": tiny, "small": small, "full": full}[self.scale]

    def fig(self, figure: str, value, unit: str | None, *, baseline: float | None = None,
            source: str | None = None, note: str | None = None) -> None:
        if isinstance(value, float):
            value = round(value, 6)
        self.figures.append(Figure(self.scenario, figure, value, unit, baseline, source, note,
                                   load_average()))

    def check(self, what: str, ok: bool, detail: str = "") -> bool:
        self.checks.append((what, bool(ok), detail))
        return bool(ok)

    def require(self, what: str, ok: bool, detail: str = "") -> None:
        """A check whose failure makes the rest of the scenario meaningless."""
        if not self.check(what, ok, detail):
            raise CheckFailed(f"{what}: {detail}")

    def dir(self, name: str) -> Path:
        p = self.work / self.scenario / name
        p.mkdir(parents=True, exist_ok=True)
        return p


_REGISTRY = {
    "alternating-snapshots": "snapshots:run",
    "capture-latency": "latency:run",
    "dedup-scaling": "dedup:run",
    "checkpoint-vs-shadow-git": "shadow:run",
    "long-session": "longsession:run",
    "close-save": "history:run_close_save",
    "scan": "history:run_scan",
    "responsiveness": "responsive:run",
    "collect": "history:run_collect",
    "hook-roundtrip": "live:run_hook_roundtrip",
    "watcher-fallback": "live:run_watcher_fallback",
    "live-resources": "resources:run",
    "agent-hooks": "agenthooks:run",
    "agent-overhead": "agentoverhead:run",
    "fence-cost": "fence:run",
    "hook-budgets": "hookbudget:run",
    "recovery-rollback": "recovery:run",
    "first-checkpoint": "firstcp:run",
    "first-checkpoint-250k": "firstcp:run_250k",
    "turn-fast-path": "fastpath:run",
    "long-session-edits": "longsession:run_edits",
    "real-history": "realhistory:run",
    "real-history-bad-input": "badinput:run",
    "cli-turn": "cliturn:run",
    "store-open": "storeopen:run",
}


def _load(name: str) -> Callable[[Context], None]:
    import importlib

    module, func = _REGISTRY[name].split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), func)


SCENARIOS = ("alternating-snapshots", "capture-latency", "dedup-scaling", "checkpoint-vs-shadow-git",
             "long-session", "close-save", "scan", "responsiveness", "collect",
             "hook-roundtrip", "watcher-fallback", "live-resources", "agent-hooks", "agent-overhead",
             "fence-cost",
             "hook-budgets", "recovery-rollback", "first-checkpoint", "first-checkpoint-250k",
             "turn-fast-path", "long-session-edits", "real-history",
             "real-history-bad-input", "cli-turn", "store-open")


# ---------------------------------------------------------------------------------------- output

def _human(value, unit) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if unit == "bytes" and isinstance(value, (int, float)):
        v = float(value)
        for u in ("B", "KiB", "MiB", "GiB"):
            if abs(v) < 1024 or u == "GiB":
                return f"{v:.0f} {u}" if u == "B" else f"{v:.2f} {u}"
            v /= 1024
    if unit == "s" and isinstance(value, (int, float)):
        return f"{value * 1000:.2f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "ms" and isinstance(value, (int, float)):
        return f"{value:.2f} ms"
    if isinstance(value, float):
        return f"{value:.3g}" + (f" {unit}" if unit else "")
    return f"{value}" + (f" {unit}" if unit else "")


def _row(f: Figure) -> list[str]:
    d = f.to_json()
    ratio = d.get("ratio")
    return [f.scenario, f.figure, _human(f.value, f.unit),
            _human(f.baseline, f.unit) + (f" ({f.baseline_source})" if f.baseline_source else "")
            if f.baseline is not None else "",
            f"{ratio:.3g}x" if isinstance(ratio, (int, float)) else "",
            "" if f.load is None else f"{f.load:.1f}"]


def _print_table(rows: list[list[str]], out) -> None:
    head = ["scenario", "figure", "ours", "baseline", "ratio", "load"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    print(line, file=out)
    print("-" * len(line), file=out)
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), file=out)


# ---------------------------------------------------------------------------------------- main

def _parse(argv):
    ap = argparse.ArgumentParser(
        prog="turnback bench",
        description="Replay the decision record's workloads and race a shadow-git peer.")
    ap.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                    help=f"scenarios to run (default: all): {', '.join(SCENARIOS)}")
    ap.add_argument("--scale", choices=SCALES, default="small")
    ap.add_argument("--json", action="store_true", help="one JSON line per figure")
    ap.add_argument("--workdir", help="where to build stores and workspaces (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder afterwards")
    ap.add_argument("--list", action="store_true", help="list the scenarios and exit")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    try:
        args = _parse(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    out = sys.stdout
    if args.list:
        for name in SCENARIOS:
            print(name, file=out)
        return 0
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        print(f"turnback bench: unknown scenario(s) {', '.join(unknown)}; "
              f"choose from {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    chosen = [s for s in SCENARIOS if not args.scenarios or s in args.scenarios]
    if args.workdir:
        work = Path(args.workdir).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="turnback-bench-"))
    shared: dict = {"scale": args.scale, "work": work}
    failed = False
    rows: list[list[str]] = []
    started = time.perf_counter()
    try:
        for name in chosen:
            ctx = Context(name, args.scale, work, shared)
            t0 = time.perf_counter()
            status, reason = "ok", ""
            try:
                _load(name)(ctx)
            except Unavailable as exc:
                status, reason = "unavailable", str(exc)
            except CheckFailed as exc:
                status, reason = "failed", str(exc)
            except Exception as exc:  # noqa: BLE001 - a crashing scenario is a failed scenario
                status, reason = "failed", f"{type(exc).__name__}: {exc}"
                traceback.print_exc(file=sys.stderr)
            elapsed = time.perf_counter() - t0
            bad = [c for c in ctx.checks if not c[1]]
            if status == "ok" and bad:
                status = "failed"
                reason = "; ".join(f"{w}: {d}" for w, _ok, d in bad)
            if status == "ok" and not ctx.checks:
                status, reason = "failed", "the scenario checked nothing"
            lines = [f.to_json() for f in ctx.figures]
            if status == "unavailable":
                lines.append({"scenario": name, "figure": "unavailable", "value": None, "unit": None,
                              "reason": reason})
            else:
                lines.append({"scenario": name, "figure": "correct", "value": 1 if status == "ok" else 0,
                              "unit": "check", "checks": len(ctx.checks),
                              **({"reason": reason} if reason else {})})
            lines.append({"scenario": name, "figure": "wall", "value": round(elapsed, 3), "unit": "s"})
            failed |= status != "ok"  # an unavailable figure is a promise broken, not a pass
            if args.json:
                for line in lines:
                    print(json.dumps(line, sort_keys=False), file=out, flush=True)
            else:
                rows.extend(_row(f) for f in ctx.figures)
                verdict = {"ok": f"correct ({len(ctx.checks)} checks)", "failed": f"FAILED: {reason}",
                           "unavailable": f"unavailable: {reason}"}[status]
                rows.append([name, "result", verdict, "", "", ""])
                rows.append([name, "wall", _human(elapsed, "s"), "", "", ""])
                print(f"[{name}] {verdict} in {elapsed:.1f} s", file=sys.stderr, flush=True)
    finally:
        for closer in shared.get("_cleanup", []):
            try:
                closer()
            except Exception:  # noqa: BLE001
                pass
        if not args.keep and not args.workdir:
            _remove(work)
    total = time.perf_counter() - started
    if args.json:
        print(json.dumps({"scenario": "*", "figure": "total-wall", "value": round(total, 3), "unit": "s",
                          "scale": args.scale, "load": load_average(), "cores": os.cpu_count()}),
              file=out)
    else:
        _print_table(rows, out)
        print(f"\nscale {args.scale}; {len(chosen)} scenario(s) in {total:.1f} s; "
              f"{'SOME CHECK FAILED' if failed else 'every check passed'}", file=out)
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------- helpers

def _remove(work: Path) -> None:
    """Remove the work folder. Small ones now; a big one (a full run leaves a few hundred thousand
    files) by a detached `rm -rf`, so the command does not spend minutes unlinking after its answer."""
    count = 0
    for _folder, _dirs, files in os.walk(work):
        count += len(files)
        if count > 20_000:
            break
    if count <= 20_000 or not shutil.which("rm"):
        shutil.rmtree(work, ignore_errors=True)
        return
    import subprocess

    subprocess.Popen(["rm", "-rf", "--", str(work)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)


def load_average() -> float | None:
    """The 1-minute load average, printed beside every figure: on a shared machine a time means
    little without it (ratios to a baseline of the same run mean more)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(1, math.ceil(q / 100 * len(s)))
    return s[k - 1]


def disk_usage(path: Path) -> tuple[int, int]:
    """(bytes on disk as du counts them, apparent bytes) of a folder tree, hard links counted once."""
    blocks = apparent = 0
    seen: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            key = (st.st_dev, st.st_ino)
            if st.st_nlink > 1:
                if key in seen:
                    continue
                seen.add(key)
            blocks += st.st_blocks * 512
            apparent += st.st_size
    return blocks, apparent
