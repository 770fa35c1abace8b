package host

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/freshet-dev/freshet/internal/gitops/app"
	"github.com/freshet-dev/freshet/internal/gitops/engine"
)

// FuzzClusterApplication feeds untrusted Application resources (what any user with rights on
// the namespace can apply) through the document the runtime decodes and the status it writes
// back: no panics; an accepted Application keeps the resource's name; the status encodes.
func FuzzClusterApplication(f *testing.F) {
	f.Add(`{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"ns","uid":"u","finalizers":["resources-finalizer.argocd.argoproj.io"]},"spec":{"project":"default","source":{"repoURL":"https://e.com/r.git","path":"web"},"destination":{"server":"https://kubernetes.default.svc","namespace":"ns"}},"status":{"sync":{"status":"Synced"}}}`)
	f.Add(`{"metadata":{"name":"x","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":[]}`)
	f.Add(`{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"sources":[{"repoURL":"x"}],"operation":{}}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var u unstructured.Unstructured
		if err := json.Unmarshal([]byte(in), &u.Object); err != nil || u.Object == nil {
			return
		}
		data, err := json.Marshal(cleanDoc(&u, app.KindApp))
		if err != nil {
			return
		}
		a, err := app.DecodeApplication(data)
		if err == nil && a.Metadata.Name != u.GetName() {
			t.Fatalf("decoded name %q from resource %q", a.Metadata.Name, u.GetName())
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		st := &engine.AppStatus{Name: u.GetName(), Sync: engine.Unknown}
		for _, s := range []*engine.AppStatus{nil, st} {
			if _, err := json.Marshal(argoStatus(s, problem{msg: msg, since: time.Unix(0, 0)}, time.Unix(1, 0))); err != nil {
				t.Fatalf("status does not encode: %v", err)
			}
		}
	})
}
