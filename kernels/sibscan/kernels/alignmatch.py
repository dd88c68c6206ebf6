"""What agrees at the alignment :func:`sibscan.kernels.scalematch.scale_match` found: patches, each
patch's own best offset, and the layout of structure energy.

A global NCC is dominated by the strongest edge: a template that is a flat wall with one dark
curve matches any other flat wall with a similar curve (0.92-0.94 on different cells of the same
photo).  :func:`patch_agreement` therefore re-scores the best alignment locally: the template and
the outer window under it are cut into ``grid x grid`` patches, each patch is correlated on its
own, and the score is the mean over all patches of the positive correlations of the patches that
hold structure in both images (a flat patch scores 0: it is no evidence).  A copy agrees in every
patch; a lone matching edge agrees in one or two.  :func:`patch_agreement_reference` is its loop.

A copy of a photograph, however cropped, agrees everywhere at the right alignment; another cell of
the same photograph with repeating or dominant structure (a steel lattice, the rim of a fundus
image, a vertical rocket body) agrees on its strongest edges and disagrees elsewhere, which the
global and 4 x 4 patch correlations average away.  :func:`alignment_features` measures three things
on the structure signals of the template of the best variant and the outer window under it:

``patches8``
    The mean positive NCC of the 8 x 8 patches that hold structure in both (0 when none does): the
    agreement of the fine patches, not diluted by flat ones.
``consistent``
    The share of the 4 x 4 patches (of all 16) that hold structure in both and whose own best
    offset, searched within ``reach`` working pixels of the alignment, lies within 1 px of it: every
    patch of a copy agrees on where it is; the patches of a look-alike each find a better place.
``energy_spread``
    The spread (standard deviation) over the 8 x 8 patches with structure on either side of
    ``log(rms_template + e) - log(rms_window + e)`` (``e = FLAT_RMS / 2``): a copy keeps the same
    contrast ratio in every patch (a colour or gamma change scales all of them alike); a look-alike
    has structure where the other has none (a flare, a missing vessel).

:func:`alignment_features_reference` is the plain numpy loop the tests hold it to.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .scalematch import FLAT_RMS, MatchVariant, ScaleMatch, _side, structure, template

__all__ = ["ALIGNMENT_FEATURES", "aligned_measures", "aligned_signals", "alignment_features",
           "alignment_features_reference", "patch_agreement", "patch_agreement_reference", "reference_signals"]

#: the columns :func:`alignment_features` returns, in order
ALIGNMENT_FEATURES = ("patches8", "consistent", "energy_spread")


def _patches(x, grid: int):
    """(m, 1, T, T) -> (m, grid * grid, P * P) with P = T // grid (the last T % grid rows/columns dropped)."""
    m, T = x.shape[0], x.shape[-1]
    P = T // grid
    x = x[:, 0, :P * grid, :P * grid].reshape(m, grid, P, grid, P)
    return x.permute(0, 1, 3, 2, 4).reshape(m, grid * grid, P * P)


def _centred(x, grid: int):
    """:func:`_patches` of ``x``, each patch less its own mean."""
    p = _patches(x, grid)
    return p - p.mean(-1, keepdim=True)


def _ncc_of(a, b, P: int):
    """Per-patch NCC of centred patches ``a``, ``b`` (..., P * P), and which hold structure in both."""
    na, nb = a.square().sum(-1).sqrt(), b.square().sum(-1).sqrt()
    return (a * b).sum(-1) / (na * nb).clamp_min(1e-12), (na >= FLAT_RMS * P) & (nb >= FLAT_RMS * P)


def _patch_ncc(a, b, grid: int):
    """Per-patch NCC of (m, 1, T, T) signals cut into ``grid x grid`` patches, and which patches hold
    structure in both: two (m, grid**2) tensors."""
    return _ncc_of(_centred(a, grid), _centred(b, grid), a.shape[-1] // grid)


def _agreement(r, counted, grid: int):
    """Patch agreement from per-patch NCCs ``r`` and the patches ``counted``: (m,) tensor."""
    return (r.clamp_min(0) * counted).sum(-1).div(grid * grid)


def _shifted_patch_ncc(t, w, reach: int):
    """:func:`_patch_ncc` of ``t`` (g, 1, T, T) against the window of ``w`` (g, 1, T + 2 reach, T + 2 reach)
    at every offset within ``reach``, in one pass, with 4 x 4 patches: (g, (2 reach + 1) ** 2, 16) NCCs,
    offsets in row-major order from (-reach, -reach), and which patches hold structure in both at offset 0 (g, 16).

    The same arithmetic as :func:`_patch_ncc` per offset (the same values), without its 49 passes: the
    template's patches are centred once and every offset's patches are one strided view of ``w``."""
    grid = 4
    g, T, k = t.shape[0], t.shape[-1], 2 * reach + 1
    P = T // grid
    wc = w[:, 0].contiguous()
    s0, s1, s2 = wc.stride()
    b = wc.as_strided((g, k, k, grid, grid, P, P),
                      (s0, s1, s2, P * s1, P * s2, s1, s2)).reshape(g, k * k, grid * grid, P * P)
    r, both = _ncc_of(_centred(t, grid)[:, None], b - b.mean(-1, keepdim=True), P)
    return r, both[:, (k * k) // 2]


def _features_at(t, w, reach: int, near):
    """:data:`ALIGNMENT_FEATURES` of template signals ``t`` (g, 1, T, T) against outer windows ``w`` with
    ``reach`` px around (g, 1, T + 2 reach, T + 2 reach), T >= 8: (g, 3) tensor, and the unshifted 4 x 4
    patch NCCs and which of them hold structure in both, (g, 16) each."""
    import torch

    T = t.shape[-1]
    at = w[..., reach:reach + T, reach:reach + T]
    a8, b8 = _centred(t, 8), _centred(at, 8)
    r8, both8 = _ncc_of(a8, b8, T // 8)
    patches8 = (r8.clamp_min(0) * both8).sum(-1) / both8.sum(-1).clamp_min(1)
    r4, both4 = _shifted_patch_ncc(t, w, reach)
    consistent = (near[r4.argmax(1)] & both4).sum(-1) / 16.0
    ea, eb = a8.square().mean(-1).sqrt(), b8.square().mean(-1).sqrt()
    lr = torch.log(ea + FLAT_RMS / 2) - torch.log(eb + FLAT_RMS / 2)
    some = (torch.maximum(ea, eb) >= FLAT_RMS).to(lr.dtype)
    n = some.sum(-1).clamp_min(1)
    mu = (lr * some).sum(-1) / n
    spread = (((lr - mu[:, None]).square() * some).sum(-1) / n).sqrt()
    return torch.stack([patches8, consistent.to(patches8.dtype), spread], 1), r4[:, (r4.shape[1]) // 2], both4


#: values per pass of :func:`_features_at` (its shifted patches hold (2 reach + 1) ** 2 windows of T x T per
#: pair): on the CPU passes of 4 MB ran the 49 offsets 3x faster than the loop over offsets, passes of 64 MB
#: slower (cache); on CUDA a pass of 5 pairs would be ~40 small kernels and two host syncs, so passes there
#: are 64 MB (not measured: no GPU was lent to this project's sessions)
_FEATURE_VALUES = 1 << 20
_FEATURE_VALUES_CUDA = 1 << 24


def aligned_measures(query, database, query_index, database_index, variants: Sequence[MatchVariant],
                     match: ScaleMatch, *, grid: int = 4, reach: int = 3, device: str = "cpu"):
    """:func:`patch_agreement` and :func:`alignment_features` of each pair from one pass over the aligned
    structure signals (each template made once, not once per measure), with the same values.

    Returns
    -------
    patches : ndarray of shape (m,), float32
    features : ndarray of shape (m, 3), float64
    """
    import torch

    if grid < 1:
        raise ValueError(f"grid must be at least 1, got {grid}")
    m = len(match.score)
    local, out = np.zeros(m, np.float32), np.zeros((m, len(ALIGNMENT_FEATURES)))
    shifts = [(dy, dx) for dy in range(-reach, reach + 1) for dx in range(-reach, reach + 1)]
    near = torch.tensor([max(abs(dy), abs(dx)) <= 1 for dy, dx in shifts], device=device)
    per_pass = _FEATURE_VALUES_CUDA if str(device).startswith("cuda") else _FEATURE_VALUES
    with torch.no_grad():
        for rows, t, w in aligned_signals(query, database, query_index, database_index, variants, match,
                                          min_side=min(grid, 8), margin=reach, device=device):
            T = t.shape[-1]
            step = max(1, per_pass // ((2 * reach + 1) ** 2 * T * T))
            for lo in range(0, len(rows), step):
                part, tp, wp = rows[lo:lo + step], t[lo:lo + step], w[lo:lo + step]
                r = counted = None
                if T >= 8:
                    f, r, counted = _features_at(tp, wp, reach, near)
                    out[part] = f.cpu().numpy()
                if T >= grid:
                    if grid != 4 or r is None:  # the unshifted 4 x 4 NCCs serve the default grid
                        r, counted = _patch_ncc(tp, wp[..., reach:reach + T, reach:reach + T], grid)
                    local[part] = _agreement(r, counted, grid).cpu().numpy()
    return local, out


def alignment_features(query, database, query_index, database_index, variants: Sequence[MatchVariant],
                       match: ScaleMatch, *, reach: int = 3, device: str = "cpu") -> np.ndarray:
    """``patches8``, ``consistent`` and ``energy_spread`` (:data:`ALIGNMENT_FEATURES`) of each pair
    at the alignment ``match`` found.

    Parameters
    ----------
    query, database, query_index, database_index, variants
        As for :func:`sibscan.kernels.scalematch.scale_match`.
    match : ScaleMatch
        Its result for the same pairs.
    reach : int
        Offsets searched for each 4 x 4 patch, in working pixels either way (outer positions past the
        image's edge repeat its edge).

    Returns
    -------
    ndarray of shape (m, 3), float64
        Zeros for a pair whose template is smaller than 8 px.
    """
    return aligned_measures(query, database, query_index, database_index, variants, match, reach=reach,
                            device=device)[1]


def alignment_features_reference(query: np.ndarray, database: np.ndarray, query_index, database_index,
                                 variants: Sequence[MatchVariant], match: ScaleMatch, *, reach: int = 3) -> np.ndarray:
    """:func:`alignment_features` by plain loops over pairs, patches and offsets (numpy), for the tests."""
    m, N = len(match.score), query.shape[-1]
    out = np.zeros((m, len(ALIGNMENT_FEATURES)))

    def ncc(a, b):
        a, b = a - a.mean(), b - b.mean()
        na, nb = np.sqrt((a * a).sum()), np.sqrt((b * b).sum())
        return float((a * b).sum() / max(na * nb, 1e-12)), na, nb

    for i in range(m):
        v = variants[int(match.variant[i])]
        T = _side(N, v)
        if T < 8:
            continue
        t, o = reference_signals(np.asarray(query)[query_index[i]], np.asarray(database)[database_index[i]], v)
        y, x = int(match.y[i]), int(match.x[i])

        def window(dy, dx):
            ys = np.clip(np.arange(y + dy, y + dy + T), 0, N - 1)
            xs = np.clip(np.arange(x + dx, x + dx + T), 0, N - 1)
            return o[np.ix_(ys, xs)]

        w = window(0, 0)
        P = T // 8
        total, counted, logs = 0.0, 0, []
        for gy in range(8):
            for gx in range(8):
                a, b = t[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P], w[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P]
                r, na, nb = ncc(a, b)
                if na >= FLAT_RMS * P and nb >= FLAT_RMS * P:
                    total, counted = total + max(r, 0.0), counted + 1
                ea, eb = a.std(), b.std()
                if max(ea, eb) >= FLAT_RMS:
                    logs.append(np.log(ea + FLAT_RMS / 2) - np.log(eb + FLAT_RMS / 2))
        out[i, 0] = total / max(counted, 1)
        out[i, 2] = float(np.std(logs)) if logs else 0.0
        P = T // 4
        agree = 0
        for gy in range(4):
            for gx in range(4):
                a = t[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P]
                _, na, nb = ncc(a, w[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P])
                if not (na >= FLAT_RMS * P and nb >= FLAT_RMS * P):
                    continue
                best, where = -np.inf, (0, 0)
                for dy in range(-reach, reach + 1):
                    for dx in range(-reach, reach + 1):
                        r, _, _ = ncc(a, window(dy, dx)[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P])
                        if r > best:
                            best, where = r, (dy, dx)
                agree += max(abs(where[0]), abs(where[1])) <= 1
        out[i, 1] = agree / 16.0
    return out


def patch_agreement(query, database, query_index, database_index, variants: Sequence[MatchVariant],
                    match: ScaleMatch, *, grid: int = 4, device: str = "cpu") -> np.ndarray:
    """Local agreement of each pair at the alignment :func:`scale_match` found.

    The template of the best variant and the outer image's window at ``(match.y, match.x)`` are
    cut into ``grid x grid`` patches of their structure signals; each patch pair is correlated
    on its own (NCC).  A patch counts when both sides have structure (RMS at or above
    :data:`FLAT_RMS`); the score is ``sum(max(ncc, 0) over counted patches) / grid**2``.

    Parameters
    ----------
    query, database, query_index, database_index, variants
        As for :func:`scale_match`.
    match : ScaleMatch
        Its result for the same pairs.
    grid : int
        Patches per side.

    Returns
    -------
    ndarray of shape (m,), float32
        In [0, 1].
    """
    if grid < 1:
        raise ValueError(f"grid must be at least 1, got {grid}")
    out = np.zeros(len(match.score), np.float32)
    for rows, t, w in aligned_signals(query, database, query_index, database_index, variants, match,
                                      min_side=grid, device=device):
        r, counted = _patch_ncc(t, w, grid)
        out[rows] = _agreement(r, counted, grid).cpu().numpy()
    return out


def aligned_signals(query, database, query_index, database_index, variants: Sequence[MatchVariant],
                    match: ScaleMatch, *, min_side: int = 1, margin: int = 0, device: str = "cpu"):
    """The structure signals of each pair at the alignment ``match`` found, one variant at a time.

    Yields ``(rows, template, window)``: the pairs (ndarray of int) whose best variant it is, the
    structure signal of their inner image resampled for it, (g, 1, T, T), and the outer image's
    structure signal under it with ``margin`` px around, (g, 1, T + 2 margin, T + 2 margin) (positions
    past the image's edge repeat its edge).  Variants whose template side is below ``min_side`` are
    skipped.  Runs without autograd.
    """
    import torch

    N = query.shape[-1]
    qi, di = np.asarray(query_index, np.int64), np.asarray(database_index, np.int64)
    with torch.no_grad():
        imgs = {"query": torch.as_tensor(query, dtype=torch.float32).to(device),
                "database": torch.as_tensor(database, dtype=torch.float32).to(device)}
        sig = {k: structure(v) for k, v in imgs.items()}
        index = {"query": qi, "database": di}
        for j in np.unique(match.variant):
            rows = np.flatnonzero(match.variant == j)
            v = variants[int(j)]
            outer = "database" if v.inner == "query" else "query"
            T = _side(N, v)
            if T < min_side:
                continue
            # each inner image's template once, however many of these pairs it is in
            need, inner = np.unique(index[v.inner][rows], return_inverse=True)
            t = structure(template(imgs[v.inner][need], v, N))[torch.as_tensor(inner.reshape(-1), device=device)]
            # the outer windows: gather rows y-margin..y+T+margin, the same columns, of each pair's outer signal
            o = sig[outer][index[outer][rows]]
            ar = torch.arange(-margin, T + margin, device=device)
            ys = (torch.as_tensor(match.y[rows], dtype=torch.int64, device=device)[:, None] + ar).clamp(0, N - 1)
            xs = (torch.as_tensor(match.x[rows], dtype=torch.int64, device=device)[:, None] + ar).clamp(0, N - 1)
            yield rows, t, o[torch.arange(len(rows), device=device)[:, None, None], 0, ys[:, :, None],
                             xs[:, None, :]][:, None]


def reference_signals(query_image: np.ndarray, database_image: np.ndarray, v: MatchVariant):
    """One pair's template structure signal for ``v`` and its outer image's structure signal, (T, T) and
    (N, N) float64, from the torch helpers the fast kernels use (for the references the tests hold them to)."""
    import torch

    q, d = (torch.as_tensor(np.asarray(a)[None], dtype=torch.float32) for a in (query_image, database_image))
    inner, outer = (q, d) if v.inner == "query" else (d, q)
    return (structure(template(inner, v, q.shape[-1])).numpy()[0, 0].astype(np.float64),
            structure(outer).numpy()[0, 0].astype(np.float64))


def patch_agreement_reference(query: np.ndarray, database: np.ndarray, query_index, database_index,
                              variants: Sequence[MatchVariant], match: ScaleMatch, *, grid: int = 4) -> np.ndarray:
    """:func:`patch_agreement` by plain loops over pairs and patches (numpy), for the tests."""
    m, N = len(match.score), query.shape[-1]
    out = np.zeros(m, np.float32)
    for i in range(m):
        v = variants[int(match.variant[i])]
        T = _side(N, v)
        if T < grid:
            continue
        t, o = reference_signals(query[query_index[i]], database[database_index[i]], v)
        y, x = int(match.y[i]), int(match.x[i])
        w = o[y:y + T, x:x + T]
        P = T // grid
        total = 0.0
        for gy in range(grid):
            for gx in range(grid):
                a = t[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P]
                b = w[gy * P:(gy + 1) * P, gx * P:(gx + 1) * P]
                a, b = a - a.mean(), b - b.mean()
                na, nb = np.sqrt((a * a).sum()), np.sqrt((b * b).sum())
                if na >= FLAT_RMS * P and nb >= FLAT_RMS * P:
                    total += max(float((a * b).sum() / (na * nb)), 0.0)
        out[i] = total / (grid * grid)
    return out
