"""A run record that proves what was run, and re-verifies it later.

The record is the ``"run"`` block of a ``manifest.json`` (an audit's ``--out`` folder, or a scan
directory)::

    run: {identity (sha256 of the inputs' hashes and the parameters), started, ended, status,
          resumed (bool), previous_started (when resumed), model_revision, seeds,
          inputs: [{role, path, kind ("file" | "folder"), sha256, bytes, files (folders)}],
          environment: {python, platform, machine, cpu, cpu_count, sibscan, packages: {name: version},
                        device: {...}},
          samples: {...} (what the owner records: attempted, scored, failed and missing samples)}

A folder's hash covers every file under it (relative path, size and content, in sorted order).
:func:`verify_run` re-hashes the inputs and says, file by file, whether they still match.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import SibscanError
from ._version import __version__

__all__ = ["RECORD_KEY", "RunRecord", "VerifyResult", "begin_run", "environment", "hash_path", "hash_inputs",
           "run_identity", "verify_run"]

#: the manifest key that holds the run record
RECORD_KEY = "run"
_CHUNK = 1 << 20


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def hash_path(path: os.PathLike) -> dict:
    """``{path, kind, sha256, bytes[, files]}`` of a file, or of every file under a folder."""
    p = Path(path).resolve()
    if p.is_file():
        return {"path": str(p), "kind": "file", "sha256": _sha256_file(p), "bytes": p.stat().st_size}
    if p.is_dir():
        h = hashlib.sha256()
        files = sorted(f for f in p.rglob("*") if f.is_file())
        total = 0
        for f in files:
            size = f.stat().st_size
            total += size
            h.update(f"{f.relative_to(p).as_posix()}\t{size}\t{_sha256_file(f)}\n".encode())
        return {"path": str(p), "kind": "folder", "sha256": h.hexdigest(), "bytes": total, "files": len(files)}
    raise SibscanError(f"{path}: input not found, so it cannot be hashed for the run record")


def hash_inputs(inputs: Sequence[Tuple[str, os.PathLike]]) -> List[dict]:
    """Hash each ``(role, path)``: a list of :func:`hash_path` records with their role."""
    return [{"role": role, **hash_path(path)} for role, path in inputs]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _device() -> dict:
    out = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    torch = sys.modules.get("torch")  # importing torch only to describe the machine would cost seconds
    if torch is None:
        out["cuda"] = "not checked (torch was not loaded by this run)"
    elif torch.cuda.is_available():
        out["cuda"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        out["torch"] = torch.__version__
    else:
        out["cuda"] = "none visible to torch"
        out["torch"] = torch.__version__
    return out


def _path_state() -> tuple:
    """Each ``sys.path`` entry with its folder's modification time: installing, upgrading or removing a
    package adds or removes a ``*.dist-info`` folder there, which changes it."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, None))
    return tuple(state)


@functools.lru_cache(maxsize=4)
def _packages(path_state: tuple) -> Tuple[Tuple[str, str], ...]:
    """Installed distributions as sorted ``(name, version)``, read once per :func:`_path_state`:
    reading every package's metadata took 0.1-0.5 s, paid by every scan and audit of a process."""
    from importlib.metadata import distributions

    packages: Dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            packages[name.lower()] = dist.version
    return tuple(sorted(packages.items()))


def environment() -> dict:
    """Python, platform, CPU, the installed packages and their versions, and the device."""
    return {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "platform": platform.platform(), "machine": platform.machine(), "cpu": _cpu_name(),
            "cpu_count": os.cpu_count(), "sibscan": __version__, "packages": dict(_packages(_path_state())),
            "device": _device()}


def run_identity(inputs: List[dict], parameters: dict) -> str:
    """sha256 of the inputs' (role, hash) pairs and the parameters: equal identity, equal run."""
    key = {"inputs": sorted([i["role"], i["sha256"]] for i in inputs), "parameters": parameters}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@dataclass
class RunRecord:
    """One run's record (module docstring); ``to_dict()`` is the manifest's ``run`` block."""

    identity: str
    inputs: List[dict]
    parameters: dict
    environment: dict
    started: str = field(default_factory=_now)
    ended: Optional[str] = None
    status: str = "running"
    resumed: bool = False
    previous_started: Optional[str] = None
    model_revision: Optional[str] = None
    seeds: Optional[list] = None
    samples: dict = field(default_factory=dict)

    def finish(self, samples: Optional[dict] = None, status: str = "complete") -> "RunRecord":
        """Stamp the end time and status (and the samples the owner counted)."""
        if samples is not None:
            self.samples = samples
        self.ended = _now()
        self.status = status
        return self

    def to_dict(self) -> dict:
        return asdict(self)


def begin_run(previous: Optional[dict], *, inputs: Sequence[Tuple[str, os.PathLike]], parameters: dict,
              model_revision: Optional[str] = None, seeds: Optional[list] = None, force: bool = False,
              where: str = "the output folder", resumed: Optional[bool] = None) -> RunRecord:
    """Start a run record, resuming ``previous`` (a manifest's ``run`` block) when it is the same run.

    Parameters
    ----------
    previous : dict or None
    inputs : sequence of (role, path)
        Every input file or folder; each is hashed now.
    parameters : dict
        Everything else that makes the run what it is (JSON-able).
    force : bool
        Start over when ``previous`` is another run (else that is refused).
    resumed : bool, optional
        The owner's own decision that this run resumes ``previous`` (a scan decides it from its
        content fingerprints); by default it resumes when the identities match.

    Raises
    ------
    SibscanError
        ``previous`` is a run of other inputs or parameters and ``force`` is False.
    """
    hashed = hash_inputs(inputs)
    identity = run_identity(hashed, parameters)
    if resumed is None:
        same = previous is not None and previous.get("identity") == identity
        if previous is not None and not same and not force:
            changed = _changed_roles(previous.get("inputs", []), hashed)
            why = f"inputs changed: {', '.join(changed)}" if changed else "other parameters"
            raise SibscanError(f"{where} holds the record of another run ({why}); pass --force to start over "
                               "there, or choose another --out")
        resumed = same
    rec = RunRecord(identity=identity, inputs=hashed, parameters=parameters, environment=environment(),
                    resumed=bool(resumed), model_revision=model_revision, seeds=seeds)
    if rec.resumed and previous is not None:
        rec.previous_started = previous.get("previous_started") or previous.get("started")
    return rec


def _changed_roles(old: List[dict], new: List[dict]) -> List[str]:
    before = {(i["role"], i["path"]): i["sha256"] for i in old}
    after = {(i["role"], i["path"]): i["sha256"] for i in new}
    return sorted({f"{r} {Path(p).name}" for (r, p) in set(before) | set(after)
                   if before.get((r, p)) != after.get((r, p))})


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_run`: per input ``status`` is ``match``, ``changed`` or ``missing``."""

    passed: bool
    run_dir: str
    files: List[dict]
    environment_changes: dict
    message: str

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict:
        return asdict(self)


def _env_changes(old: dict, new: dict) -> dict:
    out = {k: [old.get(k), new.get(k)] for k in ("python", "platform", "sibscan") if old.get(k) != new.get(k)}
    po, pn = old.get("packages", {}), new.get("packages", {})
    pk = {name: [po.get(name), pn.get(name)] for name in sorted(set(po) | set(pn)) if po.get(name) != pn.get(name)}
    if pk:
        out["packages"] = pk
    return out


def verify_run(run_dir: os.PathLike) -> VerifyResult:
    """Re-hash the inputs named in ``run_dir/manifest.json`` and compare them with the record.

    Environment differences (Python, platform, package versions) are listed but do not fail it.

    Raises
    ------
    SibscanError
        No manifest, or a manifest without a run record.
    """
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise SibscanError(f"{run_dir}: no manifest.json; give a folder written by 'sibscan audit --out' or 'sibscan "
                           "scan'")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SibscanError(f"{path}: cannot read the manifest ({exc})") from None
    rec = manifest.get(RECORD_KEY)
    if not isinstance(rec, dict) or not rec.get("inputs"):
        raise SibscanError(f"{path} has no run record (no '{RECORD_KEY}' block with inputs); re-run it with this "
                           "version of sibscan to write one")
    files = []
    for item in rec["inputs"]:
        p = Path(item["path"])
        if not p.exists():
            status, actual = "missing", None
        else:
            actual = hash_path(p)["sha256"]
            status = "match" if actual == item["sha256"] else "changed"
        files.append({"role": item["role"], "path": item["path"], "status": status,
                      "expected": item["sha256"], "actual": actual})
    bad = [f for f in files if f["status"] != "match"]
    env = _env_changes(rec.get("environment", {}), environment())
    if bad:
        message = (f"FAIL: {len(bad)} of {len(files)} inputs no longer match the run record: "
                   + "; ".join(f"{f['role']} {f['path']} {f['status']}" for f in bad))
    else:
        message = f"OK: all {len(files)} inputs match the run record ({rec.get('identity', '')[:12]})"
    if env:
        message += f"; environment differs in: {', '.join(env)} (listed, not a failure)"
    return VerifyResult(not bad, str(run_dir), files, env, message)
