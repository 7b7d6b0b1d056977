import unittest

from clamp import clamp, lerp, sign


class ClampTest(unittest.TestCase):
    def test_lerp(self):
        self.assertEqual(lerp(10, 20, 0.5), 15)

    def test_sign(self):
        self.assertEqual([sign(-3), sign(0), sign(8)], [-1, 0, 1])

    def test_inside(self):
        self.assertEqual(clamp(5, 0, 10), 5)

    def test_below(self):
        self.assertEqual(clamp(-3, 0, 10), 0)

    def test_above(self):
        self.assertEqual(clamp(42, 0, 10), 10)
