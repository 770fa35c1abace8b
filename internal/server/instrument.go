package server

import (
	"bufio"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/freshet-dev/freshet/internal/api/httpx"
)

// instrumentation records Prometheus metrics and an access log line for each request.
type instrumentation struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	log      *slog.Logger
}

func newInstrumentation(reg *prometheus.Registry, log *slog.Logger) *instrumentation {
	i := &instrumentation{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "freshet_http_requests_total", Help: "HTTP requests by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "freshet_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
		log: log,
	}
	reg.MustRegister(i.requests, i.duration)
	return i
}

// wrap must sit directly around the ServeMux: the mux sets r.Pattern on the request it is given.
func (i *instrumentation) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rw, r)
		d := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		i.requests.WithLabelValues(route, r.Method, strconv.Itoa(rw.status)).Inc()
		i.duration.WithLabelValues(route, r.Method).Observe(d.Seconds())
		level := slog.LevelInfo
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics" {
			level = slog.LevelDebug
		}
		i.log.Log(r.Context(), level, "http", "method", r.Method, "path", r.URL.Path, "status", rw.status,
			"bytes", rw.bytes, "duration_ms", float64(d.Microseconds())/1000, "request_id", httpx.RequestID(r.Context()),
			"remote", httpx.ClientIP(r))
	})
}

type statusWriter struct {
	http.ResponseWriter
	status      int
	bytes       int
	wroteHeader bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Flush lets streaming responses (SSE) through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack lets WebSocket upgrades through.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijack not supported")
	}
	return h.Hijack()
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
