"""Sums of integers, the loop in C."""

from fastsum._speedups import total

__all__ = ["total"]
