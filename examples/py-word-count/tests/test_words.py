import unittest

from words import first_word, long_words, shout


class WordsTest(unittest.TestCase):
    def test_first(self):
        self.assertEqual(first_word("  two words"), "two")
        self.assertEqual(first_word(""), "")

    def test_shout(self):
        self.assertEqual(shout("hey"), "HEY!")

    def test_none(self):
        self.assertEqual(long_words("a b c", 2), 0)

    def test_exact_length_counts(self):
        self.assertEqual(long_words("a tree and its bark", 4), 2)
