"""A tiny calculator with a bug for forq's examples: `add` subtracts."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
