package helmreleases

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
)

// encode writes a release as Helm's secret driver does: base64 of gzip of JSON.
func encode(t testing.TB, v any, zip bool) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if zip {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write(raw)
		_ = w.Close()
		raw = b.Bytes()
	}
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

func sampleRelease() *release.Release {
	at := helmtime.Time{Time: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	return &release.Release{Name: "web", Namespace: "shop", Version: 3,
		Info:  &release.Info{Status: release.StatusDeployed, LastDeployed: at, FirstDeployed: at, Description: "Upgrade complete"},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "nginx", Version: "1.2.3", AppVersion: "1.27.0", APIVersion: "v2"}}}
}

func TestDecode(t *testing.T) {
	for _, zip := range []bool{true, false} {
		rv, err := Decode(encode(t, sampleRelease(), zip))
		if err != nil {
			t.Fatalf("zip=%v: %v", zip, err)
		}
		if rv.Name != "web" || rv.Namespace != "shop" || rv.Revision != 3 || rv.Status != "deployed" || rv.Chart != "nginx" ||
			rv.ChartVersion != "1.2.3" || rv.AppVersion != "1.27.0" || rv.Description != "Upgrade complete" ||
			!rv.Updated.Equal(time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("zip=%v: got %+v", zip, rv)
		}
	}
}

func TestDecodeBad(t *testing.T) {
	noInfo := sampleRelease()
	noInfo.Info = nil
	noVersion := sampleRelease()
	noVersion.Version = 0
	// A gzip bomb: far more than MaxDecodedBytes of zeros, a few KB compressed.
	var bomb bytes.Buffer
	w, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range (MaxDecodedBytes >> 20) + 2 {
		_, _ = w.Write(zeros)
	}
	_ = w.Close()
	cases := map[string]struct {
		data []byte
		want string
	}{
		"empty":      {nil, "empty"},
		"not base64": {[]byte("%%%"), "not base64"},
		"bad gzip":   {[]byte(base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 0x08, 0, 1, 2})), "gzip"},
		"not json":   {[]byte(base64.StdEncoding.EncodeToString([]byte("hello"))), "not a Helm release"},
		"no name":    {encode(t, map[string]any{"namespace": "a", "version": 1, "info": map[string]any{}}, true), "not a release name"},
		"no info":    {encode(t, noInfo, true), "no info"},
		"no version": {encode(t, noVersion, true), "not a revision"},
		"bomb":       {[]byte(base64.StdEncoding.EncodeToString(bomb.Bytes())), "decompressed"},
		"too large":  {bytes.Repeat([]byte("A"), MaxEncodedBytes+4), "encoded"},
	}
	for name, c := range cases {
		_, err := Decode(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
}

// FuzzDecodeRelease: a release Secret's value is written by whoever runs helm in the cluster;
// decoding never panics, and what decodes is bounded.
func FuzzDecodeRelease(f *testing.F) {
	f.Add(encode(f, sampleRelease(), true))
	f.Add(encode(f, sampleRelease(), false))
	f.Add([]byte(base64.StdEncoding.EncodeToString([]byte{0x1f, 0x8b, 0x08})))
	f.Add([]byte("e30="))
	f.Fuzz(func(t *testing.T, data []byte) {
		rv, err := Decode(data)
		if err != nil {
			return
		}
		if rv.Revision < 1 || rv.Name == "" || rv.Namespace == "" || len(rv.Description) > maxText || len(rv.Chart) > maxText {
			t.Fatalf("decoded an invalid revision: %+v", rv)
		}
	})
}
