"""Candidates from more than one view: the encoder's top-k joined with the top-k of other views.

One embedding decides which train items a test item is compared with; what it misses, the verifier
never sees.  A semantic encoder (effnet) misses heavy crops and zooms of the same photo, an
appearance one (pixels) misses what changed in colour or framing.  Each extra view proposes its
own top-k train items per test item (test→train only, the sibling question); the union,
deduplicated, is verified.  The neighbours table's ``view`` column says which view(s) proposed
each row ("effnet+windows"); ``similarity`` stays the scan encoder's cosine for every row, so a
row that only an extra view found carries the encoder's (low) similarity and is decided by the
verifier.

Views:

* ``windows`` — each image as 293 square windows (6 scales from the whole image to half its side,
  at 1-121 positions each, about one 8 x 8 cell apart), 8 x 8 grey cells, pixel-correlation normalised
  (:mod:`sibscan.kernels.windows`, ``VIEW_SCALES``).  Searched both ways through a faiss index of the
  other split's windows (:mod:`sibscan.search.windows`): each test image's whole-image vector and mirror
  against the train windows (it is a crop), each train image's against the test windows (the test image
  is a wider shot); exact up to a million windows, an IVF index past it.  Weight-free, no cache (images
  are decoded and shrunk to 64 px once per scan and kept as 8-bit grey).  Opt-in (``--extra-views
  windows,pixels``): before the index it compared every pair (2,269 s of a 2,494 s CIFAR-10 scan).
  The same kind of score of given pairs, on the cascade's own grid (136 windows of 12 x 12 cells,
  the grid its bands were measured on; :func:`pair_window_scores`), is the cheap first stage of the
  verification cascade (``--cascade``, :func:`cascade_candidates`, :mod:`sibscan.verify.cascade`).
* any registered encoder of the data's modality (``pixels``, ``phash``, ``clip``, …), embedded
  through the scan's embedding cache.

The default (:func:`resolve_views`): ``pixels`` for images when the candidates are verified, none
otherwise; each extra view adds its top ``--k-view`` (5).  Measured on CIFAR-10 against ciFAIR's 286
test→train duplicates (``python -m benchmarks.cifar10``; the partner's rank over all 50,000 train images):
effnet's top 10 holds the partner for 246, joined with pixels' top 5 for 274, with windows' top 5 as
well for 277, while the windows view cost more than the rest of the scan; so windows left the default.
On the planted crop sets (``benchmarks/results/quality_views.json``) windows still finds heavy crops
and zooms effnet misses (0.98 / 0.93 of the sources in its top 10 against 0.92 / 0.77): use it where
the data has them.  See docs/benchmarks.md, "Candidates from more than one view" and "CIFAR-10".
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..errors import SibscanError
from ..items import Items
from ..kernels.topk import rank_within_groups
from ..options import VIEWS, SearchOptions, EncoderOptions
from ..progress import task
from ..store.neighbourtable import Neighbours
from ..verify.cascade import Cascade, cascade_keep
from ..encoders import encoder_class, encoder_kwargs, get_encoder
from ..encoders.pixels import shrink_images
from ..fingerprint import content_keys
from ..kernels.windows import VIEW_CELLS, VIEW_SCALES, window_boxes, window_pair_scores, window_vectors
from ..search.windows import FLAT_MAX_PAIRS, FLAT_MAX_VECTORS, NPROBE, windows_view_search
from ..store.cache import embed
from ..search.direction import search_direction

__all__ = ["add_view_candidates", "cascade_candidates", "default_views", "pair_window_scores", "pair_window_scores_gray", "resolve_views",
           "view_candidates", "view_identities", "view_topk", "windows_topk_gray"]

#: the windows view: grey side the images are shrunk to; cells per window side of the cascade's pair
#: scores (:func:`pair_window_scores`; the view's top-k uses ``VIEW_SCALES`` / ``VIEW_CELLS``)
_WINDOW_SIDE, _WINDOW_CELLS = 64, 12
#: database images whose window vectors :func:`pair_window_scores_gray` holds for a whole call (80 MB)
_WINDOW_BLOCK = 1024


def default_views(modality: str, verifying: bool) -> Tuple[str, ...]:
    """``("pixels",)`` for verified images, else none (see the module docstring: on CIFAR-10 the
    windows view added 3 of 286 ciFAIR partners to effnet's top 10 and pixels' top 5, at more than
    the rest of the scan's time)."""
    return ("pixels",) if modality == "image" and verifying else ()


def resolve_views(search: SearchOptions, modality: str, verifying: bool, encoder_name: str) -> Tuple[str, ...]:
    """The extra views this scan runs: the option (``()`` for ``none``) or the default; the scan
    encoder itself is dropped (it already proposes), and a view of another modality is refused."""
    views = default_views(modality, verifying) if search.extra_views is None else search.extra_views
    if "test-train" not in search.directions:
        return ()
    out = []
    for v in views:
        if v == encoder_name or v in out:
            continue
        kind = VIEWS.get(v) or _encoder_modality(v)
        if kind != modality:
            raise SibscanError(f"view {v!r} is for {kind} items but the data is {modality}; "
                               f"drop it from --extra-views")
        out.append(v)
    return tuple(out)


def view_identities(views: Sequence[str]) -> Dict[str, str]:
    """What each extra view computes, for the scan's manifest (a resume compares it): the windows
    view's grid and search are part of its answer (its grid changed once: 136 windows of 12 x 12 cells,
    then 293 of 8 x 8; v3 searches each direction through an index, :mod:`sibscan.search.windows`), so a
    scan made one way is not resumed another; an encoder view is named only."""
    grid = ",".join(f"{s:g}x{n}" for s, n in VIEW_SCALES)
    search = f"crop+wide,flat<={FLAT_MAX_VECTORS} windows and {FLAT_MAX_PAIRS} pairs,else IVF-SQ8 nprobe={NPROBE}"
    return {v: (f"windows-v3(cells={VIEW_CELLS},scales={grid},search={search})" if v == "windows" else v)
            for v in views}


def _encoder_modality(name: str) -> str:
    return encoder_class(name).modality


def view_topk(name: str, splits: Dict[str, Items], k: int, options: SearchOptions, *, device: str = "auto",
              cache_dir: Optional[Path] = None, batch_size: Optional[int] = None,
              progress: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Top-k train items of each test item under view ``name``.

    Returns
    -------
    sims : ndarray of shape (n_test, k), float32 (the view's own score; -inf where none)
    idx : ndarray of shape (n_test, k), int64 (-1 where none)
    """
    train, test = splits["train"], splits["test"]
    if name == "windows":
        return _windows_topk(train, test, k, progress)

    encoder = get_encoder(name, **encoder_kwargs(EncoderOptions(device=device), train, name))
    emb = {s: embed(items, encoder, cache_dir=cache_dir, fingerprints=content_keys(items), batch_size=batch_size,
                    progress=progress) for s, items in splits.items()}
    return search_direction(emb["test"], emb["train"], k, options, device=device, progress=progress)


def _windows_topk(train: Items, test: Items, k: int, progress: bool) -> Tuple[np.ndarray, np.ndarray]:
    """The windows view's top-k: both splits decoded once to 64-px grey (4 KiB an image), then
    :func:`windows_topk_gray`."""
    gray = {s: np.rint(shrink_images(items.paths, _WINDOW_SIDE, color=False)).astype(np.uint8)
            for s, items in (("train", train), ("test", test))}
    return windows_topk_gray(gray["train"], gray["test"], k, progress)


def windows_topk_gray(train: np.ndarray, test: np.ndarray, k: int, progress: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """Top-k train images of each test image under the windows view on its grid
    (:data:`sibscan.kernels.windows.VIEW_SCALES`, 8 x 8 cells): both directions searched through a
    faiss index of the other split's windows (:func:`sibscan.search.windows.windows_view_search`), so
    the cost grows like a search, not with every pair's 293 x 2 window comparisons.

    Parameters
    ----------
    train, test : ndarray of shape (n, 64, 64), uint8
        Grey images at the view's side.

    Returns
    -------
    sims : ndarray of shape (n_test, k), float32 (-inf where none)
    idx : ndarray of shape (n_test, k), int64 (-1 where none)
    """
    return windows_view_search(train, test, k, window_boxes(VIEW_SCALES), VIEW_CELLS, progress=progress)


def pair_window_scores(queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray,
                       chunk: int = 32) -> np.ndarray:
    """The windows view's score of given pairs (the cheap stage of :mod:`sibscan.verify.cascade`).

    Each image is decoded once to 64-px grey (4 KiB); window vectors are made per chunk of 32 queries
    for the chunk's distinct images only, so memory stays at one chunk.

    Parameters
    ----------
    query_index, database_index : ndarray of shape (m,), int

    Returns
    -------
    ndarray of shape (m,), float32: :func:`sibscan.kernels.windows.window_pair_scores` of each pair
    """
    qi, di = np.asarray(query_index, np.int64).ravel(), np.asarray(database_index, np.int64).ravel()
    uq, q_inv = np.unique(qi, return_inverse=True)
    ud, d_inv = np.unique(di, return_inverse=True)
    paths = lambda items, rows: [items.paths[r] for r in rows.tolist()]  # noqa: E731
    gq = np.rint(shrink_images(paths(queries, uq), _WINDOW_SIDE, color=False)).astype(np.uint8)
    gd = np.rint(shrink_images(paths(database, ud), _WINDOW_SIDE, color=False)).astype(np.uint8)
    return pair_window_scores_gray(gq, q_inv.reshape(-1), gd, d_inv.reshape(-1), chunk)


def pair_window_scores_gray(queries: np.ndarray, query_index: np.ndarray, database: np.ndarray,
                            database_index: np.ndarray, chunk: int = 32) -> np.ndarray:
    """:func:`pair_window_scores` of grey images, ndarrays of shape (n, 64, 64); returns shape (m,).

    Pairs are taken ``chunk`` distinct queries at a time: their window vectors and those of their
    distinct candidates are made once, all their cross scores computed as two matrix products
    (:func:`sibscan.kernels.windows.window_pair_scores`) and the asked pairs read from it.  When
    the database images fit one block (:data:`_WINDOW_BLOCK`, 80 MB of vectors) their vectors are
    made once for the call: in the train→test direction every chunk of train queries shares the
    few test images, which were otherwise cut into windows again in each chunk (3,000 train x 3
    candidates among 300 test images: 1.5x less time for the same scores).
    """
    boxes = window_boxes()
    q_inv, d_inv = np.asarray(query_index, np.int64), np.asarray(database_index, np.int64)
    scores = np.empty(len(q_inv), np.float32)
    held = window_vectors(database, boxes, _WINDOW_CELLS) if len(q_inv) and len(database) <= _WINDOW_BLOCK else None
    order = np.argsort(q_inv, kind="stable")
    starts = np.flatnonzero(np.r_[True, q_inv[order][1:] != q_inv[order][:-1]])  # first row of each query
    for a in range(0, len(starts), chunk):
        rows = order[starts[a]:starts[a + chunk] if a + chunk < len(starts) else len(order)]
        cq, cq_inv = np.unique(q_inv[rows], return_inverse=True)
        cd, cd_inv = np.unique(d_inv[rows], return_inverse=True)
        vd = held[cd] if held is not None else window_vectors(database[cd], boxes, _WINDOW_CELLS)
        s = window_pair_scores(window_vectors(queries[cq], boxes, _WINDOW_CELLS), vd, _WINDOW_CELLS)
        scores[rows] = s[cq_inv.reshape(-1), cd_inv.reshape(-1)]
    return scores


def cascade_candidates(nb: Neighbours, splits: Dict[str, Items], cascade: Cascade) -> Neighbours:
    """The rows of ``nb`` a verification cascade sends to the verifier (:mod:`sibscan.verify.cascade`).

    Each direction's rows are scored by :func:`pair_window_scores`; each query keeps its rows within
    the cascade's bands of its best windows score or embedding similarity, and its exact twins.  The
    other rows are dropped (never verified, they cannot decide).  Images only.
    """
    if len(nb) and splits["train"].modality != "image":
        raise SibscanError(f"the verification cascade is for images (its cheap stage is the windows view), "
                           f"not {splits['train'].modality} items; drop --cascade")
    keep = np.zeros(len(nb), bool)
    for (qs, ns) in sorted(set(zip(nb["query_split"].tolist(), nb["neighbour_split"].tolist()))):
        rows = np.flatnonzero(nb.mask(qs, ns))
        with task(f"cascade {qs} → {ns}"):
            win = pair_window_scores(splits[qs], nb["query_index"][rows], splits[ns], nb["neighbour_index"][rows])
        keep[rows] = cascade_keep(nb["query_index"][rows], [(win, cascade.window_band),
                                                            (nb["similarity"][rows], cascade.similarity_band)],
                                  always=np.asarray(nb["exact"][rows], bool))
    return nb.select(keep)


def add_view_candidates(nb: Neighbours, found: Dict[str, Tuple[np.ndarray, np.ndarray]], embeddings: Dict[str, np.ndarray],
                        splits: Dict[str, Items], fps: Dict[str, np.ndarray], main_view: str) -> Neighbours:
    """Join the views' test→train candidates to the neighbours table, deduplicated.

    Parameters
    ----------
    nb : Neighbours
        The encoder's table (every direction); its test→train rows are labelled ``main_view``.
    found : {view name: (sims, idx)}
        Each view's top-k, ndarrays of shape (n_test, k_view); idx -1 where none.
    embeddings : {"train": ndarray of shape (n_train, dim), "test": ...}
        The scan encoder's embeddings: every added row gets its ``similarity`` from them.

    Returns
    -------
    Neighbours
        Test→train rows of all views (``view`` = the views that proposed the pair, joined by "+"),
        ranked by similarity (``rank`` = ``embedding_rank``, before verification); other directions as they were.
    """
    tt = nb.mask("test", "train")
    main, rest = nb.select(tt), nb.select(~tt)
    n_train = len(splits["train"])
    # each view's pair keys (test index * n_train + train index), the scan encoder's first
    keys_of = [main["query_index"].astype(np.int64) * n_train + main["neighbour_index"]]
    for _, idx in found.values():
        qi = np.repeat(np.arange(idx.shape[0], dtype=np.int64), idx.shape[1])
        ni = idx.reshape(-1)
        keys_of.append(qi[ni >= 0] * n_train + ni[ni >= 0])
    new = np.setdiff1d(np.concatenate(keys_of[1:]) if found else np.zeros(0, np.int64), keys_of[0])  # sorted
    qi, ni = new // n_train, new % n_train
    train, test = splits["train"], splits["test"]
    added = Neighbours({
        "query_split": np.full(len(new), "test"), "query_id": test.ids[qi], "query_index": qi,
        "rank": np.zeros(len(new), np.int32), "neighbour_split": np.full(len(new), "train"),
        "neighbour_id": train.ids[ni], "neighbour_index": ni, "similarity": _pair_cosine(embeddings, qi, ni),
        "exact": (fps["test"][qi] == fps["train"][ni]).all(axis=1),
    })
    joined = Neighbours.concat([main, added])
    keys = joined["query_index"].astype(np.int64) * n_train + joined["neighbour_index"]
    # which views proposed each row, as a bit mask (bit j: view j, in the order above), then its name
    labels = [main_view, *found]
    mask = sum(np.isin(keys, k).astype(np.int64) << j for j, k in enumerate(keys_of))
    codes, inverse = np.unique(mask, return_inverse=True)
    names = np.array(["+".join(v for j, v in enumerate(labels) if c >> j & 1) for c in codes.tolist()], dtype=object)
    joined.columns["view"] = names[inverse.reshape(-1)]
    order = np.lexsort((joined["neighbour_index"], -joined["similarity"], joined["query_index"]))
    joined = joined.select(order)
    q = joined["query_index"]
    start = np.ones(len(q), bool)
    start[1:] = q[1:] != q[:-1]
    rank = rank_within_groups(start).astype(np.int32)
    joined.columns["rank"], joined.columns["embedding_rank"] = rank, rank.copy()
    return Neighbours.concat([joined, rest])


def _pair_cosine(embeddings: Dict[str, np.ndarray], qi: np.ndarray, ni: np.ndarray) -> np.ndarray:
    """The scan encoder's cosine of each (test qi, train ni) pair, shape (len(qi),)."""
    def rows(emb, idx):
        return emb.take(idx) if hasattr(emb, "take") and not isinstance(emb, np.ndarray) else np.asarray(emb[idx], np.float32)

    if len(qi) == 0:
        return np.zeros(0, np.float32)
    return np.einsum("ij,ij->i", rows(embeddings["test"], qi), rows(embeddings["train"], ni)).astype(np.float32)


def view_candidates(nb: Neighbours, views: Sequence[str], embeddings, splits, fps, options: SearchOptions, *,
                    main_view: str, device: str = "auto", cache_dir: Optional[Path] = None,
                    batch_size: Optional[int] = None, progress: bool = True,
                    echo: Callable[[str], None] = lambda s: None) -> Neighbours:
    """Each view's top-``options.k_view`` joined to ``nb`` (the scan's search stage)."""
    k = options.k_view
    found = {}
    for v in views:
        echo(f"candidates from the {v} view (k={k})")
        with task(f"view {v}"):
            found[v] = view_topk(v, splits, k, options, device=device, cache_dir=cache_dir, batch_size=batch_size,
                                 progress=progress)
    return add_view_candidates(nb, found, embeddings, splits, fps, main_view)
