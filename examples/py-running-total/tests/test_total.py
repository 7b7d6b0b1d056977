import unittest

from total import count_positive, total


class TotalTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total([1, 2, 3]), 6)

    def test_total_of_nothing(self):
        self.assertEqual(total([]), 0)

    def test_count_positive(self):
        self.assertEqual(count_positive([-1, 0, 2, 5]), 2)


if __name__ == "__main__":
    unittest.main()
