"""Rewrite pyproject.toml's [tool.ruff.lint.per-file-ignores] from what ruff finds today: every file that
still breaks a rule, with its count (tests/test_lint.py holds each file to its count, so the list shrinks).

Run after wrapping a file's long lines, or after moving files (the entries name paths):
    python .ci/ruff_ignores.py
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
# why a rule other than E501 is left in a file (the line after the table header names the others)
WHY = {"E721": "dtype == object (a numpy dtype equals object; `is` would not)"}


def main() -> int:
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--config", "lint.per-file-ignores = {}",
                          "--output-format", "json", "--exit-zero", "."], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    found: dict = defaultdict(Counter)
    for d in json.loads(out):
        found[Path(d["filename"]).resolve().relative_to(ROOT).as_posix()][d["code"]] += 1
    rows = []
    for path in sorted(found):
        codes = found[path]
        notes = []
        if codes["E501"]:
            notes.append(f"{codes['E501']} line" + ("s" if codes["E501"] > 1 else ""))
        notes += [f"{n} {code}" + (f": {WHY[code]}" if code in WHY else "") for code, n in sorted(codes.items())
                  if code != "E501"]
        rows.append(f'"{path}" = [{", ".join(json.dumps(c) for c in sorted(codes))}]  # {", ".join(notes)}')
    text = PYPROJECT.read_text(encoding="utf-8")
    head = "[tool.ruff.lint.per-file-ignores]\n"
    start = text.index(head) + len(head)
    comments = re.match(r"(?:#.*\n)*", text[start:]).group(0)
    end = start + len(comments)
    while end < len(text) and text[end] == '"':
        end = text.index("\n", end) + 1
    PYPROJECT.write_text(text[:start] + comments + "".join(r + "\n" for r in rows) + text[end:], encoding="utf-8")
    print(f"{len(rows)} files, {sum(sum(c.values()) for c in found.values())} findings", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
