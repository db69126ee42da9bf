"""Can this interpreter run the server bundled in this .vsix? Printed as one JSON line.

The extension runs `<python> bundled/tool/probe.py` before it starts the server
(src/bundled.ts). Any Python 3 can run this file: it says which version and platform it is, whether
the .vsix has libraries for it (bundled/libs/cpXY), and whether they import (a musl system, or a
glibc older than the wheels', fails here and not halfway through the server's start).
"""
import json
import os
import platform
import sys

here = os.path.dirname(os.path.abspath(__file__))
libs = os.path.join(os.path.dirname(here), "libs")
tag = "cp%d%d" % sys.version_info[:2]
try:
    bundled = sorted(d for d in os.listdir(libs) if d.startswith("cp"))
except OSError:
    bundled = []
info = {
    "executable": sys.executable,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "implementation": sys.implementation.name,
    "machine": platform.machine(),
    "system": platform.system(),
    "tag": tag,
    "bundled": bundled,
    "ok": False,
}
if sys.implementation.name != "cpython" or tag not in bundled:
    info["reason"] = "version"
else:
    sys.path[0:0] = [os.path.join(libs, tag), os.path.join(libs, "common")]
    try:
        import cbor2  # noqa: F401
        import psutil  # noqa: F401
        import xxhash  # noqa: F401
        import zstandard  # noqa: F401

        import turnback

        info["ok"] = True
        info["turnback"] = turnback.__version__
    except Exception as exc:  # an ImportError, or an OSError from a shared library
        info["reason"] = "import"
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(info))
