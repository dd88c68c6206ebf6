"""Compute primitives (private): row hashing, blocked similarity search with a running top-k,
MinHash signatures, perceptual hashes, transform-invariant pair correlation.

Device-agnostic: numpy on the CPU, torch (CPU or CUDA) where it pays.  Each fast path is tested
against a brute-force reference.
"""
