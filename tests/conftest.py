import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests import `helpers`
sys.path.insert(1, os.path.dirname(os.path.dirname(__file__)))  # and `benchmarks.*` (the zoo's converters)


def pytest_configure(config):
    """torchvision beside torch's CPU wheel needs its failing fake-kernel registrations skipped
    before anything imports it (transformers does): benchmarks/zoo/compat.py."""
    try:
        from benchmarks.zoo import compat
    except ImportError:  # torch not installed: the tests that need it skip
        return
    try:
        compat.torchvision()
    except ImportError:
        pass

if "ESTUARY_CACHE" not in os.environ:  # the suite's compile-cache entries never land in ~/.cache/estuary
    import tempfile

    os.environ["ESTUARY_CACHE"] = os.path.join(tempfile.gettempdir(), f"estuary-test-cache-{os.getuid()}")


def _vulkan_available():
    try:
        import iree.runtime as rt

        rt.get_driver("vulkan").create_default_device()
        return True
    except Exception:
        return False


VULKAN = _vulkan_available()


def pytest_collection_modifyitems(config, items):
    from helpers import ON_GPU

    for item in items:
        mark = item.get_closest_marker("cpu_only")
        if ON_GPU and mark:
            item.add_marker(pytest.mark.skip(reason=f"CPU only: {mark.args[0] if mark.args else ''}"))
    if VULKAN or os.environ.get("ESTUARY_REQUIRE_VULKAN"):
        return  # CI sets ESTUARY_REQUIRE_VULKAN so a missing driver fails instead of skipping
    skip = pytest.mark.skip(reason="no Vulkan device (install mesa-vulkan-drivers for lavapipe)")
    for item in items:
        if "vulkan" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(1234)
