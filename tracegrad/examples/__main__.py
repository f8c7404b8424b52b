"""``python -m tracegrad.examples``: runs the digits example (same options)."""
from .digits import main

main()
