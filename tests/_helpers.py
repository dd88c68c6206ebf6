"""Small helpers shared by several test modules (not a test module itself): hand labels written and
read in the ``labels.jsonl`` form, the oracle's answers to a recorded draw, and a labelling session
over a calibration folder.  Imported as ``from _helpers import ...`` (tests/ is on the path, as for
``planted_scan``)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List

from sibscan.calibration import LabelSession, LabelStore
from sibscan.calibration.flow import DRAW_FILE, _control_plan, _identity
from sibscan.verdict.record import LABELS_FILE
from sibscan.calibration.sampling import Draw, Population
from planted_scan import write_oracle_labels
from sibscan.store.scandir import ScanDir


def write_jsonl(path: Path, records: Iterable[dict], *, append: bool = False) -> Path:
    """Write (or append) ``records`` to ``path``, one JSON object a line; its folder is made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in records))
    return path


def write_labels(folder: Path, records: Iterable[dict], *, append: bool = False) -> Path:
    """Write (or append) ``records`` as ``folder/labels.jsonl`` (a calibration's answers)."""
    return write_jsonl(Path(folder) / LABELS_FILE, records, append=append)


def read_labels(folder: Path) -> List[dict]:
    """The records of ``folder/labels.jsonl``, in order."""
    return [json.loads(x) for x in (Path(folder) / LABELS_FILE).read_text().splitlines()]


def oracle_file(tmp_path: Path, planted, cal_dir: Path, name: str = "oracle.jsonl", **override) -> Path:
    """Every pair of the draw recorded in ``cal_dir`` labelled as the planted truth says, in the labels.jsonl
    form, at ``tmp_path/name`` (``override`` replaces fields of every record)."""
    return write_oracle_labels(planted, Path(cal_dir) / DRAW_FILE, Path(tmp_path) / name, **override)


def label_session(scan: Path, cal_dir: Path, controls: float = 0.0, seed: int = 0) -> LabelSession:
    """A labelling session over the draw in ``cal_dir`` of ``scan``, answers stored in its labels.jsonl; with
    ``controls`` > 0, control pairs at that share among them as ``calibrate`` mixes them in (seed ``seed``)."""
    sd = ScanDir(scan)
    nb = sd.neighbours()
    pop = Population.from_neighbours(nb)
    manifest = sd.manifest()
    store = LabelStore(Path(cal_dir) / LABELS_FILE, _identity(manifest))
    draw = Draw.load(Path(cal_dir) / DRAW_FILE, pop)
    splits = {s: sd.items(s) for s in ("train", "test")}
    plan = _control_plan(Path(cal_dir), controls, seed, sd, manifest, _identity(manifest), pop, draw, splits, None, nb)
    return LabelSession(pop, draw, store, splits["test"], splits["train"], controls=plan)


def cli_commands() -> list:
    """(path, click command) for every command and sub-command of ``sibscan``, sorted by path."""
    import typer

    from sibscan.cli import app

    root = typer.main.get_command(app)
    out, todo = [], [((), root)]
    while todo:
        path, cmd = todo.pop()
        out.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            todo.append(((*path, name), sub))
    return sorted(out, key=lambda pc: pc[0])
