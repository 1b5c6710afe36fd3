import os
import pathlib

import pytest

GOLDEN = pathlib.Path(os.environ.get(
    "ETPACK_GOLDEN_DIR", pathlib.Path(__file__).resolve().parents[2] / "test" / "golden"))


@pytest.fixture
def golden():
    return GOLDEN
