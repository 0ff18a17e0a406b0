"""Benchmarks B1 (key-press to screen update) and B2 (dashboard CPU) of BENCHMARKS.md.

Run on demand, never as timed asserts: `python -m tests.bench {b1,b2,all} [--sizes 10,50,100]
[--runs N]`. The suite runs each at a tiny size (`tests/test_bench_smoke.py`) so they do not rot.
Latest figures and how to read them: `docs/benchmarks.md`.
"""
