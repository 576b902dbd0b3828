#!/usr/bin/env bash
# Installs Estuary with its test extras into .venv and runs the whole test suite (pytest + lit).
# As root it also installs Mesa's lavapipe (CPU Vulkan driver) so the Vulkan tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
# each step's wall time, printed at the end (the CI breakdown)
TIMES=""
started=$SECONDS
lap() { TIMES="$TIMES$(printf '%6d s  %s' $((SECONDS - started)) "$1")"$'\n'; started=$SECONDS; }
trap 'printf "\ntest.sh steps:\n%s" "$TIMES"' EXIT
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ldconfig -p | grep -q libvulkan_lvp; then
  { apt-get update && apt-get install -y --no-install-recommends mesa-vulkan-drivers libvulkan1; } >/tmp/estuary-apt.log 2>&1 \
    || echo "warning: could not install mesa-vulkan-drivers (see /tmp/estuary-apt.log); Vulkan tests will be skipped"
fi
# Node runs the WebNN JavaScript package's tests (js/webnn); Debian's nodejs where it is missing
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v node >/dev/null; then
  { apt-get update && apt-get install -y --no-install-recommends nodejs; } >/tmp/estuary-apt-node.log 2>&1 \
    || echo "warning: could not install nodejs (see /tmp/estuary-apt-node.log); the JavaScript tests will be skipped"
fi
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test]'
# torchvision's models for the zoo (tests/zoo); --no-deps keeps the torch the test extras pinned
python -m pip install -q --no-deps torchvision==0.28.0
lap "install"
python -m mypy  # type check of the modules listed in pyproject.toml [tool.mypy]
lap "mypy"
lit -s lit
lap "lit"
python -m pytest -n "${ESTUARY_TEST_WORKERS:-2}" --dist worksteal tests
lap "pytest tests"
# WebNN programs in JavaScript under Node (js/webnn), through the Estuary worker of this .venv
if command -v node >/dev/null; then
  ESTUARY_PYTHON="$(command -v python)" node --test js/webnn/test/
  lap "node --test js/webnn/test"
else
  echo "warning: node not found; the JavaScript tests (js/webnn/test) were skipped"
fi
# numerics must not depend on the nn-level optimizations: the per-op families they rewrite and the
# whole-model tests again, with every optimization pass off
ESTUARY_OPTIMIZE=0 python -m pytest -n "${ESTUARY_TEST_WORKERS:-2}" --dist worksteal \
  tests/ops/test_convolution.py tests/ops/test_pooling.py tests/ops/test_normalization.py tests/ops/test_shape.py \
  tests/importers/coreml/test_classic_conv.py tests/importers/coreml/test_coreml_example.py tests/importers/nnef/test_conv.py \
  tests/importers/nnef/test_network.py tests/importers/nnef/test_onnx_conversion.py tests/importers/nnapi/test_mobilenet_quant8.py \
  tests/api/test_example.py tests/importers/webnn/test_webnn_json.py
lap "pytest, optimizations off"
# the op tests again on Vulkan (lavapipe in CI): every op's numerics on the SPIR-V path
if [ -n "${ESTUARY_REQUIRE_VULKAN:-}" ] || python -c "import iree.runtime as rt; rt.get_driver('vulkan').create_default_device()" 2>/dev/null; then
  ESTUARY_TEST_TARGET=vulkan-spirv python -m pytest -n "${ESTUARY_TEST_WORKERS:-2}" --dist worksteal tests/ops
  lap "pytest tests/ops on vulkan-spirv"
fi
