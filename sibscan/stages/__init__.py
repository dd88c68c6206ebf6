"""The stages of a scan over both splits, each called once by :func:`sibscan.scan.run_scan`.

``resume`` (start over or resume a scan directory: its manifest, what must match, what ``force``
removes), ``inputs`` (load and fingerprint both splits), ``models`` (the encoder, verifier and
candidate views), ``embedding`` (both splits embedded through the cache, locally or as Ray tasks),
``chunks`` (long texts embedded and searched as chunks), ``table`` (the neighbours table assembled
and written), ``candidates`` (its rows: top-k in each direction, verified), ``views`` (candidate
views beside the whole-item one, e.g. image windows), ``pairverify`` (each candidate pair verified
once, in one orientation), ``baseline`` (the random-pair baseline) and ``summary`` (the verdict and
the summary printed).  This package imports none of them, so importing one stage does not load the
others: import the module.
"""
__all__ = ["baseline", "candidates", "chunks", "embedding", "inputs", "models", "pairverify", "resume", "summary",
           "table", "views"]
