"""Print pip requirements that pin pyproject.toml's lower bounds exactly:
``python3 .ci/lowest_pins.py EXTRA,... [NAME==VER ...]``.

The core dependencies and the named extras, each ``name>=X.Y`` as ``name==X.Y.*`` (the bound's release
line; a three-part bound such as ``faiss-cpu>=1.14.2`` exactly), other specifiers kept as written;
``NAME==VER`` arguments override a package's pin (numpy 2 for faiss, whose wheels need it).
"""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pin(req: str) -> tuple[str, str] | None:
    if ";" in req:  # the only marker used: python_version < '3.11' (tomli)
        if "python_version < '3.11'" not in req or sys.version_info >= (3, 11):
            return None
        req = req.split(";")[0].strip()
    if req.startswith("sibscan"):
        return None
    m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    name, spec = m.group(1).lower(), m.group(2)
    low = re.search(r">=\s*([0-9][0-9.]*)", spec)
    if low:
        v = low.group(1)
        return name, f"{name}=={v}" if v.count(".") >= 2 else f"{name}=={v}.*"
    return name, req


def pins(extras: list[str], overrides: list[str]) -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    out: dict[str, str] = {}
    for req in reqs:
        p = _pin(req)
        if p and p[0] not in out:
            out[p[0]] = p[1]
    for o in overrides:
        out[re.split(r"[=<>~!]", o, 1)[0].lower()] = o
    return list(out.values())


if __name__ == "__main__":
    print("\n".join(pins([e for e in sys.argv[1].split(",") if e], sys.argv[2:])))
