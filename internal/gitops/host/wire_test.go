package host

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
	"github.com/freshet-dev/freshet/internal/gitops/providers"
	"github.com/freshet-dev/freshet/internal/testenv/fill"
)

// The API answers the engine's values mapped to api/appproxyv1's types: their JSON must be
// the engine's, byte for byte, so that nothing is dropped or renamed on the way. Every field of
// the engine's values is set (fill), so a field the mapping forgets shows here.
func TestWireJSON(t *testing.T) {
	app := fill.Value[Application]()
	tree := fill.Value[[]*engine.TreeNode]()
	rollback := fill.Value[engine.RollbackResult]()
	gs := fill.Value[GitSource]()
	for _, tc := range []struct {
		name         string
		engine, wire any
	}{
		{"Application", app, wireApplication(app)},
		{"Application without a spec", Application{Name: "x"}, wireApplication(Application{Name: "x"})},
		{"AppStatus", app.Status, wireStatus(app.Status)},
		{"SyncResult", app.Status.Operation, wireSync(app.Status.Operation)},
		{"no SyncResult", (*engine.SyncResult)(nil), wireSync(nil)},
		{"RollbackResult", rollback, wireRollback(&rollback)},
		{"HistoryEntry", rollback.Entry, wireHistoryEntry(rollback.Entry)},
		{"TreeNode", tree, wireTree(tree)},
		{"ResourceDetail", fill.Value[engine.ResourceDetail](), wireResource(ptr(fill.Value[engine.ResourceDetail]()))},
		{"ResourceEvent", fill.Value[[]engine.ResourceEvent](), wireEvents(fill.Value[[]engine.ResourceEvent]())},
		{"ResourceDiff", fill.Value[[]engine.ResourceDiff](), wireDiffs(fill.Value[[]engine.ResourceDiff]())},
		{"GitSource", gs, wireGitSource(&gs)},
		{"ProviderRepo", fill.Value[[]providers.Repo](), wireRepos(fill.Value[[]providers.Repo]())},
		{"Cluster", fill.Value[[]engine.ClusterRef](), wireClusters(fill.Value[[]engine.ClusterRef]())},
	} {
		want, err := json.Marshal(tc.engine)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(tc.wire)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			from := max(0, i-80)
			t.Errorf("%s: the API's JSON differs from the engine's at byte %d:\napi:    …%s\nengine: …%s", tc.name, i, got[from:min(len(got), i+80)], want[from:min(len(want), i+80)])
		}
	}
	// Empty lists are [] on the wire, not null.
	for name, v := range map[string]any{"tree": items(wireTree(nil)), "history": items(wireHistory(nil)), "diff": items(wireDiffs(nil)), "events": items(wireEvents(nil)),
		"repos": items(wireRepos(nil)), "clusters": items(wireClusters(nil)), "apps": items(wireApplications(nil)), "sources": items(wireGitSources(nil))} {
		if b, _ := json.Marshal(v); string(b) != `{"items":[]}` {
			t.Errorf("empty %s: %s", name, b)
		}
	}
}

func ptr[T any](v T) *T { return &v }
