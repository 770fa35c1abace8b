package executor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

const (
	// ExportFile is the file, in the workspace root, where steps leave variables for the later
	// steps of the build: one NAME=VALUE line each, appended by cf_export or by the step itself
	// (`echo NAME=VALUE >> "$CF_VOLUME_PATH/env_vars_to_export"`, as on Codefresh).
	ExportFile = "env_vars_to_export"
	// CFExportCommand is the name under which executors put CFExportScript on every step's PATH.
	CFExportCommand = "cf_export"
	// MaxExportFileSize bounds how much of ExportFile an executor reads after a step.
	MaxExportFileSize = 1 << 20
)

// CFExportScript is the cf_export command, a POSIX shell script that executors install on every
// step's PATH (as CFExportCommand, executable):
//
//	cf_export NAME=VALUE...   leave these values for the later steps
//	cf_export NAME...         leave the current values of these environment variables
//
// It checks every argument first (a valid name, a set variable, no newline in the value) and then
// appends all of them to ExportFile in one write, or none: on a bad argument it prints why and
// exits 2, which fails the step under `set -e`. The values take effect from the next step on; a
// plain shell variable must be exported before `cf_export NAME` can see it. Options such as
// Codefresh's --mask are refused rather than ignored.
const CFExportScript = `#!/bin/sh
# cf_export: leave variables for the later steps of this Freshet build.
#   cf_export NAME=VALUE...   leave these values
#   cf_export NAME...         leave the current values of these environment variables
set -eu
file="${CF_VOLUME_PATH:?cf_export: CF_VOLUME_PATH is not set}/` + ExportFile + `"
if [ "$#" -eq 0 ]; then
	echo "usage: cf_export NAME=VALUE... | NAME..." >&2
	exit 2
fi
nl='
'
lines=
for arg in "$@"; do
	case "$arg" in
	-*)
		echo "cf_export: unsupported option $arg (Freshet's cf_export takes NAME=VALUE or NAME)" >&2
		exit 2
		;;
	*=*)
		name=${arg%%=*}
		value=${arg#*=}
		;;
	*)
		name=$arg
		value=
		;;
	esac
	case "$name" in
	"" | [0-9]* | *[!A-Za-z0-9_]*)
		echo "cf_export: invalid variable name '$name': use letters, digits and _, not starting with a digit" >&2
		exit 2
		;;
	esac
	case "$arg" in
	*=*) ;;
	*)
		eval "isset=\${$name+x}"
		if [ -z "$isset" ]; then
			echo "cf_export: $name is not set in the environment: export it first, or use cf_export $name=VALUE" >&2
			exit 2
		fi
		eval "value=\$$name"
		;;
	esac
	case "$value" in
	*"$nl"*)
		echo "cf_export: the value of $name contains a newline, which cannot be exported" >&2
		exit 2
		;;
	esac
	lines="$lines$name=$value$nl"
done
printf '%s' "$lines" >>"$file"
`

// ParseExports reads an ExportFile: one NAME=VALUE per line, the value taken literally (no quotes
// or escapes are interpreted; carriage returns at the end of a line are dropped). Empty lines and lines starting with '#' are skipped. A name that
// appears several times keeps its first position and its last value. Lines that are not a valid
// assignment are left out and reported in the error (one per line, joined); the variables
// returned are valid either way. Only the first MaxExportFileSize bytes are read; a larger file is
// reported, and its line cut at that size is left out.
func ParseExports(r io.Reader) ([]EnvVar, error) {
	var (
		vars  []EnvVar
		index = map[string]int{}
		errs  []error
	)
	data, err := io.ReadAll(io.LimitReader(r, MaxExportFileSize+1))
	if err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", ExportFile, err))
	}
	if len(data) > MaxExportFileSize {
		data = data[:bytes.LastIndexByte(data[:MaxExportFileSize], '\n')+1]
		errs = append(errs, fmt.Errorf("%s is larger than %d bytes: only its first %d bytes were read", ExportFile, MaxExportFileSize, len(data)))
	}
	n := 0
	for line := range bytes.Lines(data) {
		n++
		// Every \r before the line end goes, not just one of a CRLF: a value cannot end in \r,
		// so the variables read are the ones a NAME=VALUE file of them reads back as.
		line = bytes.TrimRight(bytes.TrimSuffix(line, []byte("\n")), "\r")
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		name, value, ok := bytes.Cut(line, []byte("="))
		if !ok || !validExportName(name) {
			errs = append(errs, fmt.Errorf("%s line %d: %q is not NAME=VALUE with a name of letters, digits and _", ExportFile, n, shorten(line)))
			continue
		}
		if i, seen := index[string(name)]; seen {
			vars[i].Value = string(value)
			continue
		}
		index[string(name)] = len(vars)
		vars = append(vars, EnvVar{Name: string(name), Value: string(value)})
	}
	return vars, errors.Join(errs...)
}

// validExportName reports whether name is a portable shell variable name, as cf_export accepts.
func validExportName(name []byte) bool {
	if len(name) == 0 || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func shorten(b []byte) []byte {
	const max = 60
	if len(b) > max {
		return append(b[:max:max], "..."...)
	}
	return b
}
