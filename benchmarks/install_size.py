"""Installed size of the full development environment (``.[dev]``), default vs CPU-only.

Two virtual environments are built in the same run, from this checkout:

* ``default``: ``.[dev]`` as ``pip install -e '.[dev]'`` resolves it; on Linux x86-64, PyPI's torch
  brings the NVIDIA libraries (``nvidia-*``) and triton with it, GPU or not;
* ``cpu``: torch installed first from a CPU build (``--torch-index``, PyTorch's CPU wheel index, or
  a local ``--torch-wheel``), then ``.[dev]`` with torch held to that build, so no CUDA library is
  pulled in. ``--torchvision-index`` (default: the torch index) gives torchvision its CPU build too;
  with ``--torch-wheel`` alone, torchvision comes from PyPI, whose Linux build needs CUDA torch to
  load its operators: the results file records whether ``import torchvision`` worked.

Size is the apparent size (``st_size``) of every file under the environment, each inode counted
once (environments hard-linked from an installer's cache are counted at their full size), split
into the NVIDIA libraries, triton, torch, torchvision and the rest.

    python -m benchmarks.install_size --torch-index https://download.pytorch.org/whl/cpu
    python -m benchmarks.install_size --torch-wheel torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl

Uses ``uv`` when it is on PATH (fast, with its cache), else ``python -m venv`` and pip. Needs the
package index; writes ``benchmarks/results/install_size.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

from benchmarks._common import print_table, write_results

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("nvidia", "triton", "torch", "torchvision")


def _group(dist: str) -> str:
    """The group of an installed distribution, by its normalised name."""
    name = dist.lower().replace("-", "_").replace(".", "_")
    if name.startswith(("nvidia_", "cuda_")):  # nvidia-cublas-cu12, …, cuda-bindings, cuda-pathfinder
        return "nvidia"
    return name if name in GROUPS else "other"


def _owners(site_packages: Path) -> Dict[str, str]:
    """Each installed file (resolved path) -> the group of the distribution whose RECORD lists it."""
    owners: Dict[str, str] = {}
    for record in site_packages.glob("*.dist-info/RECORD"):
        group = _group(record.parent.name.split("-")[0])
        for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
            rel = line.rsplit(",", 2)[0] if line.count(",") >= 2 else line
            if rel:
                owners[os.path.normpath(site_packages / rel)] = group
    return owners


def venv_size(path: str | os.PathLike) -> Dict[str, int]:
    """Bytes of the files under ``path``, each inode once, by group.

    Returns ``{"total", "nvidia", "triton", "torch", "torchvision", "other"}``; a file belongs to the
    distribution whose ``RECORD`` lists it, anything else (the interpreter link, caches) to ``other``.
    """
    root = Path(path)
    owners: Dict[str, str] = {}
    for site_packages in root.glob("lib/python*/site-packages"):
        owners.update(_owners(site_packages))
    sizes = {g: 0 for g in (*GROUPS, "other")}
    seen = set()
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.normpath(os.path.join(dirpath, f))
            st = os.lstat(p)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            sizes[owners.get(p, "other")] += st.st_size
    sizes["total"] = sum(sizes.values())
    return sizes


def _installer() -> str:
    return "uv" if shutil.which("uv") else "pip"


def _make_venv(path: Path) -> Path:
    if _installer() == "uv":
        subprocess.run(["uv", "venv", "-q", str(path), "--python", sys.executable], check=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin" / "python"


def _install(python: Path, args: List[str]) -> None:
    if _installer() == "uv":
        cmd = ["uv", "pip", "install", "-q", "-p", str(python), *args]
    else:
        cmd = [str(python), "-m", "pip", "install", "-q", *args]
    subprocess.run(cmd, check=True, cwd=ROOT)


def _probe(python: Path) -> Dict[str, object]:
    code = ("import importlib.metadata as m, json, torch\n"
            "out = {'torch': torch.__version__, 'torch_cuda': torch.version.cuda}\n"
            "try:\n    import torchvision; out['torchvision_imports'] = True\n"
            "except Exception as e:\n    out['torchvision_imports'] = False; out['torchvision_error'] = repr(e)[:200]\n"
            "out['torchvision'] = m.version('torchvision')\n"
            "print(json.dumps(out))")
    run = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def _build(kind: str, where: Path, torch_index: Optional[str], torch_wheel: Optional[str],
           torchvision_index: Optional[str]) -> Dict[str, object]:
    python = _make_venv(where / kind)
    row: Dict[str, object] = {"environment": kind}
    if kind == "cpu":
        _install(python, [torch_wheel] if torch_wheel else ["torch", "--index-url", torch_index])
        torch_version = _probe_version(python, "torch")
        constraints = where / "cpu-constraints.txt"
        constraints.write_text(f"torch=={torch_version}\n")
        if torchvision_index:
            _install(python, ["torchvision", "-c", str(constraints), "--index-url", torchvision_index])
        _install(python, ["-c", str(constraints), "-e", ".[dev]"])
        row["torchvision_from"] = torchvision_index or "PyPI"
    else:
        _install(python, ["-e", ".[dev]"])
    row.update(_probe(python))
    row.update({f"{k}_bytes": v for k, v in venv_size(where / kind).items()})
    return row


def _probe_version(python: Path, package: str) -> str:
    run = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                         check=True, capture_output=True, text=True)
    return run.stdout.strip()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--torch-index", help="index URL of CPU torch wheels")
    src.add_argument("--torch-wheel", help="a CPU torch wheel file")
    ap.add_argument("--torchvision-index", help="index URL of CPU torchvision wheels (default: --torch-index)")
    ap.add_argument("--keep", help="build the environments in this folder and keep them (default: a temporary one)")
    args = ap.parse_args(argv)
    torchvision_index = args.torchvision_index or args.torch_index

    with tempfile.TemporaryDirectory(prefix="sibscan-install-size-") as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        rows = [_build(kind, where, args.torch_index, args.torch_wheel, torchvision_index)
                for kind in ("default", "cpu")]
    print_table([{"environment": r["environment"], "torch": r["torch"],
                  **{f"{g} GB": r[f"{g}_bytes"] / 1e9 for g in ("total", *GROUPS)}} for r in rows])
    ratio = rows[1]["total_bytes"] / rows[0]["total_bytes"]
    print(f"cpu / default: {ratio:.2f}")
    path = write_results("install_size", {
        "command": "python -m benchmarks.install_size " + " ".join(argv if argv is not None else sys.argv[1:]),
        "installer": _installer(), "torch_source": args.torch_wheel and Path(args.torch_wheel).name or args.torch_index,
        "rows": rows, "cpu_over_default": ratio})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
