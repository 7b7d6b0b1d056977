import unittest

from words import long_words


class WordsTest(unittest.TestCase):
    def test_none(self):
        self.assertEqual(long_words("a b c", 2), 0)

    def test_exact_length_counts(self):
        self.assertEqual(long_words("a tree and its bark", 4), 2)
