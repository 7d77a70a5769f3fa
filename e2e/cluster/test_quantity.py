"""quantity.py: quantities read back as a real server (1.31) writes them,
from k8s.io/apimachinery/pkg/api/resource's parsing and CanonicalizeBytes.

Run: cd e2e/cluster && python3 -m unittest test_quantity -v
"""
import fractions
import unittest

import quantity


class QuantityTest(unittest.TestCase):
    def test_quantities_read_back_in_canonical_form(self):
        for given, written in [
                ("1000m", "1"), ("2000", "2k"), ("1024Mi", "1Gi"), ("0.5", "500m"),
                ("1.5Gi", "1536Mi"), ("0.5Ki", "512"), ("1.1Ki", "1126400m"),
                ("8Ki", "8Ki"), ("1e3", "1e3"), ("1E", "1E"),
                (".5", "500m"), ("100m", "100m"), ("12345678", "12345678"),
                ("0.0001", "100u"), ("0", "0"), ("0m", "0"), ("-1500m", "-1500m"),
                (1, "1"), (0.25, "250m"),
                # already canonical-looking spellings are kept as written
                ("+1", "+1"), ("01", "01"), ("1Ki", "1Ki"), ("1.G", "1.G")]:
            with self.subTest(given=given):
                self.assertEqual(quantity.canonical(given), written)

    def test_resource_lists_round_up_to_a_thousandth(self):
        resources = {"cpu": "0.0001", "memory": "1.5Gi", "nvidia.com/gpu": 1, "x": "+1n"}
        quantity.canonical_list(resources)
        self.assertEqual(resources, {"cpu": "1m", "memory": "1536Mi",
                                     "nvidia.com/gpu": "1", "x": "1m"})

    def test_bad_quantities_fail_with_the_servers_message(self):
        for text, message in [("1Q", quantity.FORMAT_WRONG), ("", quantity.FORMAT_WRONG),
                              (" 1", quantity.FORMAT_WRONG), ("1ki", quantity.SUFFIX),
                              ("1e", quantity.SUFFIX), (True, quantity.FORMAT_WRONG)]:
            with self.subTest(text=text):
                with self.assertRaises(quantity.QuantityError) as ctx:
                    quantity.parse(text)
                self.assertEqual(str(ctx.exception), message)
        self.assertEqual(quantity.canonical("lots"), "lots")

    def test_quantities_compare_by_value(self):
        self.assertEqual(quantity.parse("1"), quantity.parse("1000m"))
        self.assertEqual(quantity.parse("1Gi").cmp(quantity.parse("1G")), 1)
        self.assertEqual(quantity.value("250m"), fractions.Fraction(1, 4))
        self.assertIsNone(quantity.value("lots"))
        self.assertEqual(quantity.parse("1.5").milli_value(), 1500)
        self.assertEqual(quantity.parse("1500m").value_int(), 2)


if __name__ == "__main__":
    unittest.main()
