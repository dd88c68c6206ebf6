"""Image files -> uint8 pixel batches on a CUDA device, decoded on the GPU ahead of the model.

JPEG files are read by a thread pool and decoded on the GPU in batches
(``torchvision.io.decode_jpeg(device="cuda")``), resized there (bicubic with antialiasing, short
side to ``size``, centre crop — the geometry of :func:`sibscan.encoders.imagebatch.crop_geometry`)
and written into one of two preallocated device buffers.  Everything else — PNG and other formats,
CMYK or 12-bit JPEGs, headers announcing more than :data:`sibscan.imageio.MAX_PIXELS` pixels, and
any batch the GPU decoder refuses — is decoded on the CPU by :func:`sibscan.imageio.open_image` into
one of two pinned host buffers and copied without blocking.

A producer thread prepares batch ``i + 1`` on its own CUDA stream while the model runs batch ``i`` on
the current stream; CUDA events order the two (a buffer is refilled only once the model has read
it, the model reads a batch only once it is written), so decoding overlaps inference on the device
as well as on the host.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..imageio import MAX_PIXELS
from .imagebatch import crop_geometry, decode_into, default_threads

__all__ = ["cuda_pixel_batches", "jpeg_header", "resize_crop"]

#: start-of-frame markers (baseline, extended, progressive, lossless; not DHT C4, JPG C8, DAC CC)
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def jpeg_header(data: bytes) -> Optional[Tuple[int, int, int, int]]:
    """``(width, height, components, precision)`` from a JPEG's start-of-frame, or ``None`` when
    ``data`` is not a JPEG whose frame header can be found."""
    if data[:3] != b"\xff\xd8\xff":
        return None
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker in _SOF:
            if i + 9 >= n:
                return None
            precision = data[i + 4]
            height = int.from_bytes(data[i + 5:i + 7], "big")
            width = int.from_bytes(data[i + 7:i + 9], "big")
            return width, height, data[i + 9], precision
        if marker == 0xDA:  # start of scan before any frame header
            return None
        i += 2 + length
    return None


def _gpu_decodable(data: Optional[bytes]) -> bool:
    head = jpeg_header(data) if data else None
    if head is None:
        return False
    width, height, components, precision = head
    return precision == 8 and components in (1, 3) and 0 < width * height <= MAX_PIXELS


def resize_crop(images: Sequence, size: int):
    """Same-shape decoded images (each a uint8 tensor (3, H, W) on the device) -> (k, 3, size, size) uint8."""
    import torch
    import torch.nn.functional as F

    x = torch.stack(list(images))
    h, w = x.shape[-2:]
    nw, nh, left, top = crop_geometry(int(w), int(h), size)
    if (nh, nw) != (h, w):
        x = F.interpolate(x.float(), size=(nh, nw), mode="bicubic", align_corners=False, antialias=True)
        x = x.round_().clamp_(0, 255).to(torch.uint8)
    return x[:, :, top:top + size, left:left + size]


def _read(path: str) -> Optional[bytes]:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None  # the CPU path reports it through open_image, with the reason


def cuda_pixel_batches(paths: Sequence[str], size: int, batch_size: int, *, device: str,
                       threads: Optional[int] = None, gpu_decode: bool = True) -> Iterator[Tuple[int, "object"]]:
    """Yield ``(start, pixels)``: ``pixels`` a uint8 tensor (b, 3, size, size) on ``device``.

    Parameters
    ----------
    paths : sequence of str, length n
    size : int
    batch_size : int
    device : str
        A CUDA device.
    threads : int, optional
        File-reading and CPU-decoding threads (default: the cores this process may use).
    gpu_decode : bool
        Decode JPEGs on the GPU (False: every image on the CPU, as the fallback does).

    The tensor is valid until the next batch is requested; the caller's work on it is ordered
    before the buffer is refilled (an event recorded on the caller's current stream).

    Raises
    ------
    InputError
        The first image of a batch that cannot be decoded.
    """
    import torch

    n = len(paths)
    if n == 0:
        return
    threads = max(1, int(threads or default_threads()))
    dev = torch.device(device)
    bs = min(batch_size, n)
    side = torch.cuda.Stream(dev)
    gpu_bufs = [torch.empty((bs, 3, size, size), dtype=torch.uint8, device=dev) for _ in range(2)]
    for buf in gpu_bufs:  # written on the side stream: never handed to another tensor while it writes
        buf.record_stream(side)
    host_bufs = [torch.empty((bs, 3, size, size), dtype=torch.uint8).pin_memory() for _ in range(2)]
    ready = [torch.cuda.Event() for _ in range(2)]
    consumed = [torch.cuda.Event() for _ in range(2)]
    copied = [torch.cuda.Event() for _ in range(2)]
    starts = list(range(0, n, bs))

    def prepare(b: int, pool: ThreadPoolExecutor):
        start = starts[b]
        rows = list(range(start, min(n, start + bs)))
        slot = b % 2
        data: List[Optional[bytes]] = list(pool.map(_read,
                                                    [paths[i] for i in rows])) if gpu_decode else [None] * len(rows)
        on_gpu = [j for j, d in enumerate(data) if _gpu_decodable(d)]
        on_cpu = sorted(set(range(len(rows))) - set(on_gpu))
        out = gpu_bufs[slot]
        with torch.cuda.stream(side):
            side.wait_event(consumed[slot])  # the model has read this buffer's previous batch
            if on_gpu:
                try:
                    _decode_on_gpu([data[j] for j in on_gpu], on_gpu, out, size, dev)
                except RuntimeError:  # a stream nvjpeg refuses: the whole group goes to the CPU decoder
                    on_cpu = sorted(set(on_cpu) | set(on_gpu))
            if on_cpu:
                copied[slot].synchronize()  # the previous copy out of this pinned buffer is done
                host = host_bufs[slot]
                cpu_paths = [paths[rows[j]] for j in on_cpu]
                chunks = np.array_split(np.arange(len(cpu_paths)), min(threads, len(cpu_paths)))
                for future in [pool.submit(decode_into, cpu_paths, c, size, host.numpy(), 0) for c in chunks]:
                    future.result()
                staged = host[: len(cpu_paths)].to(dev, non_blocking=True)
                copied[slot].record(side)
                out.index_copy_(0, torch.as_tensor(on_cpu, device=dev), staged)
            ready[slot].record(side)
        return start, out[: len(rows)]

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sibscan-read") as pool, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="sibscan-prepare") as producer:
        pending = producer.submit(prepare, 0, pool)
        for b in range(len(starts)):
            start, pixels = pending.result()
            current = torch.cuda.current_stream(dev)
            current.wait_event(ready[b % 2])
            if b + 1 < len(starts):
                pending = producer.submit(prepare, b + 1, pool)
            yield start, pixels
            consumed[b % 2].record(current)
        torch.cuda.current_stream(dev).synchronize()


def _decode_on_gpu(data: List[bytes], slots: List[int], out, size: int, dev) -> None:
    """Decode JPEG bytes on the GPU and write each, resized, into ``out[slots[i]]``."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    tensors = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    decoded = decode_jpeg(tensors, mode=ImageReadMode.RGB, device=dev)
    groups = {}
    for j, img in zip(slots, decoded):
        groups.setdefault(tuple(img.shape), []).append((j, img))
    for members in groups.values():
        idx = torch.as_tensor([j for j, _ in members], device=dev)
        out.index_copy_(0, idx, resize_crop([img for _, img in members], size))
