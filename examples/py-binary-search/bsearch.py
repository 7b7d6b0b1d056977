def is_sorted(xs):
    """Whether xs is in ascending order."""
    for i in range(len(xs) - 1):
        if xs[i] > xs[i + 1]:
            return False
    return True


def search(xs, target):
    """The index of target in the sorted list xs, or -1."""
    lo, hi = 0, len(xs) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if xs[mid] == target:
            return mid
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
