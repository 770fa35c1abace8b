#!/bin/sh
# fuzz.sh runs every Go native fuzz target of the module for FUZZTIME each, one at a time, and
# stops at the first failure (its input is then in the package's testdata/fuzz/FuzzXxx, to be
# kept as a regression seed once fixed). The targets are found, not listed: every
# `func FuzzXxx(f *testing.F)` in a _test.go file, so a new target cannot be forgotten
# (cmd/freshet/fuzz_test.go checks that this finds what the Go tool finds).
#
#	hack/fuzz.sh              run them all (make fuzz)
#	hack/fuzz.sh -list        print "PACKAGE TARGET" lines
#	FUZZ=REGEXP hack/fuzz.sh  run the targets whose name matches REGEXP
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}

list() {
	grep -rEo --include='*_test.go' --exclude-dir=node_modules --exclude-dir=testdata --exclude-dir=.git \
		'^func Fuzz[A-Za-z0-9_]*\(' . |
		sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#./\1 \2#' | sort -u
}

if [ "${1:-}" = "-list" ]; then
	list
	exit 0
fi

list | while read -r pkg name; do
	if [ -n "${FUZZ:-}" ] && ! printf '%s\n' "$name" | grep -Eq -- "$FUZZ"; then
		continue
	fi
	echo "== $name ($pkg, $FUZZTIME)"
	$GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"
done
