"""The fault and crash models: layers a test installs over the file-system seam (`store/fs/`).

Why here, outside the seam: as in SQLite, whose test VFS layers its fault injectors over the real
one in separate files, the production seam knows only its hook (`store/fs/layer.py`) and never
imports this package, unless a test does or the environment of a crash test's subprocess asks
(`TURNBACK_CRASH_AT` and the like). Why inside `store/`: the models speak the seam's operations and
the seam's hook must be able to load them from that environment, so they share its floor; a package
of their own above it would make that hook an upward arrow.

`plan.py`: fail (or crash at) the Nth operation, sticky faults, a full disk; `faultplan.py`, what a
test imports to install one; `crashfs.py`: the power cut, which undoes every write and name change
not yet made durable. `bench/recovery.py` counts a recovery's operations with a plan that faults
nothing: the bench is a harness too.
"""
