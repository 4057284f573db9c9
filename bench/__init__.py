"""Benchmarks: every performance figure as a ratio against a baseline measured in the same run.

`python -m bench` (or `python bench/run.py`) prints them all; see `bench/run.py`.
"""
