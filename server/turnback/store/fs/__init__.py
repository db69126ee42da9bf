"""The file-system seam: every mutation turnback makes goes through this package.

Two reasons for one seam. Durability is decided in one place (temp file, fsync, rename, fsync of the
folder: `publish.py`, `sync.py`), and a test can fail or end the process at the Nth mutating
operation (`layer.py`, the one hook; the fault and crash models that use it live outside, in
`store/testing/`) to prove that a crash at any instant leaves either the old state or the new one.

`ops.py` holds the primitive operations, one system call each; `anchored.py` opens every path below a
fenced root without following a link; `read.py` reads (not counted). Callers use this package's
names (`fs.write_atomic`, `fs.unlink`, ...): they are the seam's whole interface.
"""

from .anchored import fence_root
from .layer import install_from_env
from .ops import (TEMP_MARK, StrPath, append, chmod, create, discard, drop_cached, fsync, fsync_dir,
                  is_temp_name, link, mkdir, open_for_append, rename, rmdir, symlink, temp_path,
                  truncate, unlink, utime, write)
from .publish import (create_exclusive, is_placeholder, rename_noreplace, write_atomic,
                      write_temp)
from .read import READ_CHUNK, iter_read, open_read, read_file, read_file_and_stat, read_size
from .sync import folder_syncs, sync_folders, sync_step, syncfs_at, syncfs_or_fsync

__all__ = [
    "READ_CHUNK", "TEMP_MARK", "StrPath", "append", "chmod", "create", "create_exclusive",
    "discard", "drop_cached", "fence_root", "folder_syncs", "fsync", "fsync_dir",
    "install_from_env", "is_placeholder", "is_temp_name", "iter_read", "link", "mkdir",
    "open_for_append", "open_read", "read_file", "read_file_and_stat", "read_size", "rename",
    "rename_noreplace", "rmdir", "symlink", "sync_folders", "sync_step", "syncfs_at",
    "syncfs_or_fsync", "temp_path", "truncate", "unlink", "utime", "write", "write_atomic",
    "write_temp",
]

install_from_env()  # a crash test's subprocess: TURNBACK_CRASH_AT and the like (see layer.py)
