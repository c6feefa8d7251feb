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
