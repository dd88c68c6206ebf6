"""Prepared images kept between a verifier's calls: each image prepared once per scan, not once per call.

A scan calls the image verifier several times on the same images: the test items' candidates
(test→train), the test→test pairs, the train→test blocks and the random-pair baseline.  Each call
prepares its images (:mod:`sibscan.kernels.paircorr_sides`: crops, flips, spectra, norms), so on
``benchmarks.verify_share``'s 3,000 x 600 case every test image was prepared as a query four
times and most train images three times.  A :class:`PreparedStore` holds one role's prepared
images in slots (its tensors grow to at most ``capacity`` images), keyed by the image's file key,
least recently used out first; a call asks it for the rows of one tile
(:func:`sibscan.verify.pairtiles.pair_tiles`, unchanged) and scores the pairs against the store's
tensors at the slots it returns.  The tensors an image gets in a slot are bitwise the ones its
own preparation gives (preparation is per image: the same values in any batch, checked by
``tests/test_verify_store.py``), so every score is bitwise the one of a call that prepares its
tiles afresh.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Dict, Hashable, List, Sequence

import numpy as np

__all__ = ["PreparedStore"]


class PreparedStore:
    """Prepared images of one role (query or database side) in ``capacity`` slots.

    Parameters
    ----------
    capacity : int
        Slots (images held at once); at least the rows one tile asks for.
    prepare : callable ``(images) -> QuerySide | DatabaseSide``
        Prepares a float32 tensor of shape (n, C, H, W); the store's side is made from the first
        result (its dicts' tensors with ``capacity`` rows).
    """

    def __init__(self, capacity: int, prepare: Callable):
        self.capacity = max(1, int(capacity))
        self.prepare = prepare
        self.side = None
        self._slot: "OrderedDict[Hashable, int]" = OrderedDict()  # key -> slot, least recently used first
        self._free: List[int] = []  # slots given up by evicted images
        self._used = 0  # slots handed out so far (the tensors grow to hold them, up to capacity)

    def __len__(self) -> int:
        return len(self._slot)

    def slots(self, keys: Sequence[Hashable], load: Callable[[List[int]], object]) -> np.ndarray:
        """Slots of ``keys`` (at most :attr:`capacity` distinct ones), preparing the ones not held.

        ``load(positions)`` gives the images of ``keys[p]`` for the positions not held, a float32
        tensor of shape (len(positions), C, H, W).  Returns an int64 ndarray of shape (len(keys),).
        """
        order = list(dict.fromkeys(keys))  # a file listed twice takes one slot
        if len(order) > self.capacity:
            raise ValueError(f"{len(order)} images asked of a store of {self.capacity} slots")
        slot_of: Dict[Hashable, int] = {}
        missing = []
        for key in order:
            slot = self._slot.get(key)
            if slot is None:
                missing.append(key)
            else:
                self._slot.move_to_end(key)
                slot_of[key] = slot
        if missing:
            # the images asked for are the most recently used now: eviction takes others first
            for key in missing:
                if not self._free and self._used < self.capacity:
                    self._free.append(self._used)
                    self._used += 1
                elif not self._free:
                    victim = next(k for k in self._slot if k not in slot_of)
                    self._free.append(self._slot.pop(victim))
                slot_of[key] = self._slot[key] = self._free.pop()
            first: Dict[Hashable, int] = {}
            for p, key in enumerate(keys):
                first.setdefault(key, p)
            self._fill(np.array([slot_of[k] for k in missing], np.int64), self.prepare(load([first[k] for k in missing])))
        return np.array([slot_of[k] for k in keys], np.int64)

    def _fill(self, slots: np.ndarray, part) -> None:
        """Write a freshly prepared side ``part`` into ``slots`` of the store's side, growing its
        tensors (to twice their rows, at most :attr:`capacity`) when a slot lies beyond them."""
        import torch

        if self.side is None:
            self.side = type(part)()
        rows = _rows(self.side)
        if self._used > rows:
            grown = min(self.capacity, max(self._used, 2 * rows))
            for name, tensors in _tensor_dicts(part).items():
                mine = getattr(self.side, name)
                for key, t in tensors.items():
                    new = torch.empty((grown,) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
                    if key in mine:
                        new[:rows] = mine[key]
                    mine[key] = new
            forget = getattr(self.side, "forget_all", None)
            if forget is not None:  # a query side's lazily made detail bands are sized by its rows
                forget()
        at = torch.as_tensor(slots, device=next(iter(part.spectra.values())).device)
        for name, tensors in _tensor_dicts(part).items():
            mine = getattr(self.side, name)
            for key, t in tensors.items():
                mine[key][at] = t
        forget = getattr(self.side, "forget", None)
        if forget is not None:  # a query side's lazily made detail bands of the slots' old images
            forget(at)


def _rows(side) -> int:
    """Rows (slots) the tensors of ``side`` have (0 before the first image)."""
    return next((len(t) for t in side.spectra.values()), 0)


def _tensor_dicts(side) -> Dict[str, dict]:
    """The per-image tensors a prepared side is made of (not its lazily filled detail bands)."""
    return {name: getattr(side, name) for name in ("spectra", "norms", "zoomed")}
