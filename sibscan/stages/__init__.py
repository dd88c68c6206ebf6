"""The stages of a scan over both splits, each called once by :func:`sibscan.scan.run_scan`.

``resume`` (start over or resume a scan directory: what must match, what ``force`` removes),
``embedding`` (both splits embedded through the cache, locally or as Ray tasks), ``chunks`` (long
texts embedded and searched as chunks), ``candidates`` (the neighbours table: top-k in each
direction, from one or more ``views``), ``views`` (candidate views beside the whole-item one, e.g.
image windows) and ``pairverify`` (each candidate pair verified once, in one orientation).  This
package imports none of them, so importing one stage does not load the others: import the module.
"""
__all__ = ["candidates", "chunks", "embedding", "pairverify", "resume", "views"]
