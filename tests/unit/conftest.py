import pytest

from runtime.native import tiering


@pytest.fixture
def compile_at_once(monkeypatch):
    """New native regions compile as soon as a plan is built (in the background: `native.wait()` waits
    for them) instead of once hot; tests of the tiering itself say their threshold
    (tests/unit/test_native_tiering.py). A native test module states its tier with
    `pytestmark = pytest.mark.usefixtures("compile_at_once")`."""
    monkeypatch.setenv(tiering.ENV, "0")
