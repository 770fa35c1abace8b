// Package config fills a command's flags from, in order of precedence: the command line,
// FRESHET_* environment variables, and an optional YAML file. Every flag can be set in all
// three ways under one name: --data-dir, FRESHET_DATA_DIR, and "data-dir:" in the file.
//
// A file that is not valid YAML, or that names a key no flag has, is an error naming the file
// and the line.
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

var yamlLineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// EnvPrefix prefixes every environment variable.
const EnvPrefix = "FRESHET_"

// EnvName returns the environment variable for a flag name: data-dir → FRESHET_DATA_DIR.
func EnvName(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// Apply sets each flag in fs that was not given on the command line from its environment
// variable or, failing that, from the YAML file at path (if path is not empty). skip names flags
// that take no part (such as --config itself).
func Apply(fs *pflag.FlagSet, path string, skip ...string) error {
	var file map[string]fileValue
	if path != "" {
		var err error
		if file, err = readFile(path, fs, skip); err != nil {
			return err
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || contains(skip, f.Name) {
			return
		}
		if v, ok := os.LookupEnv(EnvName(f.Name)); ok {
			if err := setFlag(fs, f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", EnvName(f.Name), v, err))
			}
			return
		}
		if fv, ok := file[f.Name]; ok {
			for _, v := range fv.values {
				if err := setFlag(fs, f, v); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: %s: %w", path, fv.line, f.Name, err))
					return
				}
			}
		}
	})
	return errors.Join(errs...)
}

func setFlag(fs *pflag.FlagSet, f *pflag.Flag, v string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		// Environment values of list flags are comma separated, like on the command line.
		if err := sv.Replace(splitList(v)); err != nil {
			return err
		}
		f.Changed = true
		return nil
	}
	return fs.Set(f.Name, v)
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

type fileValue struct {
	values []string
	line   int
}

func readFile(path string, fs *pflag.FlagSet, skip []string) (map[string]fileValue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// yaml.v3 says "yaml: line N: …"; say "file:N: …" like compilers do.
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	out := map[string]fileValue{}
	if len(doc.Content) == 0 {
		return out, nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: the file must be a mapping of setting names to values", path, root.Line)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		f := fs.Lookup(k.Value)
		if f == nil || contains(skip, k.Value) {
			return nil, fmt.Errorf("%s:%d: unknown setting %q (known: %s)", path, k.Line, k.Value, strings.Join(names(fs, skip), ", "))
		}
		fv := fileValue{line: k.Line}
		switch v.Kind {
		case yaml.ScalarNode:
			fv.values = []string{v.Value}
			if _, isList := f.Value.(pflag.SliceValue); isList {
				fv.values = []string{strings.Join(splitList(v.Value), ",")}
			}
		case yaml.SequenceNode:
			if _, isList := f.Value.(pflag.SliceValue); !isList {
				return nil, fmt.Errorf("%s:%d: %s takes one value, not a list", path, v.Line, k.Value)
			}
			var items []string
			for _, item := range v.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("%s:%d: %s: list items must be plain values", path, item.Line, k.Value)
				}
				items = append(items, item.Value)
			}
			fv.values = []string{strings.Join(items, ",")}
		default:
			return nil, fmt.Errorf("%s:%d: %s must be a plain value", path, v.Line, k.Value)
		}
		out[k.Value] = fv
	}
	return out, nil
}

func names(fs *pflag.FlagSet, skip []string) []string {
	var out []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !contains(skip, f.Name) && f.Name != "help" {
			out = append(out, f.Name)
		}
	})
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
