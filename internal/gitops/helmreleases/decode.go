// Package helmreleases reads Helm's release storage in the runtime's clusters, read-only, and
// reports each release with its revision history to the control plane
// (runtimev1.HelmReleaseChanged, HelmReleaseDeleted; docs/runtimes.md, "Helm releases").
//
// Helm 3 keeps one Secret per release revision, of type helm.sh/release.v1, labelled
// owner=helm, name=<release>, version=<revision>, status=<status>; its data key "release" is
// base64 of gzip of the release as JSON. Those Secrets are written by whoever runs helm in
// the cluster: the decoder treats them as untrusted input (bounded sizes, errors, no panics).
package helmreleases

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/freshet-dev/freshet/api/runtimev1"
)

// Limits of one release Secret.
const (
	// MaxEncodedBytes bounds the "release" value (a Secret holds at most 1 MiB).
	MaxEncodedBytes = 4 << 20
	// MaxDecodedBytes bounds the release's JSON after gunzip: a gzip bomb stops here.
	MaxDecodedBytes = 32 << 20
	// maxText bounds the strings kept of a release (names, versions, description).
	maxText = 1024
)

// SecretType is the type of Helm 3's release Secrets.
const SecretType = "helm.sh/release.v1"

// LabelSelector selects Helm's release Secrets.
const LabelSelector = "owner=helm"

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// release is the part of Helm's release JSON (helm.sh/helm/v3/pkg/release.Release) kept here.
type helmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   int    `json:"version"`
	Info      *struct {
		LastDeployed time.Time `json:"last_deployed"`
		Description  string    `json:"description"`
		Status       string    `json:"status"`
	} `json:"info"`
	Chart *struct {
		Metadata *struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		} `json:"metadata"`
	} `json:"chart"`
}

// Revision is one decoded release Secret: a revision of a release.
type Revision struct {
	Name, Namespace string
	runtimev1.HelmRevision
}

// Decode reads a release Secret's "release" value: base64 of (gzip of, as Helm writes it, or
// plain) JSON. It fails, saying why, on anything else, and never reads more than
// MaxDecodedBytes.
func Decode(data []byte) (Revision, error) {
	if len(data) == 0 {
		return Revision{}, errors.New("release: empty")
	}
	if len(data) > MaxEncodedBytes {
		return Revision{}, fmt.Errorf("release: %d bytes encoded, more than %d", len(data), MaxEncodedBytes)
	}
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(raw, bytes.TrimSpace(data))
	if err != nil {
		return Revision{}, fmt.Errorf("release: not base64: %w", err)
	}
	raw = raw[:n]
	if bytes.HasPrefix(raw, gzipMagic) {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return Revision{}, fmt.Errorf("release: gzip: %w", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxDecodedBytes+1))
		if err != nil {
			return Revision{}, fmt.Errorf("release: gzip: %w", err)
		}
		if len(out) > MaxDecodedBytes {
			return Revision{}, fmt.Errorf("release: more than %d bytes decompressed", MaxDecodedBytes)
		}
		raw = out
	}
	var rl helmRelease
	if err := json.Unmarshal(raw, &rl); err != nil {
		return Revision{}, fmt.Errorf("release: not a Helm release's JSON: %w", err)
	}
	switch {
	case rl.Name == "" || len(rl.Name) > 253 || hasControl(rl.Name):
		return Revision{}, fmt.Errorf("release: name %q is not a release name", clip(rl.Name))
	case rl.Namespace == "" || len(rl.Namespace) > 63 || hasControl(rl.Namespace):
		return Revision{}, fmt.Errorf("release %s: namespace %q is not a namespace name", rl.Name, clip(rl.Namespace))
	case rl.Version < 1:
		return Revision{}, fmt.Errorf("release %s: version %d is not a revision (1 or more)", rl.Name, rl.Version)
	case rl.Info == nil:
		return Revision{}, fmt.Errorf("release %s: no info (status)", rl.Name)
	}
	rv := Revision{Name: rl.Name, Namespace: rl.Namespace, HelmRevision: runtimev1.HelmRevision{Revision: rl.Version,
		Status: text(rl.Info.Status), Updated: rl.Info.LastDeployed.UTC(), Description: text(rl.Info.Description)}}
	if rv.Status == "" {
		rv.Status = "unknown"
	}
	if rl.Chart != nil && rl.Chart.Metadata != nil {
		m := rl.Chart.Metadata
		rv.Chart, rv.ChartVersion, rv.AppVersion = text(m.Name), text(m.Version), text(m.AppVersion)
	}
	return rv, nil
}

func hasControl(s string) bool { return strings.IndexFunc(s, unicode.IsControl) >= 0 }

// text keeps a reported string: control characters dropped, at most maxText bytes of valid
// UTF-8.
func text(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	return clip(s)
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return strings.ToValidUTF8(s[:maxText], "")
}
