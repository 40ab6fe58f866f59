# Sourced by setup and test: configure and build one CMake tree, and stop
# everything with the compiler's own message when the build fails.
# usage: cmake_build DIR [cmake -D options...]
cmake_build() {
  local dir="$1"; shift
  local log
  log="$(mktemp)"
  if ! cmake -S . -B "$dir" -G Ninja "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "build: configuring ${dir} failed (above)" >&2
    exit 1
  fi
  if ! cmake --build "$dir" -j "$(nproc)" >"$log" 2>&1; then
    grep -Ev '^\[[0-9]+/[0-9]+\] ' "$log" >&2 || true
    rm -f "$log"
    echo "build: building ${dir} failed (compiler output above); nothing was tested" >&2
    exit 1
  fi
  # Warnings are shown, progress lines are not.
  grep -Ev '^\[[0-9]+/[0-9]+\] |^ninja: no work to do' "$log" || true
  rm -f "$log"
}
