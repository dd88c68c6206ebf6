"""Lightly transformed copies of an item: the known-"same" control pairs of a calibration (:mod:`.controls`).

A copy must stay "same" under every modality's default definition (:data:`.flow.DEFINITIONS`) and yet
not be byte-identical, so that answering it takes the look a real near-copy takes.  Each transform is
drawn from the generator it is given (the calibration's seed and the control's slot), so a re-run
writes the same copy.

* text: two of — a word dropped (from six words on), a word's case changed, a double space, the
  final punctuation added or removed;
* table rows and series: scaled by 0.95-1.05 and a little noise (1 % of the row's spread) added,
  missing values kept missing;
* images: 3-8 % cropped from each side, resized back to the original size, brightness times 0.9-1.1.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List, Tuple

import numpy as np

from sibscan.imageio import open_image

__all__ = ["copy_image", "copy_text", "copy_values"]


def copy_text(text: str, rng: np.random.Generator) -> Tuple[str, str]:
    """``(copy, what was done)`` of ``text`` after two light edits; its line breaks are kept."""
    parts = re.split(r"(\s+)", text)  # words at even places, the whitespace between them at odd ones
    at = [k for k in range(0, len(parts), 2) if parts[k]]
    edits: List[str] = []
    kinds = ["case", "punctuation"] + (["space"] if len(at) >= 2 else []) + (["drop"] if len(at) >= 6 else [])
    for kind in (rng.choice(kinds, size=min(2, len(kinds)), replace=False) if at else []):
        if kind == "drop":
            k = at.pop(int(rng.integers(len(at))))
            parts[k] = ""
            gap = k + 1 if k + 1 < len(parts) - 1 else k - 1  # and the space after it (before it, at the end)
            if 0 <= gap < len(parts):
                parts[gap] = ""
        elif kind == "case":
            k = at[int(rng.integers(len(at)))]
            parts[k] = parts[k].lower() if parts[k][:1].isupper() else parts[k].capitalize()
        elif kind == "space":
            k = at[int(rng.integers(len(at) - 1))]  # a double space between two words, never at the end
            parts[k] = parts[k] + " "
        else:
            last = at[-1]
            word = parts[last]
            parts[last] = word[:-1] if word[-1:] in ".!?;," and len(word) > 1 else word + "."
        edits.append(str(kind))
    out = "".join(parts)
    if out == text:  # an empty text, or edits that cancel: a trailing full stop is still a light edit
        out, edits = text + ".", edits + ["punctuation"]
    return out, "text: " + ", ".join(edits)


def copy_values(values: np.ndarray, rng: np.random.Generator) -> Tuple[np.ndarray, str]:
    """``(copy, what was done)`` of a numeric row: scaled and with a little noise, NaN kept."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    spread = float(np.std(v[finite])) if finite.sum() > 1 else 1.0
    scale = float(rng.uniform(0.95, 1.05))
    noise = rng.standard_normal(v.shape) * 0.01 * (spread or 1.0)
    out = np.where(finite, v * scale + noise, np.nan)
    return out, f"values: scaled by {scale:.3f}, noise of 1 % of the spread"


def copy_image(src: str | Path, dst: Path, rng: np.random.Generator) -> str:
    """Write a cropped, resized-back and re-lit copy of the image ``src`` to ``dst`` (PNG); returns what was done."""
    from PIL import ImageEnhance

    im = open_image(src)
    w, h = im.size
    crop = rng.uniform(0.03, 0.08, size=4)
    box = (int(crop[0] * w), int(crop[1] * h), max(int(w - crop[2] * w), int(crop[0] * w) + 1),
           max(int(h - crop[3] * h), int(crop[1] * h) + 1))
    bright = float(rng.uniform(0.9, 1.1))
    out = ImageEnhance.Brightness(im.crop(box).resize((w, h))).enhance(bright)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(".tmp.png")
    out.save(tmp, format="PNG")
    tmp.replace(dst)
    return (f"image: cropped {', '.join(f'{c:.0%}' for c in crop)} (left, top, right, bottom), resized back, "
            f"brightness x{bright:.2f}")
