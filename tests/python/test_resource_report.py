"""The peak RSS dfmp2 reports is its own, whatever started it: a Python process holding large
arrays (PySCF's, for the bridge) must not lend dfmp2 its peak (getrusage's ru_maxrss is carried
across exec; dfmp2 reads VmHWM)."""
import json
import os
import subprocess
import tempfile
import unittest

from support import EXE, SOURCE_DIR

PARENT_BYTES = 1 << 30  # what the parent touches before it starts dfmp2


class PeakRssTest(unittest.TestCase):
    def test_a_large_parent_does_not_lend_its_peak(self):
        held = bytearray(b"\x01") * PARENT_BYTES  # written, so its pages are resident
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([EXE, os.path.join(SOURCE_DIR, "inputs", "water.xyz"), "--basis", "sto-3g", "--threads", "1",
                            "--quiet", "--json", out], check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                peak = json.load(f)["resources"]["peak_rss_bytes"]
        self.assertGreater(len(held), 0)
        # Water/STO-3G peaks at about 0.2 GB (measured: 209 MB with cc-pVDZ); the parent's 1 GiB
        # would be reported in full were it lent.
        self.assertLess(peak, PARENT_BYTES // 2)


if __name__ == "__main__":
    unittest.main()
