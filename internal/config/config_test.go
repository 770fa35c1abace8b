package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func flags() (*pflag.FlagSet, *string, *int, *time.Duration, *[]string) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	s := fs.String("data-dir", "def", "")
	n := fs.Int("workers", 1, "")
	d := fs.Duration("timeout", time.Second, "")
	l := fs.StringSlice("labels", nil, "")
	fs.String("config", "", "")
	return fs, s, n, d, l
}

func write(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "freshet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPrecedence(t *testing.T) {
	fs, s, n, d, l := flags()
	if err := fs.Parse([]string{"--workers=7"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FRESHET_TIMEOUT", "5s")
	t.Setenv("FRESHET_WORKERS", "99") // the command line wins
	p := write(t, "data-dir: /from/file\nworkers: 3\ntimeout: 1m\nlabels: [a, b]\n")
	if err := Apply(fs, p, "config"); err != nil {
		t.Fatal(err)
	}
	if *s != "/from/file" || *n != 7 || *d != 5*time.Second || strings.Join(*l, ",") != "a,b" {
		t.Fatalf("got data-dir=%s workers=%d timeout=%s labels=%v", *s, *n, *d, *l)
	}
}

func TestEnvList(t *testing.T) {
	fs, _, _, _, l := flags()
	fs.Parse(nil)
	t.Setenv("FRESHET_LABELS", "x, y")
	if err := Apply(fs, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Join(*l, ",") != "x,y" {
		t.Fatalf("labels = %v", *l)
	}
}

func TestFileErrorsNameFileAndLine(t *testing.T) {
	cases := []struct{ body, want string }{
		{"data-dir: /x\nworkers: 1\n  bad: indent\n", ":3: "}, // broken YAML
		{"data-dir: /x\nbogus: 1\n", `:2: unknown setting "bogus"`},
		{"workers: many\n", ":1: workers"},
		{"- a\n- b\n", ":1: the file must be a mapping"},
		{"data-dir: [a, b]\n", ":1: data-dir takes one value"},
		{"config: other.yaml\n", `unknown setting "config"`},
	}
	for _, c := range cases {
		fs, _, _, _, _ := flags()
		fs.Parse(nil)
		p := write(t, c.body)
		err := Apply(fs, p, "config")
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("body %q: err = %v, want file name and %q", c.body, err, c.want)
		}
	}
}

func TestEnvErrorNamesVariable(t *testing.T) {
	fs, _, _, _, _ := flags()
	fs.Parse(nil)
	t.Setenv("FRESHET_WORKERS", "lots")
	if err := Apply(fs, ""); err == nil || !strings.Contains(err.Error(), "FRESHET_WORKERS") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzConfigFile(f *testing.F) {
	f.Add("data-dir: /x\nworkers: 3\n")
	f.Add("labels: [a, b]\n")
	f.Add("{")
	f.Fuzz(func(t *testing.T, body string) {
		fs, _, _, _, _ := flags()
		fs.Parse(nil)
		p := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(p, []byte(body), 0o600)
		if err := Apply(fs, p, "config"); err != nil && !strings.Contains(err.Error(), p) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
