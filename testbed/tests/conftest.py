import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support import testbeds  # noqa: E402


@pytest.fixture
def make_testbed():
    """Starts testbeds on demand (`make_testbed("--boards", "3")`); stops every one of them
    when the test ends, whether it passed or failed. Run dirs are short paths under /tmp
    (Unix socket paths are limited to 107 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="bftb-", dir="/tmp"))
    try:
        with testbeds(base) as make:
            yield make
    finally:
        shutil.rmtree(base, ignore_errors=True)
