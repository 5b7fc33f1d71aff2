#!/usr/bin/env bash
# kvscope's one entry point on a fresh Debian machine.
#   scripts/kvscope.sh run   install what is missing, build, start the app on Llama-3-70B
#   scripts/kvscope.sh test  install what is missing, build, run the whole test suite
# Environment: BUILD_DIR (default build), JOBS (default nproc), KVSCOPE_ARGS (extra app flags).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
mode="${1:-}"
case "$mode" in
run | test | setup) ;;
*)
    echo "usage: scripts/kvscope.sh run|test|setup" >&2
    exit 2
    ;;
esac

# Debian packages the build, the app and the tests need (poppler-utils: the PDF-report test
# renders page 1 to check it is not blank; appstream, desktop-file-utils: the package-metadata
# tests; dpkg-dev: dpkg-shlibdeps for `cpack -G DEB`). nvcc is optional (CUDA backend).
packages=(cmake ninja-build g++ pkg-config dpkg-dev
    qt6-base-dev qt6-svg-dev libqcustomplot-dev nlohmann-json3-dev libcli11-dev
    clang libclang-rt-dev
    fonts-dejavu-core poppler-utils appstream desktop-file-utils)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "kvscope: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$mode" = setup ] && exit 0

build="${BUILD_DIR:-build}"
jobs="${JOBS:-$(nproc)}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKVSCOPE_BUILD_GUI=ON -DKVSCOPE_BUILD_TESTS=ON
cmake --build "$build" -j "$jobs"

if [ "$mode" = run ]; then
    if [ -z "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
        echo "kvscope: no display found; saving a screenshot instead (kvscope-screenshot.png)"
        exec env QT_QPA_PLATFORM=offscreen "$build/app/kvscope" --model llama-3-70b \
            --screenshot kvscope-screenshot.png ${KVSCOPE_ARGS:-}
    fi
    exec "$build/app/kvscope" --model llama-3-70b ${KVSCOPE_ARGS:-}
fi

cd "$build"
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$jobs"
