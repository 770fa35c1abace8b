package health

import (
	"strings"
	"testing"
)

// FuzzCustomizations decodes argocd-cm health customizations (operator configuration, but
// scripts and YAML written by hand) and runs what compiles against an object: decoding never
// panics, problems name argocd-cm and the key, and every run ends with a valid status.
func FuzzCustomizations(f *testing.F) {
	f.Add("resource.customizations.health.cert-manager.io_Certificate", certificateLua, "")
	f.Add("resource.customizations.health.*.aws.example.io_*", providerLua, "")
	f.Add("resource.customizations.health.a_b_c", "return {}", "")
	f.Add("resource.customizations.useOpenLibs.x_Y", "true", "")
	f.Add("x", "", "example.com/Foo:\n  health.lua: |\n    return {status=\"Healthy\"}\n")
	f.Add("resource.customizations.health.Pod", "while true do end", "- [")
	f.Add("resource.customizations.health.Pod", `local s = "x" while true do s = s .. s end`, "&a [*a, *a]")
	f.Fuzz(func(t *testing.T, key, script, legacy string) {
		data := map[string]string{key: script}
		if legacy != "" {
			data[KeyCustomizations] = legacy
		}
		c, problems := ParseCustomizations(data)
		for _, p := range problems {
			if !strings.Contains(p.Error(), "argocd-cm") {
				t.Fatalf("problem without argocd-cm: %v", p)
			}
		}
		if c == nil {
			t.Fatal("nil customizations")
		}
		if c.Len() > 0 && len(c.Keys()) == 0 {
			t.Fatal("checks without keys")
		}
		o := obj("example.com/v1", "Foo", map[string]any{"conditions": []any{cond("Ready", "True", "", "ok")}})
		for _, gk := range [][2]string{{"example.com", "Foo"}, {"", "Pod"}, {"cert-manager.io", "Certificate"}} {
			s := c.Lookup(gk[0], gk[1])
			if s == nil {
				continue
			}
			r := s.Assess(o)
			if _, ok := order[r.Status]; !ok {
				t.Fatalf("status %q", r.Status)
			}
		}
	})
}
