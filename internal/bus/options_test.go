package bus

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		// want lists substrings of the error (field name and value); empty means valid.
		want []string
	}{
		{name: "embedded defaults", opts: Options{DataDir: "/var/lib/freshet/nats"}},
		{name: "embedded loopback", opts: Options{DataDir: "d", ListenLoopback: true, Replicas: 1, DuplicateWindow: time.Minute, Stream: "FRESHET_TEST-1"}},
		{name: "external", opts: Options{URL: "nats://a:4222, tls://b:4222,c:4222,ws://d:8080,wss://user:pw@e", Replicas: 3}},
		{name: "external ignores DataDir", opts: Options{URL: "nats://a:4222", DataDir: "d"}},
		{name: "embedded without DataDir", opts: Options{}, want: []string{"DataDir", `""`}},
		{name: "embedded blank DataDir", opts: Options{DataDir: "  "}, want: []string{"DataDir"}},
		{name: "bad scheme", opts: Options{URL: "http://a:4222"}, want: []string{"URL", "http://a:4222", "scheme"}},
		{name: "empty entry", opts: Options{URL: "nats://a:4222,"}, want: []string{"URL", "empty entry"}},
		{name: "missing host", opts: Options{URL: "nats://:4222"}, want: []string{"URL", "missing host"}},
		{name: "password redacted", opts: Options{URL: "http://user:secret@a:4222"}, want: []string{"URL", "user:xxxxx@a"}},
		{name: "loopback with external", opts: Options{URL: "nats://a:4222", ListenLoopback: true}, want: []string{"ListenLoopback", "true"}},
		{name: "stream with dot", opts: Options{DataDir: "d", Stream: "FRESHET.X"}, want: []string{"Stream", "FRESHET.X"}},
		{name: "stream with space", opts: Options{DataDir: "d", Stream: "A B"}, want: []string{"Stream"}},
		{name: "negative replicas", opts: Options{URL: "nats://a", Replicas: -1}, want: []string{"Replicas", "-1", "between 1 and 5"}},
		{name: "too many replicas", opts: Options{URL: "nats://a", Replicas: 6}, want: []string{"Replicas", "6"}},
		{name: "replicas embedded", opts: Options{DataDir: "d", Replicas: 3}, want: []string{"Replicas", "3", "single node"}},
		{name: "window too short", opts: Options{DataDir: "d", DuplicateWindow: time.Millisecond}, want: []string{"DuplicateWindow", "1ms", "100ms"}},
		{name: "window negative", opts: Options{DataDir: "d", DuplicateWindow: -time.Second}, want: []string{"DuplicateWindow", "-1s"}},
		{name: "window beyond max age", opts: Options{DataDir: "d", DuplicateWindow: 8 * 24 * time.Hour}, want: []string{"DuplicateWindow", "192h"}},
		{name: "several at once", opts: Options{Replicas: 9, Stream: "a*"}, want: []string{"DataDir", "Replicas", "Stream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Validate() = %v, want an ErrInvalidOptions", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("Validate() leaks a password: %q", err)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := Options{DataDir: "d"}.withDefaults()
	want := Options{DataDir: "d", Stream: DefaultStream, Replicas: 1, DuplicateWindow: 2 * time.Minute}
	if got != want {
		t.Errorf("withDefaults() = %+v, want %+v", got, want)
	}
}

func TestOptionsBindFlags(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.BindFlags(fs)
	err := fs.Parse([]string{"--nats-url=nats://a:4222", "--nats-replicas=3", "--nats-duplicate-window=5m", "--nats-stream=S"})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{URL: "nats://a:4222", Replicas: 3, DuplicateWindow: 5 * time.Minute, Stream: "S"}
	if o != want {
		t.Errorf("flags parsed into %+v, want %+v", o, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
