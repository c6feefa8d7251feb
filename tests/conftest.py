import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite golden_outputs/ from the current converter instead of comparing against it")


@pytest.fixture
def update_golden(request):
    """True when the run was asked to rewrite the golden files (`pytest --update-golden`)."""
    return request.config.getoption("--update-golden")


def pytest_configure(config):
    """The native tier's disk cache goes to a fresh folder for the session (subprocesses inherit it),
    never the user's cache."""
    import shutil
    import tempfile
    folder = tempfile.mkdtemp(prefix="dy2static-test-native-cache-")
    config._native_cache = (folder, os.environ.get("DY2STATIC_NATIVE_CACHE"))
    os.environ["DY2STATIC_NATIVE_CACHE"] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
