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
	f.Add(`{"metadata":{"name":"x","labels":{"a":"b"}},"spec":{"sources":[{"repoURL":"x"}]},"operation":{}}`)
	f.Add(`{"metadata":{"name":"x"},"operation":{"sync":{"revision":"main","prune":true,"syncOptions":["Replace=true"],"resources":[{"kind":"ConfigMap","name":"a"}],"syncStrategy":{"hook":{}}},"initiatedBy":{"username":"admin"}}}`)
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
		// The resource's operation request, as the runtime takes it.
		opData, _ := json.Marshal(map[string]any{"operation": u.Object["operation"]})
		rec := &crOp{raw: runtimeCopy(u.Object["operation"]), requested: time.Unix(0, 0)}
		if _, err := app.DecodeOperation(opData); err != nil {
			rec.phase, rec.message = "Error", err.Error()
		}
		st := &engine.AppStatus{Name: u.GetName(), Sync: engine.Unknown,
			Operation: &engine.SyncResult{Revision: "a,b", Phase: engine.PhaseSucceeded, InitiatedBy: engine.InitiatedByUser, StartedAt: time.Unix(1, 0)}}
		x := statusExtras{op: rec, historyLimit: 1, history: []engine.HistoryEntry{{ID: 1, Phase: engine.PhaseSucceeded}, {ID: 2, Phase: engine.PhaseFailed}}}
		for _, s := range []*engine.AppStatus{nil, st} {
			if _, err := json.Marshal(argoStatus(s, problem{msg: msg, since: time.Unix(0, 0)}, time.Unix(1, 0), x)); err != nil {
				t.Fatalf("status does not encode: %v", err)
			}
		}
	})
}
