package render

import (
	"testing"
)

// FuzzImageOverride feeds arbitrary spec.source.kustomize.images entries (`kustomize edit set
// image` syntax, from Applications in git) to parseImageOverride: it never panics, what it
// accepts has a name, and written back in the same syntax it parses to the same override.
func FuzzImageOverride(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.25", "nginx=ghcr.io/acme/nginx:1.25", "nginx@sha256:" + "ab", "registry:5000/app:v1",
		"a=b:c@d", "=x", ":tag", "@d", "a=", "a:b:c", "a/b:c/d", "a==b", "a@b@c", "[::1]:5000/x:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		img, err := parseImageOverride(s)
		if err != nil {
			return
		}
		if img.Name == "" {
			t.Fatalf("%q accepted without a name", s)
		}
		back := img.Name
		if img.NewName != "" {
			back += "=" + img.NewName
		}
		if img.NewTag != "" {
			back += ":" + img.NewTag
		}
		if img.Digest != "" {
			back += "@" + img.Digest
		}
		again, err := parseImageOverride(back)
		if err != nil || again != img {
			t.Fatalf("%q parses to %+v, written back as %q it parses to %+v, %v", s, img, back, again, err)
		}
	})
}
