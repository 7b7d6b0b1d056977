import unittest

from leap import days_in_month, is_leap


class LeapTest(unittest.TestCase):
    def test_months(self):
        self.assertEqual([days_in_month(m) for m in (1, 2, 4)], [31, 28, 30])

    def test_ordinary_leap_year(self):
        self.assertTrue(is_leap(2024))

    def test_century(self):
        self.assertFalse(is_leap(1900))

    def test_four_hundred(self):
        self.assertTrue(is_leap(2000))

    def test_common_year(self):
        self.assertFalse(is_leap(2023))
