package spec

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// The cf_export contract.
//
// A step exports a variable to the steps after it by appending to the file ExportFileName in
// the shared volume ($CF_VOLUME_PATH/env_vars_to_export). The runner provides cf_export to
// every freestyle step, as the shell function ExportShellFunction() defined before the step's
// commands or as the executable ExportScript() on its PATH, and after the step ends it reads
// the file with ParseExportFile and sets the variables for every later step (as environment
// variables and for ${{NAME}}). Later lines override earlier ones. The file format, one entry
// per line:
//
//	NAME=VALUE            VALUE is the rest of the line, byte for byte (no quote removal)
//	NAME<<DELIMITER       a multi-line value: the lines up to a line that is exactly DELIMITER
//	#cf_export:mask NAME  mask NAME's value in logs (written by cf_export --mask)
//	# anything else       a comment; empty lines are ignored too
//
// NAME is letters, digits and _, not starting with a digit, and not a built-in variable.
const (
	ExportFileName = "env_vars_to_export"
	// MaxExportFileSize bounds the file a step may leave behind.
	MaxExportFileSize = 1 << 20
)

const maskDirective = "#cf_export:mask "

// Exports is what a step exported.
type Exports struct {
	Values map[string]string `json:"values"`
	Masked []string          `json:"masked,omitempty"` // names whose values must be masked in logs, in first-seen order
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseExports reads an export file and returns the exported values. Errors name the line and
// wrap errdefs.ErrInvalid.
func ParseExports(r io.Reader) (map[string]string, error) {
	ex, err := ParseExportFile(r)
	if err != nil {
		return nil, err
	}
	return ex.Values, nil
}

// ParseExportFile reads an export file: the values and the names to mask.
func ParseExportFile(r io.Reader) (*Exports, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxExportFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ExportFileName, err)
	}
	if len(data) > MaxExportFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", ExportFileName, MaxExportFileSize, errdefs.ErrTooLarge)
	}
	ex := &Exports{Values: map[string]string{}}
	masked := map[string]bool{}
	bad := func(n int, v, reason string) error {
		return fmt.Errorf("%s line %d: %w", ExportFileName, n, errdefs.Invalid("cf_export", v, reason))
	}
	// Lines are split on \n only: a \r is part of the value, byte for byte.
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		line, text := i+1, lines[i]
		switch {
		case strings.HasPrefix(text, maskDirective):
			name := strings.TrimSpace(strings.TrimPrefix(text, maskDirective))
			if err := checkExportName(name); err != nil {
				return nil, bad(line, name, err.Error())
			}
			if !masked[name] {
				masked[name] = true
				ex.Masked = append(ex.Masked, name)
			}
			continue
		case text == "" || strings.HasPrefix(text, "#"):
			continue
		}
		eq := strings.IndexByte(text, '=')
		hd := strings.Index(text, "<<")
		switch {
		case hd > 0 && (eq < 0 || hd < eq):
			name, delim := text[:hd], text[hd+2:]
			if err := checkExportName(name); err != nil {
				return nil, bad(line, name, err.Error())
			}
			if delim == "" {
				return nil, bad(line, text, "has no delimiter after <<: write NAME<<DELIMITER")
			}
			end := -1
			for j := i + 1; j < len(lines); j++ {
				if lines[j] == delim {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, bad(line, delim, fmt.Sprintf("(the delimiter of %s) never appears on a line of its own", name))
			}
			ex.Values[name] = strings.Join(lines[i+1:end], "\n")
			i = end
		case eq > 0:
			name := text[:eq]
			if err := checkExportName(name); err != nil {
				return nil, bad(line, name, err.Error())
			}
			ex.Values[name] = text[eq+1:]
		default:
			return nil, bad(line, text, "is not NAME=VALUE or NAME<<DELIMITER")
		}
	}
	return ex, nil
}

func checkExportName(name string) error {
	if !envName.MatchString(name) {
		return errors.New("is not a valid variable name: use letters, digits and _, not starting with a digit")
	}
	if IsBuiltin(name) {
		return errors.New("is a built-in variable and cannot be exported")
	}
	return nil
}

// ExportShellFunction returns the POSIX sh definition of cf_export that a runner puts in front of a
// freestyle step's commands. Usage, as in Codefresh:
//
//	cf_export NAME=VALUE [NAME2=VALUE2 …]   export values
//	cf_export NAME                          export the current value of $NAME
//	cf_export --mask NAME=VALUE …           also mask these values in logs
//
// Values with newlines are written in the NAME<<DELIMITER form, so nothing is truncated. It
// needs CF_VOLUME_PATH in the environment and uses only shell built-ins and printf.
func ExportShellFunction() string { return exportShellFunction }

// ExportScript returns cf_export as an executable POSIX sh script, for a runner that installs
// it on every step's PATH (so that any program of the step, not only its shell, can call it)
// instead of defining the function.
func ExportScript() string {
	return "#!/bin/sh\n# cf_export: pass variables to the later steps of a Freshet build.\n" + exportShellFunction + "cf_export \"$@\"\n"
}

var exportShellFunction = buildExportShellFunction()

func buildExportShellFunction() string {
	names := make([]string, len(builtins))
	for i, v := range builtins {
		names[i] = v.Name
	}
	return `cf_export() {
  _cf_file="${CF_VOLUME_PATH:?cf_export: CF_VOLUME_PATH is not set}/` + ExportFileName + `"
  _cf_mask=
  for _cf_a in "$@"; do
    if [ "$_cf_a" = --mask ]; then _cf_mask=1; fi
  done
  _cf_nl='
'
  for _cf_a in "$@"; do
    case "$_cf_a" in
      --mask) continue ;;
      -*) printf 'cf_export: unknown option %s\n' "$_cf_a" >&2; return 2 ;;
      *=*) _cf_n="${_cf_a%%=*}"; _cf_v="${_cf_a#*=}" ;;
      *) _cf_n="$_cf_a"; _cf_v= ;;
    esac
    case "$_cf_n" in
      ''|[0-9]*|*[!A-Za-z0-9_]*) printf 'cf_export: "%s" is not a valid variable name: use letters, digits and _, not starting with a digit\n' "$_cf_n" >&2; return 2 ;;
      ` + strings.Join(names, "|") + `) printf 'cf_export: %s is a built-in variable and cannot be exported\n' "$_cf_n" >&2; return 2 ;;
    esac
    case "$_cf_a" in
      *=*) ;;
      *) eval "_cf_v=\${$_cf_n-}" ;;
    esac
    if [ -n "$_cf_mask" ]; then
      printf '` + maskDirective + `%s\n' "$_cf_n" >>"$_cf_file" || return 1
    fi
    case "$_cf_v" in
      *"$_cf_nl"*)
        _cf_d=CF_EOF
        while :; do
          case "$_cf_nl$_cf_v$_cf_nl" in
            *"$_cf_nl$_cf_d$_cf_nl"*) _cf_d="${_cf_d}_" ;;
            *) break ;;
          esac
        done
        printf '%s<<%s\n%s\n%s\n' "$_cf_n" "$_cf_d" "$_cf_v" "$_cf_d" >>"$_cf_file" || return 1 ;;
      *) printf '%s=%s\n' "$_cf_n" "$_cf_v" >>"$_cf_file" || return 1 ;;
    esac
  done
  return 0
}
`
}
