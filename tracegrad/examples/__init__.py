"""Runnable examples: ``python -m tracegrad.examples.digits`` (or ``python -m tracegrad.examples``)
trains a CNN on scikit-learn's digits with torch-style code."""
