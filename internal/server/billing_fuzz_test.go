package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/freshet-dev/freshet/api/appproxyv1"
	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// FuzzAppProxyCreatedName: the body of a create through a runtime's app-proxy (any caller's)
// is read for the name of what it creates before it is forwarded. Properties: no panic; the
// forwarded body is the body received, byte for byte; whenever the runtime's own decoder
// accepts the body (app.DecodeApplication, the cluster credential's strict JSON), the name
// found is the one the runtime will report.
func FuzzAppProxyCreatedName(f *testing.F) {
	f.Add(true, []byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  project: default\n  source: {repoURL: 'https://git.example/a.git', path: apps}\n  destination: {server: 'https://kubernetes.default.svc', namespace: web}\n"))
	f.Add(true, []byte(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"api"}}`))
	f.Add(true, []byte("metadata: &a {name: x}\nspec: *a\n"))
	f.Add(false, []byte(`{"name":"prod","server":"https://10.0.0.1:6443","token":"t"}`))
	f.Add(false, []byte(`{"name":1}`))
	f.Fuzz(func(t *testing.T, application bool, body []byte) {
		kind := rbac.KindClusters
		if application {
			kind = rbac.KindApplications
		}
		r, _ := http.NewRequest(http.MethodPost, "http://cp/runtimes/edge/app-proxy/api/v1/applications", bytes.NewReader(body))
		head, err := peekBody(r, 64)
		if err != nil {
			t.Fatal(err)
		}
		if len(head) > 64 || !bytes.HasPrefix(body, head) {
			t.Fatalf("peeked %q of %q", head, body)
		}
		forwarded, _ := io.ReadAll(r.Body)
		if !bytes.Equal(forwarded, body) {
			t.Fatalf("forwarded %q; received %q", forwarded, body)
		}
		name := createdName(kind, body)
		if application {
			if a, err := app.DecodeApplication(body); err == nil && a.Metadata.Name != name {
				t.Fatalf("the runtime names the application %q; the limit reserved %q", a.Metadata.Name, name)
			}
			return
		}
		var c appproxyv1.ClusterCredential
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if dec.Decode(&c) == nil && c.Name != name {
			t.Fatalf("the runtime names the cluster %q; the limit reserved %q", c.Name, name)
		}
	})
}
