"""The words the two sides of a run directory share: the streamlets (pipelines/) write them, the harness (its
runner, its checker) reads them. Each word is defined here once; this package imports neither side."""
