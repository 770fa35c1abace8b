package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fileEntry is one entry of a layer: a directory, a regular file or a symlink.
type fileEntry struct {
	Path     string // relative, no leading slash
	Type     byte   // tar.TypeDir, tar.TypeReg, tar.TypeSymlink
	Mode     int64
	UID, GID int
	Data     []byte
	Link     string
}

func dir(p string, mode int64) fileEntry { return fileEntry{Path: p, Type: tar.TypeDir, Mode: mode} }
func file(p string, mode int64, data []byte) fileEntry {
	return fileEntry{Path: p, Type: tar.TypeReg, Mode: mode, Data: data}
}
func symlink(p, target string) fileEntry {
	return fileEntry{Path: p, Type: tar.TypeSymlink, Mode: 0o777, Link: target}
}

// whiteout deletes p (from a lower layer) in the layer that carries it, as the OCI image
// spec defines: an empty file named .wh.<base> beside it.
func whiteout(p string) fileEntry {
	return file(path.Join(path.Dir(p), ".wh."+path.Base(p)), 0o644, nil)
}

// layerEpoch is every entry's modification time: layers are byte-for-byte reproducible.
var layerEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// layerTar writes entries as a tar archive, sorted by path (parents before children), with
// fixed times and no user or group names.
func layerTar(entries []fileEntry) ([]byte, error) {
	es := slices.Clone(entries)
	slices.SortStableFunc(es, func(a, b fileEntry) int { return strings.Compare(a.Path, b.Path) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, e := range es {
		if i > 0 && es[i-1].Path == e.Path {
			return nil, fmt.Errorf("layer: %s twice", e.Path)
		}
		h := &tar.Header{Name: e.Path, Typeflag: e.Type, Mode: e.Mode, Uid: e.UID, Gid: e.GID, ModTime: layerEpoch, Linkname: e.Link}
		switch e.Type {
		case tar.TypeDir:
			h.Name += "/"
		case tar.TypeReg:
			h.Size = int64(len(e.Data))
		case tar.TypeSymlink:
		default:
			return nil, fmt.Errorf("layer: %s: unsupported type %q", e.Path, e.Type)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if e.Type == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// newLayer is a gzip-compressed OCI layer of entries. Small layers are compressed hardest;
// a layer of tens of megabytes (the freshet binary) at gzip's default level, several times
// faster for a few percent more bytes.
func newLayer(entries []fileEntry) (v1.Layer, error) {
	raw, err := layerTar(entries)
	if err != nil {
		return nil, err
	}
	level := gzip.BestCompression
	if len(raw) > 16<<20 {
		level = gzip.DefaultCompression
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, level)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	b := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// layerSpec is a layer and the history entry that says what it is.
type layerSpec struct {
	layer     v1.Layer
	createdBy string
}

// newImage assembles an OCI image from layers and a container configuration.
func newImage(platform v1.Platform, created time.Time, layers []layerSpec, cfg v1.Config) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	var adds []mutate.Addendum
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{Layer: l.layer, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: created}, CreatedBy: l.createdBy, Comment: "ctrenv"}})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// elfArch is the GOARCH of an ELF executable (so an image says what its binary runs on).
func elfArch(p string) (string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_386:
		return "386", nil
	case elf.EM_ARM:
		return "arm", nil
	case elf.EM_PPC64:
		return "ppc64le", nil
	case elf.EM_S390:
		return "s390x", nil
	case elf.EM_RISCV:
		return "riscv64", nil
	}
	return "", fmt.Errorf("%s: unknown ELF machine %v", p, f.Machine)
}

// pushTarget is where and how to push: the credentials and the CA of a registry.
type pushTarget struct {
	auth authn.Authenticator // nil: from the keychain (~/.docker/config.json, auth.json)
	ca   []byte              // PEM; nil: the system's roots
}

func (t pushTarget) options(ctx context.Context) ([]remote.Option, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if t.ca != nil {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(t.ca) {
			return nil, fmt.Errorf("the registry CA is not PEM")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithUserAgent("freshet-ctrenv")}
	if t.auth != nil {
		opts = append(opts, remote.WithAuth(t.auth))
	} else {
		opts = append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	return opts, nil
}

// registryTarget is the push target of a ctrenv registry instance.
func registryTarget(r *registry) (pushTarget, error) {
	t := pushTarget{auth: &authn.Basic{Username: r.st.Username, Password: r.st.Password}}
	if r.st.TLS {
		ca, err := os.ReadFile(r.caFile())
		if err != nil {
			return t, err
		}
		t.ca = ca
	}
	return t, nil
}

// pushIfChanged pushes img to ref unless the registry already has exactly that manifest
// there. It reports whether it pushed.
func pushIfChanged(ref name.Reference, img remote.Taggable, digest v1.Hash, opts []remote.Option) (bool, error) {
	if d, err := remote.Head(ref, opts...); err == nil && d.Digest == digest {
		return false, nil
	}
	var err error
	switch x := img.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(ref, x, opts...)
	case v1.Image:
		err = remote.Write(ref, x, opts...)
	default:
		err = fmt.Errorf("cannot push %T", img)
	}
	if err != nil {
		return false, fmt.Errorf("push %s: %w", ref, err)
	}
	return true, nil
}
