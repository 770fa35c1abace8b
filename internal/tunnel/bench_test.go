package tunnel_test

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkTunnelGET is a small GET through the tunnel, load generator and runtime included
// (allocations are the whole process's). go run ./internal/tunnel/bench compares it with direct.
func BenchmarkTunnelGET(b *testing.B) {
	c := newCP(b, nil)
	startRuntime(b, c, "token-a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from the runtime\n")
	}), nil)
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	url := c.url + "/runtimes/prod/hello"
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set(headerUser, "alice")
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
