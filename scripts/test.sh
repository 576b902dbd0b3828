#!/usr/bin/env bash
# Installs Estuary with its test extras into .venv and runs the whole test suite (pytest + lit).
# As root it also installs Mesa's lavapipe (CPU Vulkan driver) so the Vulkan tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! ldconfig -p | grep -q libvulkan_lvp; then
  { apt-get update && apt-get install -y --no-install-recommends mesa-vulkan-drivers libvulkan1; } >/tmp/estuary-apt.log 2>&1 \
    || echo "warning: could not install mesa-vulkan-drivers (see /tmp/estuary-apt.log); Vulkan tests will be skipped"
fi
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test]'
lit -s lit
python -m pytest -n "${ESTUARY_TEST_WORKERS:-2}" tests
