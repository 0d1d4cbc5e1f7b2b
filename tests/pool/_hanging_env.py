"""An env module whose import never ends: its server never comes up (tests/pool/test_pool_faults.py)."""

import time

while True:
    time.sleep(1)
