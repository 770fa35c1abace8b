package version

import (
	"strings"
	"testing"
)

func TestCheckSkew(t *testing.T) {
	for _, c := range []struct {
		agent, server, want string
		says                []string
	}{
		{"v1.4.0", "v1.4.2", SkewCurrent, nil},
		{"1.4.3", "v1.4.0", SkewCurrent, nil},
		{"v1.3.9", "v1.4.0", SkewOutdated, []string{"runtime v1.3.9", "v1.4.0", "one minor version", "upgrade the runtime to v1.4.0"}},
		{"v1.2.0", "v1.4.0", SkewUnsupported, []string{"runtime v1.2.0", "more than one minor version", "not supported"}},
		{"v0.9.0", "v1.0.0", SkewUnsupported, []string{"another major version"}},
		{"v1.5.0", "v1.4.0", SkewUnsupported, []string{"newer than the control plane", "upgrade the control plane first"}},
		{"v1.4.0-rc.1", "v1.4.0", SkewCurrent, nil},
		{"dev", "v1.4.0", SkewUnknown, nil},
		{"v1.4.0", "dev", SkewUnknown, nil},
		{"", "v1.4.0", SkewUnknown, nil},
		{"v1.4", "v1.4.0", SkewUnknown, nil},
		{"v1.x.0", "v1.4.0", SkewUnknown, nil},
	} {
		got := CheckSkew("runtime", c.agent, c.server)
		if got.Status != c.want || got.Agent != c.agent || got.Server != c.server {
			t.Errorf("CheckSkew(%q, %q) = %+v, want %s", c.agent, c.server, got, c.want)
		}
		if (c.want == SkewCurrent || c.want == SkewUnknown) != (got.Message == "") {
			t.Errorf("CheckSkew(%q, %q): message %q", c.agent, c.server, got.Message)
		}
		for _, w := range c.says {
			if !strings.Contains(got.Message, w) {
				t.Errorf("CheckSkew(%q, %q): %q does not say %q", c.agent, c.server, got.Message, w)
			}
		}
	}
}

func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"v1.2.3", "1.2.3-rc.1+meta", "dev", "", "v..", "v1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := parseRelease(s)
		if ok && (r.major < 0 || r.minor < 0 || r.patch < 0) {
			t.Fatalf("%q: %+v", s, r)
		}
		CheckSkew("runner", s, "v1.2.3")
	})
}
