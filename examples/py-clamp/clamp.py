def lerp(a, b, t):
    """The point a fraction t of the way from a to b."""
    return a + (b - a) * t


def sign(x):
    """-1, 0 or 1, as x is negative, zero or positive."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    return 0


def clamp(x, lo, hi):
    """x limited to the range lo..hi."""
    if x < lo:
        return lo
    if x > hi:
        return lo
    return x
