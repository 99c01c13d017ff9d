#!/usr/bin/env bash
# analyze.sh - static analysis: cppcheck and clang-tidy over every C file
# of the Linux build (its compile_commands.json), with the check sets and
# suppressions in tools/analysis/ (docs/testing.md says why each is there).
#
#   tools/analyze.sh [BUILD_DIR]     default build/linux-native
#
# bench/ is left out (benchmark programs, not shipped).
# Exit status 0 when both are clean, 1 with the findings listed. The
# Windows-only sources (*/win/) are not in a Linux compile database; they
# are compiled with -Wall -Wextra -Werror by the mingw build instead.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/linux-native}
db="$build/compile_commands.json"
here=tools/analysis
jobs=$(nproc)
[ -f "$db" ] || { echo "analyze.sh: no $db (configure the build first)"; exit 2; }
bad=0

echo "-- cppcheck $(cppcheck --version | awk '{print $2}')"
# warning,portability,performance: real defects, not style. __GNUC__ makes
# the headers' noreturn/format attributes visible to cppcheck.
# --suppressions-list: one "id:file" per line with the reason beside it.
grep -v '^\s*#' "$here/cppcheck.supp" | sed 's/\s*#.*$//' | grep -v '^\s*$' \
    > "$build/cppcheck.supp"
if ! cppcheck --project="$db" -D__GNUC__=12 --library="$here/px.cfg" \
        --enable=warning,portability,performance --std=c11 -q -j "$jobs" \
        --inline-suppr --suppressions-list="$build/cppcheck.supp" \
        --relative-paths="$(pwd)" \
        -i build -i bench --error-exitcode=1 \
        --template='{file}:{line}: {severity}: {id}: {message}' \
        2> "$build/cppcheck.txt"; then
    grep -v '^ ' "$build/cppcheck.txt"
    bad=1
fi
grep -q '^[^ ]' "$build/cppcheck.txt" && bad=1 # a line that is no continuation
echo "cppcheck: $(grep -c ': \(error\|warning\|portability\|performance\): ' "$build/cppcheck.txt") finding(s)"

echo "-- clang-tidy $(clang-tidy-14 --version | awk '/version/ {print $4}')"
checks=$(grep -v '^\s*#' "$here/clang-tidy-checks" | sed 's/\s*#.*$//' | grep -v '^\s*$' | paste -sd, -)
# The project's files but bench/ (the lead's benchmark programs, not
# shipped), headers of the project included; findings matched by
# clang-tidy.supp are dropped.
src="^$(pwd)/(base|service|config|watchdog|kb|tools|tests)/"
run-clang-tidy-14 -p "$build" -j "$jobs" -quiet -checks="$checks" \
    -header-filter="$src" "$src" > "$build/clang-tidy.raw" 2>&1
sed 's/\x1b\[[0-9;]*m//g' "$build/clang-tidy.raw" |
    grep -E '^/.*: (warning|error): ' | sed "s|^$(pwd)/||" | sort -u \
    > "$build/clang-tidy.all"
cp "$build/clang-tidy.all" "$build/clang-tidy.txt"
while IFS= read -r line; do
    pat=${line%%#*}
    pat=$(echo "$pat" | xargs)
    [ -n "$pat" ] || continue
    file=${pat%% *}
    check=${pat##* }
    grep -v -F -e "$file:" "$build/clang-tidy.txt" > "$build/clang-tidy.keep" || true
    grep -F -e "$file:" "$build/clang-tidy.txt" | grep -v -F "[$check" \
        >> "$build/clang-tidy.keep" || true
    sort -u "$build/clang-tidy.keep" > "$build/clang-tidy.txt"
done < "$here/clang-tidy.supp"
n=$(wc -l < "$build/clang-tidy.txt")
if [ "$n" -gt 0 ]; then
    cat "$build/clang-tidy.txt"
    bad=1
fi
echo "clang-tidy: $n finding(s) ($(wc -l < "$build/clang-tidy.all") before suppressions)"
exit $bad
