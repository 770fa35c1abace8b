package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/freshet-dev/freshet/client"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// Output formats of -o.
const (
	outTable = "table"
	outJSON  = "json"
	outYAML  = "yaml"
)

func addOutputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", outTable, "output format: table, json or yaml")
}

func checkOutput(format string) error {
	switch format {
	case outTable, outJSON, outYAML:
		return nil
	}
	return fmt.Errorf("--output %q is not table, json or yaml", format)
}

// printData writes v as JSON or YAML (with the JSON field names), or calls table for tables.
func printData(w io.Writer, format string, v any, table func(tw *tabwriter.Writer)) error {
	switch format {
	case outJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case outYAML:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			return err
		}
		out, err := yaml.Marshal(generic)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case outTable:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		table(tw)
		return tw.Flush()
	}
	return checkOutput(format)
}

func row(tw io.Writer, cols ...any) {
	s := make([]string, len(cols))
	for i, c := range cols {
		switch v := c.(type) {
		case time.Time:
			s[i] = ts(v)
		case *time.Time:
			if v == nil {
				s[i] = "-"
			} else {
				s[i] = ts(*v)
			}
		default:
			s[i] = fmt.Sprint(v)
			if s[i] == "" {
				s[i] = "-"
			}
		}
	}
	fmt.Fprintln(tw, strings.Join(s, "\t"))
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// listCommand is a `list` subcommand: it fetches the items with the logged-in client and
// prints them as a table (printTable) or, with -o json|yaml, as data.
func listCommand[T any](a *app, short string, fetch func(context.Context, *client.Client) ([]T, error), printTable func(*tabwriter.Writer, []T)) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "list", Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return usageError("%v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			items, err := fetch(cmd.Context(), c)
			if err != nil {
				return err
			}
			return printData(a.stdout, output, items, func(tw *tabwriter.Writer) { printTable(tw, items) })
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// deleteCommand is a `delete ARG` subcommand that calls del (a client method such as
// (*client.Client).DeleteIssueTracker) with the logged-in client.
func deleteCommand(a *app, use, short string, del func(*client.Client, context.Context, string) error) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			return del(c, cmd.Context(), args[0])
		},
	}
}
