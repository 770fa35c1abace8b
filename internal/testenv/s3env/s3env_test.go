package s3env_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/freshet-dev/freshet/internal/testenv/s3env"
)

// TestMakefileVersion: `make s3-server` installs the version the helper looks for.
func TestMakefileVersion(t *testing.T) {
	b, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^S3_SERVER_VERSION \?= (\S+)$`).FindSubmatch(b)
	if m == nil || string(m[1]) != s3env.MinIOVersion {
		t.Fatalf("the Makefile's S3_SERVER_VERSION is %q, s3env.MinIOVersion %q", m, s3env.MinIOVersion)
	}
}

// TestStart starts the server and stores an object in a bucket, with its credentials only.
func TestStart(t *testing.T) {
	srv := s3env.Start(t, s3env.Options{})
	if !strings.HasPrefix(srv.Endpoint, "127.0.0.1:") {
		t.Fatal(srv.Endpoint)
	}
	srv.Bucket(t, "bkt")
	ctx := context.Background()
	c := srv.Client(t)
	if _, err := c.PutObject(ctx, "bkt", "k", bytes.NewReader([]byte("v")), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	anon, err := minio.New(srv.Endpoint, &minio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.StatObject(ctx, "bkt", "k", minio.StatObjectOptions{}); err == nil {
		t.Fatal("anonymous access allowed")
	}
}
