def mean(xs):
    """The arithmetic mean of a non-empty list."""
    return sum(xs) / len(xs)


def median(xs):
    """The median of a non-empty list of numbers."""
    ys = sorted(xs)
    mid = len(ys) // 2
    if len(ys) % 2 == 1:
        return ys[mid - 1]
    return (ys[mid - 1] + ys[mid]) / 2
