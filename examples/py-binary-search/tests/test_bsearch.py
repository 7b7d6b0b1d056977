import unittest

from bsearch import is_sorted, search


class SearchTest(unittest.TestCase):
    def test_sorted(self):
        self.assertTrue(is_sorted([1, 2, 2, 5]))
        self.assertFalse(is_sorted([3, 1]))

    def test_middle(self):
        self.assertEqual(search([1, 3, 5, 7], 3), 1)

    def test_missing(self):
        self.assertEqual(search([1, 3, 5, 7], 4), -1)

    def test_last(self):
        self.assertEqual(search([1, 3, 5, 7], 7), 3)
