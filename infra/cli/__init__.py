"""The command-line entry points of `python -m infra`, one module per command (each has `add_parser`)."""
