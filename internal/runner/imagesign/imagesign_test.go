package imagesign_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/freshet-dev/freshet/internal/runner/executor"
	"github.com/freshet-dev/freshet/internal/runner/imagesign"
	"github.com/freshet-dev/freshet/internal/testenv/containers"
)

func TestMain(m *testing.M) { containers.Main(m) }

// keyPair makes a key pair as `cosign generate-key-pair` does: an ECDSA P-256 key, encrypted
// (ENCRYPTED SIGSTORE PRIVATE KEY) with password when it is not empty.
func keyPair(t *testing.T, password string) (priv, pub []byte) {
	t.Helper()
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(password)))
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// TestSignInRegistry pushes an image to the loopback registry, signs it twice (an encrypted
// cosign key, then a plain PKCS#8 one), and verifies both signatures as cosign verify --key
// does: the signature image at sha256-<hex>.sig, each layer a simple-signing payload naming the
// image's digest, its signature (annotation) checked with sigstore's verifier against the
// public key.
func TestSignInRegistry(t *testing.T) {
	reg := containers.Registry(t)
	ctx := context.Background()
	opts := executor.RemoteOptions(ctx, executor.Registry{Name: "loopback", URL: reg.Addr, Username: reg.Username, Password: reg.Password, CA: string(reg.CACert)})
	img, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	repo := reg.Ref(fmt.Sprintf("imagesign-test/app-%d", time.Now().UnixNano()))
	tag, _ := name.NewTag(repo + ":v1")
	if err := remote.Write(tag, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	digest, _ := name.NewDigest(repo + "@" + d.String())

	encPriv, encPub := keyPair(t, "s3cret")
	signer, err := imagesign.LoadKey(encPriv, []byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	sigTag, err := imagesign.Sign(ctx, digest, signer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if want := repo + ":sha256-" + d.Hex + ".sig"; sigTag.String() != want {
		t.Errorf("signature tag %s, want %s", sigTag, want)
	}
	// A second key (plain PKCS#8, not encrypted) adds a signature; the first stays.
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := cryptoutils.MarshalPrivateKeyToPEM(ec)
	if err != nil {
		t.Fatal(err)
	}
	plainPub, err := cryptoutils.MarshalPublicKeyToPEM(ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	signer2, err := imagesign.LoadKey(der, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := imagesign.Sign(ctx, digest, signer2, opts...); err != nil {
		t.Fatal(err)
	}

	// The signature image is as cosign writes it: an OCI manifest whose layers are the
	// payloads, each with its signature.
	m := manifest(t, sigTag, opts)
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 2 {
		t.Fatalf("signature image %s / %s with %d layers", m.MediaType, m.Config.MediaType, len(m.Layers))
	}
	for _, l := range m.Layers {
		if l.MediaType != imagesign.PayloadMediaType || l.Annotations[imagesign.SignatureAnnotation] == "" {
			t.Errorf("layer %s (%v)", l.MediaType, l.Annotations)
		}
	}
	for _, pub := range [][]byte{encPub, plainPub} {
		if n, err := imagesign.Verify(ctx, digest, publicKey(t, pub), opts...); n != 1 || err != nil {
			t.Errorf("Verify: %d signatures, %v; want 1", n, err)
		}
	}
	// Another key verifies nothing, nor does the signature of another image.
	_, otherPub := keyPair(t, "")
	if n, err := imagesign.Verify(ctx, digest, publicKey(t, otherPub), opts...); n != 0 || err == nil {
		t.Errorf("Verify with another key: %d, %v", n, err)
	}
	img2, _ := random.Image(64, 1)
	tag2, _ := name.NewTag(repo + ":v2")
	if err := remote.Write(tag2, img2, opts...); err != nil {
		t.Fatal(err)
	}
	d2, _ := img2.Digest()
	digest2, _ := name.NewDigest(repo + "@" + d2.String())
	sigTag2, _ := imagesign.SignatureTag(digest2)
	// A copy of the first image's signatures under the second image's tag does not verify it.
	sigImg, err := remote.Image(sigTag, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(sigTag2, sigImg, opts...); err != nil {
		t.Fatal(err)
	}
	if n, err := imagesign.Verify(ctx, digest2, publicKey(t, encPub), opts...); n != 0 || err == nil || !strings.Contains(err.Error(), "the payload names") {
		t.Errorf("Verify of a copied signature: %d, %v", n, err)
	}
}

func manifest(t *testing.T, tag name.Tag, opts []remote.Option) *v1.Manifest {
	t.Helper()
	img, err := remote.Image(tag, opts...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func publicKey(t *testing.T, pemText []byte) crypto.PublicKey {
	t.Helper()
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemText)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestLoadKeyRefuses: what cannot sign is refused with ErrKey and a reason.
func TestLoadKeyRefuses(t *testing.T) {
	enc, pub := keyPair(t, "right")
	for _, tc := range []struct {
		name     string
		key, pwd []byte
		want     string
	}{
		{"not PEM", []byte("${{COSIGN_PRIVATE_KEY}}"), nil, "not a PEM private key"},
		{"no password", enc, nil, "give its password in COSIGN_PASSWORD"},
		{"wrong password", enc, []byte("wrong"), "cannot be opened with COSIGN_PASSWORD"},
		{"a public key", pub, nil, "unknown private key PEM file type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := imagesign.LoadKey(tc.key, tc.pwd)
			if !errors.Is(err, imagesign.ErrKey) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("LoadKey: %v, want ErrKey with %q", err, tc.want)
			}
		})
	}
}

// FuzzLoadKey: a key from a secret context is untrusted text; LoadKey never panics, and a key
// it accepts signs.
func FuzzLoadKey(f *testing.F) {
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), []byte(""))
	f.Add([]byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\neyJrZGYiOnt9fQ==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), []byte("pw"))
	f.Fuzz(func(t *testing.T, key, password []byte) {
		s, err := imagesign.LoadKey(key, password)
		if err != nil {
			return
		}
		if _, err := s.SignMessage(bytes.NewReader([]byte("x"))); err != nil {
			t.Fatalf("accepted key does not sign: %v", err)
		}
	})
}

// TestLoadKeyEmptyPassword: cosign generate-key-pair with an empty password still writes an
// encrypted key; it opens without COSIGN_PASSWORD, and its signatures verify.
func TestLoadKeyEmptyPassword(t *testing.T) {
	priv, pub := keyPair(t, "")
	s, err := imagesign.LoadKey(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.SignMessage(bytes.NewReader([]byte("payload")))
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(publicKey(t, pub), crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader([]byte("payload"))); err != nil {
		t.Fatal(err)
	}
}
