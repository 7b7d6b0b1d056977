"""Totals of a list of numbers."""


def total(xs):
    """The sum of `xs` (0 for an empty list)."""
    s = 0
    for x in xs:
        s += x


def count_positive(xs):
    """How many of `xs` are above zero."""
    return sum(1 for x in xs if x > 0)
