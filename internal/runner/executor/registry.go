package executor

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RegistryHost is the host[:port] of a registry URL: without a scheme and without the path
// prefix that names a namespace in it (Docker Hub's names are docker.io).
func RegistryHost(url string) string {
	u := strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://")
	host, _, _ := strings.Cut(u, "/")
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		return "docker.io"
	}
	return host
}

// RemoteOptions are the options with which the runner talks to reg itself (reads back what
// a push stored, writes an image index or a signature): its credentials and CA.
func RemoteOptions(ctx context.Context, reg Registry) []remote.Option {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if reg.CA != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AppendCertsFromPEM([]byte(reg.CA))
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var auth authn.Authenticator = authn.Anonymous
	if reg.Username != "" || reg.Password != "" {
		auth = &authn.Basic{Username: reg.Username, Password: reg.Password}
	}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(tr)}
}

// RemoteManifest reads the manifest of ref from its registry with reg's credentials and CA: its
// digest, and the size of its config and layers (compressed), which is what a push stored.
func RemoteManifest(ctx context.Context, ref string, reg Registry) (digest string, size int64, err error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", 0, err
	}
	desc, err := remote.Get(r, RemoteOptions(ctx, reg)...)
	if err != nil {
		return "", 0, err
	}
	img, err := desc.Image()
	if err != nil {
		return desc.Digest.String(), 0, nil
	}
	m, err := img.Manifest()
	if err != nil {
		return desc.Digest.String(), 0, nil
	}
	size = m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return desc.Digest.String(), size, nil
}

// DockerfileInstruction returns the line (1-based) and the text of the step'th instruction
// (1-based, as engines number build steps) of a Dockerfile, or 0 when there is no such
// instruction. Comments, blank lines and continuation lines are not instructions.
func DockerfileInstruction(content []byte, step int) (line int, text string) {
	if step <= 0 {
		return 0, ""
	}
	n, cont := 0, false
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		wasCont := cont
		cont = strings.HasSuffix(t, `\`)
		if wasCont || t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		n++
		if n == step {
			t = strings.Join(strings.Fields(strings.TrimSuffix(t, `\`)), " ")
			if len(t) > 200 {
				t = t[:200] + "…"
			}
			return line, t
		}
	}
	return 0, ""
}
