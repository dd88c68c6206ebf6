"""Calibration: the random-pair baseline, the hand-labelled sample, and the fitted cutoff."""
