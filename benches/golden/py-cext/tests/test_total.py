from fastsum import total


def test_empty():
    assert total([]) == 0


def test_range():
    assert total(range(101)) == 5050


def test_negative():
    assert total([-3, 1, 2]) == 0
