// Command chart packages Freshet's Helm charts (charts/) and pushes them as OCI charts to a
// registry: `make chart`. With no --registry it starts (or reuses) the loopback registry of
// the project's ctrenv tool, so the target runs on a machine with nothing else set up.
//
//	go run ./hack/chart [--registry HOST[:PORT][/PATH]] [--version V] [--app-version V] [--out DIR]
//
// Credentials come from CHART_REGISTRY_USER and CHART_REGISTRY_PASSWORD, a CA to trust from
// --ca-file; --plain-http speaks HTTP.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/helmchart"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run() error {
	registry := flag.String("registry", "", "OCI registry and path to push to, HOST[:PORT][/PATH] (default: the loopback registry of ctrenv, path charts)")
	version := flag.String("version", "", "the charts' version (default: each Chart.yaml's)")
	appVersion := flag.String("app-version", "", "the charts' appVersion, the freshet image tag they default to (default: each Chart.yaml's)")
	out := flag.String("out", "dist/charts", "where the .tgz archives are written")
	caFile := flag.String("ca-file", "", "PEM CA certificates to trust for the registry, besides the system's")
	plainHTTP := flag.Bool("plain-http", false, "speak plain HTTP to the registry")
	ctrenv := flag.String("ctrenv", "hack/ctrenv/ctrenv", "the ctrenv tool, which starts the loopback registry when --registry is empty")
	registryName := flag.String("registry-name", "dev", "the loopback registry's ctrenv name")
	flag.Parse()

	opts := helmchart.PushOptions{Username: os.Getenv("CHART_REGISTRY_USER"), Password: os.Getenv("CHART_REGISTRY_PASSWORD"), PlainHTTP: *plainHTTP}
	base := strings.TrimPrefix(*registry, "oci://")
	if base == "" {
		ri, err := loopbackRegistry(*ctrenv, *registryName)
		if err != nil {
			return err
		}
		base = ri.Address + "/charts"
		opts.Username, opts.Password = ri.Username, ri.Password
		opts.PlainHTTP = !ri.TLS
		if ri.CAFile != "" && *caFile == "" {
			*caFile = ri.CAFile
		}
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return err
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--ca-file %s holds no PEM certificate", *caFile)
		}
		opts.HTTPClient = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	}
	for _, name := range helmchart.Names {
		ch, err := helmchart.Load(name)
		if err != nil {
			return err
		}
		archive, err := helmchart.Package(ch, *out, *version, *appVersion)
		if err != nil {
			return err
		}
		ref, digest, err := helmchart.Push(archive, base, opts)
		if err != nil {
			return err
		}
		fmt.Printf("%s → oci://%s@%s\n", archive, ref, digest)
	}
	fmt.Printf("Install with: helm install freshet oci://%s/freshet --version %s -f values.yaml\n", base, versionOf(*version))
	return nil
}

func versionOf(v string) string {
	if v == "" {
		ch, err := helmchart.Load(helmchart.Names[0])
		if err == nil {
			return ch.Metadata.Version
		}
	}
	return strings.TrimPrefix(v, "v")
}

// registryInfo is what `ctrenv registry up --json` prints.
type registryInfo struct {
	Address, Username, Password, CAFile string
	TLS                                 bool
}

func loopbackRegistry(tool, name string) (*registryInfo, error) {
	if _, err := os.Stat(tool); err != nil {
		return nil, fmt.Errorf("no --registry given and the ctrenv tool %s is not built (make %s), or set CHART_REGISTRY: %w", tool, tool, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, "registry", "up", "--name", name, "--json")
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s registry up: %w: %s", tool, err, strings.TrimSpace(stderr.String()))
	}
	var ri registryInfo
	if err := json.Unmarshal(outb, &ri); err != nil {
		return nil, fmt.Errorf("%s registry up --json: %w", tool, err)
	}
	if ri.Address == "" {
		return nil, errors.New("ctrenv registry up printed no address")
	}
	return &ri, nil
}
