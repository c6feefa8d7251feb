import pytest

from runtime.native import compiler, tiering


@pytest.fixture
def compile_at_once(monkeypatch):
    """New native regions compile as soon as a plan is built (in the background: `native.wait()` waits
    for them) instead of once hot; tests of the tiering itself say their threshold
    (tests/unit/test_native_tiering.py). A native test module states its tier with
    `pytestmark = pytest.mark.usefixtures("compile_at_once")`."""
    monkeypatch.setenv(tiering.ENV, "0")


@pytest.fixture(autouse=True)
def _no_compile_in_flight():
    """The native tier is on by default and compiles hot regions in the background: a test starts once the
    compiles an earlier test queued are done, so none lands in its `native.stats()` counts."""
    compiler.wait()
    yield
