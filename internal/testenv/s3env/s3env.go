// Package s3env gives Go tests a real S3-compatible server: MinIO's server, built from the Go
// module proxy by `make s3-server` (part of `make test-deps`) and cached outside the clone,
// started on a free port with a fresh data directory for each test.
//
//	srv := s3env.Start(t, s3env.Options{})   // 127.0.0.1:PORT
//	srv.Bucket(t, "artifacts")               // creates a bucket
//
// Environment: without the binary the test skips, saying how to build it, unless CI=true or
// FRESHET_TEST_S3=1, when it fails instead. FRESHET_TEST_S3_SERVER names another binary.
package s3env

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/freshet-dev/freshet/internal/testenv/proc"
)

// MinIOVersion is the version of github.com/minio/minio `make s3-server` installs (MinIO's
// RELEASE tags are not semantic versions: the proxy serves its commits as pseudo-versions). The
// Makefile's S3_SERVER_VERSION must be the same (TestMakefileVersion).
const MinIOVersion = "v0.0.0-20260212201848-7aac2a2c5b7c"

// Environment variables.
const (
	EnvRequire = "FRESHET_TEST_S3"
	EnvBinary  = "FRESHET_TEST_S3_SERVER"
	EnvCache   = "FRESHET_S3_CACHE"
)

// CacheDir is where `make s3-server` puts the binary: $FRESHET_S3_CACHE, else
// $XDG_CACHE_HOME/freshet/s3, else ~/.cache/freshet/s3, then minio-VERSION.
func CacheDir() string {
	root := os.Getenv(EnvCache)
	if root == "" {
		if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
			root = filepath.Join(d, "freshet", "s3")
		} else if home, err := os.UserHomeDir(); err == nil {
			root = filepath.Join(home, ".cache", "freshet", "s3")
		}
	}
	return filepath.Join(root, "minio-"+MinIOVersion)
}

// Binary is the server binary the tests run.
func Binary() string {
	if b := os.Getenv(EnvBinary); b != "" {
		return b
	}
	return filepath.Join(CacheDir(), "minio")
}

// Options shape a server.
type Options struct {
	// Host is the address it listens on (127.0.0.1 when empty); a real node's pods reach the
	// host at the node's address on its bridge.
	Host string
}

// Server is a running S3-compatible server.
type Server struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Dir       string
}

// Client returns a client of the server (plain HTTP).
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Secure: false})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket creates a bucket.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
}

// Start runs the server until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin := Binary()
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("%s is absent: build MinIO's server with `make s3-server` (or `make test-deps`; once per machine, cached outside the clone) or point %s at an S3-compatible server binary with MinIO's command line", bin, EnvBinary)
		if os.Getenv("CI") == "true" || os.Getenv(EnvRequire) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := freePort(t, host)
	s := &Server{Endpoint: net.JoinHostPort(host, strconv.Itoa(port)), AccessKey: "freshet-test",
		SecretKey: "s3cret-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36), Dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "server", filepath.Join(s.Dir, "data"), "--quiet",
		"--address", s.Endpoint, "--console-address", net.JoinHostPort(host, strconv.Itoa(freePort(t, host))))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+s.AccessKey, "MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CONFIG_ENV_FILE=", "HOME="+s.Dir)
	var out proc.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + s.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-done:
			t.Fatalf("s3 server exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("s3 server not ready after 60s: %v; output: %s", err, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t testing.TB, host string) int {
	if host == "127.0.0.1" {
		return proc.FreePort(t)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
