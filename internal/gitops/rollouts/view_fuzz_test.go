package rollouts

import (
	"testing"
	"time"
)

// FuzzAnalysisView: any AnalysisRun JSON a user with access to the cluster can write is shown
// without a panic, and every list of the view is non-nil (the API sends [] rather than null).
func FuzzAnalysisView(f *testing.F) {
	f.Add(`{"metadata":{"name":"web-abc-2","labels":{"rollouts-pod-template-hash":"abc"}},"status":{"phase":"Running","startedAt":"2026-01-01T00:00:00Z",` +
		`"metricResults":[{"name":"ok","phase":"Running","count":2,"successful":2,"measurements":[{"phase":"Successful","value":"1","startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:00:01Z"}]}]}}`)
	f.Add(`{"status":{"metricResults":[{"measurements":[{"startedAt":"yesterday"}]}]}}`)
	f.Add(`{"status":{"metricResults":null}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, data string) {
		v := analysisView([]byte(data), time.Unix(0, 0))
		if v.Metrics == nil {
			t.Fatalf("metrics nil for %q", data)
		}
		for _, m := range v.Metrics {
			if m.Measurements == nil {
				t.Fatalf("measurements nil for %q", data)
			}
		}
	})
}
