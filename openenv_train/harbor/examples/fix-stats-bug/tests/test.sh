#!/bin/bash
# Hidden unit tests of /app/stats_utils.py. Writes /logs/verifier/reward.json:
#   reward    1.0 when every test passes, else 0.0
#   pass_rate the fraction of tests that pass
mkdir -p /logs/verifier
cd /app
python3 - <<'PY'
import json
import sys
import unittest

sys.path.insert(0, "/app")


class MedianTests(unittest.TestCase):
    def setUp(self):
        import stats_utils

        self.stats = stats_utils

    def test_odd(self):
        self.assertEqual(self.stats.median([3, 1, 2]), 2)

    def test_single(self):
        self.assertEqual(self.stats.median([5]), 5)

    def test_even(self):
        self.assertEqual(self.stats.median([4, 1, 3, 2]), 2.5)

    def test_even_floats(self):
        self.assertAlmostEqual(self.stats.median([1.5, 2.5]), 2.0)

    def test_even_unsorted_negative(self):
        self.assertEqual(self.stats.median([10, -2, 7, 3, 0, 5]), 4.0)

    def test_empty_raises(self):
        with self.assertRaises(ValueError):
            self.stats.median([])

    def test_argument_unchanged(self):
        values = [3, 1, 2, 4]
        self.stats.median(values)
        self.assertEqual(values, [3, 1, 2, 4])

    def test_mean_unchanged(self):
        self.assertEqual(self.stats.mean([1, 2, 3, 4]), 2.5)


suite = unittest.defaultTestLoader.loadTestsFromTestCase(MedianTests)
result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)
failed = len(result.failures) + len(result.errors)
total = result.testsRun
reward = {"reward": 1.0 if total and not failed else 0.0, "pass_rate": (total - failed) / total if total else 0.0}
print(json.dumps(reward))
with open("/logs/verifier/reward.json", "w") as f:
    json.dump(reward, f)
PY
