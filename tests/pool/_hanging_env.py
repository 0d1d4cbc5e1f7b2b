"""An env module whose import never ends in the env server the test starts (tests/pool/test_pool_faults.py sets
``HANG_ON_IMPORT``): that server never comes up. Imported anywhere else (pytest's doctest collection) it is empty."""

import os
import time

while os.environ.get("HANG_ON_IMPORT") == "1":
    time.sleep(1)
