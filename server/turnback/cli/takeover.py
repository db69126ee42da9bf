"""`turnback takeover [--yes]`: take the store from its holder after showing who it is."""

from __future__ import annotations

from .exits import EXIT_ERROR, EXIT_OK


def register(add) -> None:
    p = add("takeover", "take the store's ownership from its holder (another machine, a hung "
            "process); asks first, or --yes")
    p.add_argument("--yes", action="store_true", help="take it over without asking")


def cmd_takeover(ctx) -> int:
    from ..workbench.ownership import takeover

    wb = ctx.open(must_exist=True)
    try:
        first = takeover(wb, {})
        if first["status"] == "owner":
            result = first
        else:
            if not ctx.json:
                ctx.print(first["message"])
            yes = ctx.args.yes or (not ctx.json and ctx.interactive()
                                   and ctx.confirm("Take over the store?"))
            result = takeover(wb, {"confirm": True}) if yes else first
    finally:
        wb.close()
    if ctx.json:
        ctx.emit(result)
    elif result["status"] == "taken":
        ctx.print(f"this turnback took over the store (epoch {result['epoch']}); the previous holder "
                  "is an observer now")
    elif result["status"] == "owner":
        ctx.print("nobody else held the store; nothing to take over")
    else:
        ctx.print("Nothing changed. Run again with --yes to take over.")
    return EXIT_OK if result["status"] in ("taken", "owner") else EXIT_ERROR
