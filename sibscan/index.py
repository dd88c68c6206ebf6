"""A reusable train index: items + exact fingerprints + embeddings of a training set, built once.

``sibscan index build TRAIN --out IDX`` embeds the training set; ``sibscan index add IDX MORE`` appends
to it (embedding only the new items); ``sibscan scan --index IDX --test NEW`` then embeds only the
test set.  Embeddings are kept as one memory-mappable ``.npy`` shard per build/add, so a scan streams
them block by block.  The index records its encoder identity and refuses another.

Layout::

    IDX/index.json              sibscan version, modality, encoder {name, options, identity, dim},
                                decimals, znorm, shards [{file, n}], n_items
    IDX/items/train.npz|.jsonl  the items (as in a scan directory), fingerprints included
    IDX/embeddings/             sibscan.store.shards.ShardedEmbeddings (index.json + shard-NNNNN.npy)
    IDX/cache/                  the embedding cache used while building
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

import numpy as np

from ._version import __version__
from .atomic import check_writable_dir, write_json
from .encoders import build_encoder, encoder_kwargs, get_encoder
from .errors import CompatibilityError, SibscanError
from .fingerprint import content_keys, fingerprint
from .items import Items
from .loaders import load_split
from .options import EncoderOptions, LoadOptions, make
from .store.cache import embed
from .store.scandir import load_items, save_items
from .store.scanfiles import READ_ERRORS, corrupt
from .store.shards import ShardedEmbeddings

__all__ = ["TrainIndex"]

#: what every reader of index.json takes from it
_META_KEYS = ("modality", "encoder", "n_items", "decimals", "znorm")


def _fresh_ids(ids: np.ndarray, prefix: str, taken: np.ndarray) -> np.ndarray:
    """``ids`` named by their source ("new.csv:0"), with a number after the name while any is taken."""
    for k in range(1, 10_000):
        name = prefix if k == 1 else f"{prefix}#{k}"
        out = np.char.add(f"{name}:", ids.astype(str))
        if not np.isin(out, taken).any():
            return out
    raise SibscanError(f"cannot name the items of {prefix} apart from the index's ids; give an id column (--id)")

@dataclass
class TrainIndex:
    """An index directory opened for reading or appending (see the module docstring)."""

    path: Path
    meta: Dict[str, Any]
    #: items the last build or add could not load (all of them, with reasons: ``meta["skipped"]``)
    last_skipped: int = 0

    # --- creation -----------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        source: str,
        out: str | Path,
        *,
        encoder: Optional[str] = None,
        encoder_options: Optional[Dict[str, Any]] = None,
        load_options: Optional[Dict[str, Any]] = None,
        decimals: int = 6,
        znorm: bool = False,
        device: str = "auto",
        batch_size: Optional[int] = None,
        progress: bool = True,
        force: bool = False,
    ) -> "TrainIndex":
        """Load, fingerprint and embed ``source`` into a new index at ``out``.

        ``load_options`` are :class:`~sibscan.options.LoadOptions` fields (modality, label, id, group,
        text_field, path_field); ``encoder_options`` the encoder's own (model, pretrained, checkpoint,
        model_path).  Every option is checked before anything is read or written.
        """
        out = Path(out)
        load = make(LoadOptions, {**(load_options or {}), "train": str(source), "decimals": decimals, "znorm": znorm})
        encoding = make(EncoderOptions, {**{k: v for k, v in (encoder_options or {}).items() if v is not None},
                                         "encoder": encoder, "device": device, "batch_size": batch_size})
        load.check()
        encoding.check()
        check_writable_dir(out, "--out")
        if (out / "index.json").exists() and not force:
            raise SibscanError(f"{out} already holds an index; use 'sibscan index add' to extend it, or --force to "
                               "rebuild")
        items = load_split(load, "train")
        enc = build_encoder(encoding, items)
        opts = {k: v for k, v in encoder_kwargs(encoding, items).items() if k != "device"}
        if force and out.exists():
            shutil.rmtree(out)
        meta = {
            "sibscan_version": __version__,
            "modality": items.modality,
            "encoder": {"name": enc.name, "options": opts, "identity": enc.identity, "dim": int(enc.dim)},
            "decimals": decimals,
            "znorm": znorm,
            "load_options": dict(load_options or {}),
            "n_items": 0,
        }
        index = cls(out, meta)
        index._append(items, enc, batch_size=batch_size, progress=progress)
        return index

    @classmethod
    def open(cls, path: str | Path) -> "TrainIndex":
        path = Path(path)
        meta_path = path / "index.json"
        if not meta_path.exists():
            raise SibscanError(f"{path} is not a sibscan index (no index.json); build one with 'sibscan index build'")
        rebuild = "rebuild the index with 'sibscan index build --force'"
        try:
            with open(meta_path, encoding="utf-8") as fh:
                meta = json.load(fh)
        except (*READ_ERRORS, UnicodeDecodeError) as exc:
            raise corrupt(meta_path, exc, rebuild) from None
        missing = [k for k in _META_KEYS if not isinstance(meta, dict) or k not in meta]
        if missing:
            raise corrupt(meta_path, ValueError(f"no {', '.join(missing)}"), rebuild)
        return cls(path, meta)

    def add(self, source: str, *, device: str = "auto", batch_size: Optional[int] = None, progress: bool = True,
            load_options: Optional[Dict[str, Any]] = None, id: Optional[str] = None) -> int:  # noqa: A002 - --id
        """Append the items of ``source``; returns how many were added.

        ``id`` names the id column (``--id``; default: the build's).  Without one the items' automatic
        ids (row numbers, relative paths) are prefixed with the source's name ("new.csv:0",
        "batch2/cat/1.png"), numbered again ("new.csv#2:0") if that name is taken, so they cannot
        collide with the ids already in the index.
        """
        given = dict(load_options if load_options is not None else self.meta.get("load_options", {}))
        if id is not None:
            given["id"] = id
        load = make(LoadOptions, {"modality": self.meta["modality"], **given, "train": str(source)})
        load.check()
        items = load_split(load, "train")
        self._append(items, self.encoder(device=device), batch_size=batch_size, progress=progress,
                     prefix=None if load.id is not None else Path(source).name)
        return len(items)

    def _append(self, new: Items, enc, *, batch_size: Optional[int], progress: bool,
                prefix: Optional[str] = None) -> None:
        fp_new = fingerprint(new, decimals=self.meta["decimals"], znorm=self.meta["znorm"])
        if self.meta["n_items"]:
            old, fp_old = load_items(self.path, "train")
            if prefix is not None:
                new.ids = _fresh_ids(new.ids, prefix, old.ids)
            items = old.concat(new, into="the index")
            fps = np.concatenate([fp_old, fp_new])
        else:
            items, fps = new, fp_new
        emb = embed(new, enc, cache_dir=self.path / "cache", fingerprints=content_keys(new), batch_size=batch_size,
                    progress=progress)

        shards = ShardedEmbeddings.create(self.path / "embeddings", int(enc.dim), dtype="float32", exist_ok=True)
        if shards.n != self.meta["n_items"]:
            raise SibscanError(
                f"{self.path}: the embeddings hold {shards.n} rows but the index lists {self.meta['n_items']} items "
                "(an interrupted 'index add'?); rebuild it with 'sibscan index build --force'"
            )
        # items first, then the embeddings, then index.json: a crash in between leaves index.json on the
        # previous state, and the row-count check above names the problem
        save_items(self.path, items, fps)
        shards.append(np.asarray(emb, np.float32))
        self.meta["n_items"] = int(len(items))
        # what could not be loaded (unreadable images ...), over every build and add, as a scan lists them
        self.meta["skipped"] = [*self.meta.get("skipped", []), *(k.to_dict() for k in new.skipped)]
        self.last_skipped = len(new.skipped)
        write_json(self.path / "index.json", self.meta)

    # --- reading ------------------------------------------------------------------------------
    def items(self) -> Items:
        items, _ = load_items(self.path, "train")
        n = self.meta["n_items"]
        return items if len(items) == n else items.subset(np.arange(n))

    def fingerprints(self) -> np.ndarray:
        _, fp = load_items(self.path, "train")
        return fp[: self.meta["n_items"]]

    def embeddings(self):
        """The train embeddings, :class:`~sibscan.store.shards.ShardedEmbeddings` (n_items, dim) read by blocks."""
        return ShardedEmbeddings(self.path / "embeddings")

    def encoder(self, device: str = "auto"):
        """Rebuild the index's encoder and refuse if its identity changed (other weights/preprocessing)."""
        e = self.meta["encoder"]
        enc = get_encoder(e["name"], device=device, **e.get("options", {}))
        if enc.identity != e["identity"]:
            raise CompatibilityError(
                f"{self.path} was built with encoder {e['identity']!r} but it now loads as {enc.identity!r}; "
                "rebuild the index with 'sibscan index build --force'"
            )
        return enc

    def check_encoder(self, name: Optional[str]) -> None:
        if name is not None and name != self.meta["encoder"]["name"]:
            raise CompatibilityError(
                f"{self.path} holds {self.meta['encoder']['name']} embeddings; a scan with --encoder {name} cannot use "
                "it (drop --encoder, or build another index)"
            )
