package tunnel

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzServeHop sends arbitrary hop requests (path, replica, time and signature headers) to the
// hop handler, which is mounted outside user authentication: nothing panics, and no request is
// let through (to a runtime lookup, answered 502) unless it carries this replica set's HMAC over
// what it asks for, made within the allowed clock skew. The seeds include correctly signed hops,
// so the fuzzer also mutates valid requests; a mutation must break the signature.
func FuzzServeHop(f *testing.F) {
	secret := []byte(strings.Repeat("k", MinHopSecret))
	s, err := NewServer(Options{
		Authenticate: func(context.Context, string) (Runtime, error) { return Runtime{}, errors.New("no") },
		Authorize:    func(*http.Request, Runtime) error { return errors.New("no") },
		Log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		ReplicaID:    "r2", HopSecret: secret,
	})
	if err != nil {
		f.Fatal(err)
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	sign := func(from, ts, method, id, target string) string {
		return hopSignature(secret, from, ts, method, id, target, http.Header{})
	}
	// A correctly signed hop gets past the check (to the lookup of a runtime this replica does
	// not hold): the property below is not vacuous.
	r := httptest.NewRequest("GET", DefaultHopPath+"rt1/api/v1/x?y=1", nil)
	r.Header.Set(headerHopFrom, "r1")
	r.Header.Set(headerHopTime, now)
	r.Header.Set(headerHopSig, sign("r1", now, "GET", "rt1", "/api/v1/x?y=1"))
	w := httptest.NewRecorder()
	s.serveHop(w, r)
	if w.Code != http.StatusBadGateway {
		f.Fatalf("a signed hop: status %d, want 502", w.Code)
	}
	f.Add("GET", "/rt1/api/v1/x?y=1", "r1", now, sign("r1", now, "GET", "rt1", "/api/v1/x?y=1"))
	f.Add("POST", "/rt%2F1/a", "r1", now, sign("r1", now, "POST", "rt/1", "/a"))
	f.Add("GET", "/rt1/", "r1", "0", sign("r1", "0", "GET", "rt1", "/"))
	f.Add("GET", "/", "", "", "")
	f.Add("GET", "/%zz/x", "r1", now, "00")
	f.Add("GET", "/rt1/x", "r1", "99999999999999999999", "")
	f.Fuzz(func(t *testing.T, method, path, from, ts, sig string) {
		if method == "" || strings.ContainsAny(method, " \t\r\n/") || strings.ContainsAny(path, " \t\r\n#") || strings.ContainsAny(from+ts+sig, "\r\n\x00") {
			return // not a request line or header net/http would deliver
		}
		r, err := http.NewRequest(method, "http://replica"+DefaultHopPath+strings.TrimPrefix(path, "/"), nil)
		if err != nil {
			return
		}
		r.Header.Set(headerHopFrom, from)
		r.Header.Set(headerHopTime, ts)
		r.Header.Set(headerHopSig, sig)
		w := httptest.NewRecorder()
		s.serveHop(w, r)
		if w.Code != http.StatusBadGateway {
			return // refused: forbidden, or no runtime in the path
		}
		// Let through to the runtime lookup: the signature must be right and fresh.
		after := strings.TrimPrefix(r.URL.EscapedPath(), DefaultHopPath)
		escID, escRest, _ := strings.Cut(after, "/")
		target := "/" + escRest
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery
		}
		id, _ := url.PathUnescape(escID)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > hopMaxSkew+time.Minute || sig != sign(from, ts, method, id, target) {
			t.Fatalf("%s %s from %q at %q signed %q was let through", method, path, from, ts, sig)
		}
	})
}
