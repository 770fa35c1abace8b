package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
	"github.com/freshet-dev/freshet/internal/server"
)

// The hosted runtimes' storage flags as an operator types them: a size, 0 for no data claim
// (the pods' emptyDirs), anything else refused with the flag, the value and what is valid.
func TestHostedStorageFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		field string // "" when valid
		says  string // what the error says besides the field
	}{
		{nil, "", ""},
		{[]string{"--hosted-runtimes-storage-size", "20Gi", "--hosted-runtimes-storage-class", "fast-ssd"}, "", ""},
		{[]string{"--hosted-runtimes-storage-size", "0"}, "", ""},
		{[]string{"--hosted-runtimes-storage-size", "0Gi"}, "", ""},
		{[]string{"--hosted-runtimes-storage-size", "-1Gi"}, "hosted-runtimes-storage-size", `"-1Gi" is not a storage size`},
		{[]string{"--hosted-runtimes-storage-size", "lots"}, "hosted-runtimes-storage-size", "or 0 for no data claim"},
		{[]string{"--hosted-runtimes-storage-size", "1 Gi"}, "hosted-runtimes-storage-size", `"1 Gi"`},
		{[]string{"--hosted-runtimes-storage-size", "0", "--hosted-runtimes-storage-class", "fast-ssd"}, "hosted-runtimes-storage-class", "--hosted-runtimes-storage-size other than 0"},
		{[]string{"--hosted-runtimes-storage-class", "Fast SSD"}, "hosted-runtimes-storage-class", `"Fast SSD" is not a storage class name`},
	} {
		var o server.HostedOptions
		fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(append([]string{"--hosted-runtimes", server.HostedKubernetes, "--hosted-runtimes-server", "https://freshet.example.test"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := o.Validate("", netpolicy.Options{})
		if tc.field == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			}
			continue
		}
		if !errors.Is(err, errdefs.ErrInvalid) || errdefs.Field(err) != tc.field || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%v: %v, want an invalid %s saying %q", tc.args, err, tc.field, tc.says)
		}
	}
}
