import unittest

from leap import is_leap


class LeapTest(unittest.TestCase):
    def test_ordinary_leap_year(self):
        self.assertTrue(is_leap(2024))

    def test_century(self):
        self.assertFalse(is_leap(1900))

    def test_four_hundred(self):
        self.assertTrue(is_leap(2000))

    def test_common_year(self):
        self.assertFalse(is_leap(2023))
