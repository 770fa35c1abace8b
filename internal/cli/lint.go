package cli

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freshet-dev/freshet/client"
)

// lintedFile is one file's verdict: the API's answer for its content.
type lintedFile struct {
	File string `json:"file"`
	client.LintResult
}

// pipelineLintCommand is `freshet pipeline lint`: every file goes to POST /api/v1/pipelines/lint,
// so the verdict is the server's, the same one that saving the pipeline would give.
func (a *app) pipelineLintCommand() *cobra.Command {
	var files []string
	var out string
	cmd := &cobra.Command{
		Use:   "lint -f FILE [-f FILE|DIR]… [-o json]",
		Short: "Check codefresh.yml files with the server's validator; exit 1 when any is invalid",
		Long: "Sends each file to POST /api/v1/pipelines/lint and prints every problem as\n" +
			"FILE:LINE:COLUMN: error|warning: FIELD: MESSAGE. A directory stands for the .yml and .yaml\n" +
			"files under it. Exit 0 when every file is valid (warnings allowed), 1 when one is not.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError("-f (a pipeline file or a directory of them) is required")
			}
			if out != outTable && out != outJSON && out != outYAML {
				return usageError("--output %q is not table, json or yaml", out)
			}
			paths, err := lintPaths(files)
			if err != nil {
				return err
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			results := make([]lintedFile, 0, len(paths))
			invalid := 0
			for _, p := range paths {
				data, err := readFile(a, p)
				if err != nil {
					return err
				}
				r, err := c.LintPipeline(cmd.Context(), string(data))
				if err != nil {
					return fmt.Errorf("lint %s: %w", p, err)
				}
				if !r.Valid {
					invalid++
				}
				results = append(results, lintedFile{File: p, LintResult: r})
			}
			if out == outTable {
				warnings := 0
				for _, r := range results {
					for _, is := range r.Issues {
						if is.Severity != "error" {
							warnings++
						}
						fmt.Fprintf(a.stdout, "%s:%d:%d: %s: ", r.File, is.Line, is.Column, is.Severity)
						if is.Field != "" {
							fmt.Fprintf(a.stdout, "%s: ", is.Field)
						}
						fmt.Fprintln(a.stdout, is.Message)
					}
				}
				if invalid == 0 {
					fmt.Fprintf(a.stdout, "%s valid (%d warnings).\n", plural(len(results), "pipeline file"), warnings)
				}
			} else if err := printData(a.stdout, out, results, nil); err != nil {
				return err
			}
			if invalid > 0 {
				return exitError{code: 1, err: fmt.Errorf("%d of %s invalid", invalid, plural(len(results), "pipeline file"))}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "file", "f", nil, "a pipeline file (- for stdin) or a directory of .yml/.yaml files (repeatable)")
	addOutputFlag(cmd, &out)
	return cmd
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what + " is"
	}
	return fmt.Sprintf("%d %ss are", n, what)
}

// lintPaths expands directories into the .yml and .yaml files under them (hidden directories
// such as .git skipped), in lexical order; files and - are kept as given.
func lintPaths(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		if arg == "-" {
			out = append(out, arg)
			continue
		}
		st, err := os.Stat(arg)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, arg)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != arg && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := filepath.Ext(p); ext == ".yml" || ext == ".yaml" {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, usageError("%s has no .yml or .yaml files", arg)
		}
	}
	return out, nil
}
