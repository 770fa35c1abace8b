package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
)

// What a runner reports about pushed images is checked field by field; the first bad field is
// named.
func TestCheckImages(t *testing.T) {
	good := runnerv1.Image{Registry: "ghcr", Repository: "ghcr.io/acme/app", Tags: []string{"1.4.2", "latest", "_x", "v1.0-rc.1"},
		Digest: "sha256:" + strings.Repeat("0a", 32), Size: 1}
	if err := checkImages([]runnerv1.Image{good, {Registry: "local", Repository: "127.0.0.1:5000/app", Digest: "sha512:" + strings.Repeat("f", 128)}}); err != nil {
		t.Fatalf("good images: %v", err)
	}
	many := make([]runnerv1.Image, maxImagesPerStep+1)
	for i := range many {
		many[i] = good
	}
	tags := make([]string, maxTagsPerImage+1)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	for _, c := range []struct {
		field string
		edit  func(*runnerv1.Image)
	}{
		{"images[1].registry", func(im *runnerv1.Image) { im.Registry = "" }},
		{"images[1].registry", func(im *runnerv1.Image) { im.Registry = "no/slash" }},
		{"images[1].repository", func(im *runnerv1.Image) { im.Repository = "app" }},
		{"images[1].repository", func(im *runnerv1.Image) { im.Repository = "https://ghcr.io/acme/app" }},
		{"images[1].repository", func(im *runnerv1.Image) { im.Repository = "ghcr.io/Acme/App" }},
		{"images[1].tags[1]", func(im *runnerv1.Image) { im.Tags = []string{"ok", "-bad"} }},
		{"images[1].tags[0]", func(im *runnerv1.Image) { im.Tags = []string{strings.Repeat("a", 129)} }},
		{"images[1].tags", func(im *runnerv1.Image) { im.Tags = tags }},
		{"images[1].digest", func(im *runnerv1.Image) { im.Digest = "" }},
		{"images[1].digest", func(im *runnerv1.Image) { im.Digest = "sha256:" + strings.Repeat("A", 64) }},
		{"images[1].digest", func(im *runnerv1.Image) { im.Digest = "md5:" + strings.Repeat("a", 32) }},
		{"images[1].size", func(im *runnerv1.Image) { im.Size = -1 }},
	} {
		bad := good
		c.edit(&bad)
		var fe *errdefs.FieldError
		if err := checkImages([]runnerv1.Image{good, bad}); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%+v: err = %v, want a field error on %s", bad, err, c.field)
		}
	}
	var fe *errdefs.FieldError
	if err := checkImages(many); !errors.As(err, &fe) || fe.Field != "images" {
		t.Errorf("%d images: %v", len(many), err)
	}
}
