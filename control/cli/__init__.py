"""The ``mesh`` command line: one module per group of verbs, wired in main.py."""
