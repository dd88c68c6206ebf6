"""What a scan keeps on disk, and how it is read back: the storage objects under the stages.

``scandir`` (the scan directory: manifest, items, neighbours table, scores), ``scanfiles`` (the
refusal of a corrupt scan file), ``neighbourtable`` / ``neighbourfile`` (the neighbours table in
memory, and written block by block), ``shards`` (embeddings in shards on disk), ``diskarray``
(arrays on disk read and written by blocks), ``spill`` (a table parsed straight to disk),
``keybuckets`` (hash keys sorted into bucket files), ``cache`` / ``cachelookup`` (the embedding
cache and its lookup by bucket files).  The modules sit in different layers (docs/architecture.md),
so this package imports none of them: import the module you need.
"""
__all__ = ["cache", "cachelookup", "diskarray", "keybuckets", "neighbourfile", "neighbourtable", "scandir", "scanfiles",
           "shards", "spill"]
