package helmchart

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Package writes ch as NAME-VERSION.tgz into dir, with version and appVersion when they are
// given (a release's), like `helm package --version V --app-version A`, and returns the
// archive's path.
func Package(ch *chart.Chart, dir, version, appVersion string) (string, error) {
	if version != "" {
		v := strings.TrimPrefix(version, "v")
		ch.Metadata.Version = v
	}
	if appVersion != "" {
		ch.Metadata.AppVersion = appVersion
	}
	if err := ch.Validate(); err != nil {
		return "", errdefs.Invalid("version", ch.Metadata.Version, err.Error())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		return "", fmt.Errorf("package %s: %w", ch.Name(), err)
	}
	return p, nil
}

// PushOptions reach an OCI registry.
type PushOptions struct {
	// HTTPClient carries the registry's TLS trust (nil: the system's).
	HTTPClient *http.Client
	// Username and Password log in (empty: anonymous).
	Username, Password string
	// PlainHTTP speaks HTTP, not HTTPS (a loopback registry without TLS).
	PlainHTTP bool
}

// Push pushes the chart archive at archive to the OCI repository base (HOST[:PORT]/PATH, no
// scheme), as `helm push archive oci://base` does: the chart lands at base/NAME:VERSION. It
// returns the reference pushed and its manifest digest.
func Push(archive, base string, o PushOptions) (ref, digest string, err error) {
	data, err := os.ReadFile(archive)
	if err != nil {
		return "", "", err
	}
	ch, err := loadArchive(data)
	if err != nil {
		return "", "", err
	}
	// Helm keeps its logins in a credentials file; use an empty one of our own, never the
	// user's ~/.config/helm.
	tmp, err := os.MkdirTemp("", "freshet-chart-push-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	creds := filepath.Join(tmp, "registry.json")
	if err := os.WriteFile(creds, []byte("{}"), 0o600); err != nil {
		return "", "", err
	}
	opts := []registry.ClientOption{registry.ClientOptCredentialsFile(creds)}
	if o.HTTPClient != nil {
		opts = append(opts, registry.ClientOptHTTPClient(o.HTTPClient))
	}
	if o.Username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(o.Username, o.Password))
	}
	if o.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return "", "", err
	}
	base = strings.TrimSuffix(strings.TrimPrefix(base, "oci://"), "/")
	ref = base + "/" + ch.Name() + ":" + ch.Metadata.Version
	res, err := rc.Push(data, ref)
	if err != nil {
		return "", "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, res.Manifest.Digest, nil
}
