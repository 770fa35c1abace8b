package hostedkube

import (
	"errors"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Bad options name the flag, the value and what is valid.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string // "" when valid
	}{
		{Options{Server: "https://freshet.example.test"}, ""},
		{Options{Server: "https://freshet.example.test", NamespacePrefix: "tenant-rt-"}, ""},
		{Options{Server: "freshet.example.test"}, "hosted-runtimes-server"},
		{Options{Server: "https://x", NamespacePrefix: "Hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "hosted"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "-hosted-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: "host_ed-"}, "hosted-runtimes-namespace-prefix"},
		{Options{Server: "https://x", NamespacePrefix: strings.Repeat("a", 30) + "-"}, "hosted-runtimes-namespace-prefix"},
	} {
		err := tc.o.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.o, err)
			}
			continue
		}
		var fe *errdefs.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("%+v: %v, want an invalid %s", tc.o, err, tc.field)
		}
	}
}
