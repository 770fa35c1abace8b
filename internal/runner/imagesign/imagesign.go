// Package imagesign signs images in a registry as cosign signs them with a key: a
// simple-signing payload naming the image's digest, signed with the key, stored in the same
// repository as an image tagged sha256-<hex>.sig whose layers are the payloads and whose layer
// annotations carry the signatures. `cosign verify --key` (with --insecure-ignore-tlog, since
// nothing is uploaded to a transparency log) accepts what it writes.
//
// Keyless signing (Fulcio certificates, Rekor transparency log) needs public services and is
// not done here.
package imagesign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Cosign's names for the parts of a signature image.
const (
	PayloadMediaType    types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation string          = "dev.cosignproject.cosign/signature"
	SignatureTagSuffix  string          = ".sig"
)

// ErrKey says the key cannot be used: not a PEM private key, encrypted without a password, a
// wrong password.
var ErrKey = errors.New("cosign key")

// LoadKey reads a PEM private key as cosign writes it (generate-key-pair: ENCRYPTED SIGSTORE
// PRIVATE KEY, or the older ENCRYPTED COSIGN PRIVATE KEY, opened with password) or a plain
// PKCS#8, EC or PKCS#1 private key, and returns a signer with the hash cosign uses for it.
func LoadKey(pemText, password []byte) (signature.SignerVerifier, error) {
	block, _ := pem.Decode(bytes.TrimSpace(pemText))
	if block == nil {
		return nil, fmt.Errorf("%w: not a PEM private key (-----BEGIN … PRIVATE KEY-----)", ErrKey)
	}
	encrypted := strings.HasPrefix(block.Type, "ENCRYPTED ")
	var pf cryptoutils.PassFunc
	if encrypted {
		// cosign generate-key-pair encrypts with an empty password too.
		pf = cryptoutils.StaticPasswordFunc(append([]byte{}, password...))
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemText, pf)
	switch {
	case err != nil && encrypted && len(password) == 0:
		return nil, fmt.Errorf("%w: the key is encrypted (%s): give its password in COSIGN_PASSWORD", ErrKey, block.Type)
	case err != nil && encrypted:
		return nil, fmt.Errorf("%w: the encrypted key cannot be opened with COSIGN_PASSWORD (a wrong password?): %v", ErrKey, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	return sv, nil
}

// SignatureTag is where cosign stores the signatures of image (repo@sha256:hex):
// repo:sha256-hex.sig.
func SignatureTag(image name.Digest) (name.Tag, error) {
	alg, hex, ok := strings.Cut(image.DigestStr(), ":")
	if !ok {
		return name.Tag{}, fmt.Errorf("%s has no digest", image)
	}
	return name.NewTag(image.Context().String() + ":" + alg + "-" + hex + SignatureTagSuffix)
}

// Sign signs image (by digest) with signer and stores the signature in the image's repository,
// next to the signatures already there. It returns the signature image's tag.
func Sign(ctx context.Context, image name.Digest, signer signature.Signer, opts ...remote.Option) (name.Tag, error) {
	tag, err := SignatureTag(image)
	if err != nil {
		return tag, err
	}
	body, err := payload.Cosign{Image: image}.MarshalJSON()
	if err != nil {
		return tag, err
	}
	sig, err := signer.SignMessage(bytes.NewReader(body))
	if err != nil {
		return tag, fmt.Errorf("sign %s: %w", image, err)
	}
	b64 := base64.StdEncoding.EncodeToString(sig)

	base, err := existing(tag, opts)
	if err != nil {
		return tag, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(body, PayloadMediaType),
		Annotations: map[string]string{SignatureAnnotation: b64},
		MediaType:   PayloadMediaType,
	})
	if err != nil {
		return tag, err
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return tag, fmt.Errorf("push the signature %s: %w", tag, err)
	}
	return tag, nil
}

// existing is the signature image at tag (its signatures are kept), or an empty OCI image.
func existing(tag name.Tag, opts []remote.Option) (v1.Image, error) {
	img, err := remote.Image(tag, opts...)
	if err == nil {
		return img, nil
	}
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == 404 {
		return mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), nil
	}
	return nil, fmt.Errorf("read the signatures %s: %w", tag, err)
}

// Verify checks the signatures stored for image as `cosign verify --key` does without a
// transparency log: every layer of the signature image is a simple-signing payload whose
// signature (the layer's annotation) verifies with pub and which names image's repository and
// digest. It returns how many signatures verified, and an error when none did.
func Verify(ctx context.Context, image name.Digest, pub crypto.PublicKey, opts ...remote.Option) (int, error) {
	tag, err := SignatureTag(image)
	if err != nil {
		return 0, err
	}
	img, err := remote.Image(tag, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return 0, fmt.Errorf("read the signatures %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, l := range m.Layers {
		if l.MediaType != PayloadMediaType {
			continue
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return n, err
		}
		body, err := readLayer(layer)
		if err != nil {
			return n, err
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
		if err != nil {
			errs = append(errs, fmt.Errorf("layer %s: the signature is not base64: %w", l.Digest, err))
			continue
		}
		if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
			errs = append(errs, fmt.Errorf("layer %s: %w", l.Digest, err))
			continue
		}
		var p payload.Cosign
		if err := p.UnmarshalJSON(body); err != nil {
			errs = append(errs, fmt.Errorf("layer %s: %w", l.Digest, err))
			continue
		}
		if p.Image.DigestStr() != image.DigestStr() || p.Image.Context().String() != image.Context().String() {
			errs = append(errs, fmt.Errorf("layer %s: the payload names %s, not %s", l.Digest, p.Image, image))
			continue
		}
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no signature of %s verifies with the key: %w", image, errors.Join(errs...))
	}
	return n, nil
}

// readLayer reads a signature layer (a small JSON payload, stored uncompressed).
func readLayer(l v1.Layer) ([]byte, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 1<<20))
}
