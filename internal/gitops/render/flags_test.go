package render_test

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/gitops/render"
)

func TestBindFlags(t *testing.T) {
	var ro render.Options
	var gops git.Options
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	ro.BindFlags(fs)
	gops.BindFlags(fs)
	if err := fs.Parse([]string{"--render-timeout=5s", "--render-max-objects=7", "--git-refs-ttl=1m", "--git-push-attempts=2"}); err != nil {
		t.Fatal(err)
	}
	if ro.Timeout != 5*time.Second || ro.MaxObjects != 7 || ro.MaxFileBytes != render.DefaultMaxFileBytes {
		t.Errorf("render options = %+v", ro)
	}
	if gops.RefsTTL != time.Minute || gops.PushAttempts != 2 || gops.Timeout != git.DefaultTimeout {
		t.Errorf("git options = %+v", gops)
	}
	if err := ro.Validate(); err != nil {
		t.Error(err)
	}
	if err := gops.Validate(); err != nil {
		t.Error(err)
	}
}
