# Shared by the scripts in scripts/: dependency installation and building.
# Sourced, not run.

STVM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Debian packages the build and the tests need.
STVM_PACKAGES=(build-essential cmake pkg-config libgmp-dev libcmocka-dev
    libelf-dev libdw-dev libunwind-dev libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libcapstone-dev)

stvm_install_deps() {
    local missing=()
    for p in "${STVM_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "== installing missing Debian packages: ${missing[*]}"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then sudo=(sudo); else
            echo "error: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
            return 1
        fi
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# stvm_build DIR [cmake args…]: configure once, then an incremental build.
stvm_build() {
    local dir=$1
    shift
    if [ ! -f "$dir/CMakeCache.txt" ]; then
        cmake -S "$STVM_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null || return 1
    fi
    cmake --build "$dir" -j"$(nproc)" 2>&1 | grep -vE '^\[ *[0-9]+%\]|^Consolidate|^-- ' || true
    return "${PIPESTATUS[0]}"
}
