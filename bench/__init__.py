"""Benchmarks of Conduit Console: `make bench` (quick) or `BENCH_FULL=1 make bench`.

The orchestrator (`bench.run`) never loads Django itself: every measurement that needs
Django runs in a child process (`bench.child`) pointed at its own fresh data folder, so
each benchmark sees exactly the database it was given. See bench/README.md.
"""
