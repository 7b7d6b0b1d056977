import unittest

from bsearch import search


class SearchTest(unittest.TestCase):
    def test_middle(self):
        self.assertEqual(search([1, 3, 5, 7], 3), 1)

    def test_missing(self):
        self.assertEqual(search([1, 3, 5, 7], 4), -1)

    def test_last(self):
        self.assertEqual(search([1, 3, 5, 7], 7), 3)
