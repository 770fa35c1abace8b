package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A follow outlasts an outage of any length: refused connections, 502/503s and streams cut
// mid-way, many more of them than the five retries it used to allow, and it still gets every
// byte once, in order.
func TestFollowLogOutlastsAnOutage(t *testing.T) {
	followFirstBackoff, followMaxBackoff = time.Millisecond, 5*time.Millisecond
	defer func() { followFirstBackoff, followMaxBackoff = 200*time.Millisecond, 5*time.Second }()

	const logText = "line 1\nline 2\nline 3\nline 4\n"
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		switch {
		case n <= 10: // the control plane is away; the proxy in front of it says so
			http.Error(w, "bad gateway", []int{http.StatusBadGateway, http.StatusServiceUnavailable}[n%2])
			return
		case n <= 14: // back, but the stream is cut after one line each time
			end := offset + 7
			writeEvent(w, "log", map[string]any{"offset": offset, "data": []byte(logText[offset:end])})
			return
		}
		writeEvent(w, "log", map[string]any{"offset": offset, "data": []byte(logText[offset:])})
		writeEvent(w, "end", map[string]any{"status": "success"})
	}))
	defer srv.Close()

	got, status := "", ""
	err := New(srv.URL).FollowLog(context.Background(), "bld_1", 0, func(ev LogEvent) error {
		if ev.Done {
			status = ev.Status
			return nil
		}
		if int(ev.Offset) != len(got) {
			return fmt.Errorf("chunk at %d, have %d bytes", ev.Offset, len(got))
		}
		got += string(ev.Data)
		return nil
	})
	if err != nil || got != logText || status != "success" {
		t.Fatalf("err %v, status %q, log %q", err, status, got)
	}
	if requests != 15 {
		t.Fatalf("%d requests, want 15", requests)
	}
}

// A 4xx other than 408/429 is an answer, not an outage: the follow stops at once with it.
func TestFollowLogStopsOnRefusal(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"build bld_x not found"}}`))
	}))
	defer srv.Close()
	err := New(srv.URL).FollowLog(context.Background(), "bld_x", 0, func(LogEvent) error { return nil })
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || requests != 1 {
		t.Fatalf("err %v after %d requests", err, requests)
	}
}

// A follow ends when its context does, also in the middle of an outage.
func TestFollowLogEndsWithItsContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := New(srv.URL).FollowLog(ctx, "bld_1", 0, func(LogEvent) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the context's", err)
	}
}

func writeEvent(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
}
