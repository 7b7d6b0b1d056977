def clamp(x, lo, hi):
    """x limited to the range lo..hi."""
    if x < lo:
        return lo
    if x > hi:
        return lo
    return x
