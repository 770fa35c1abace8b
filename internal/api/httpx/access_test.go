package httpx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// tokens is an Authenticator over a table that tests change: token → principal or error.
type tokens struct {
	mu    sync.Mutex
	m     map[string]rbac.Principal
	err   map[string]error
	calls int
}

func (a *tokens) Authenticate(_ context.Context, tok string) (rbac.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if err := a.err[tok]; err != nil {
		return rbac.Principal{}, err
	}
	p, ok := a.m[tok]
	if !ok {
		return rbac.Principal{}, fmt.Errorf("invalid or expired credentials: %w", errdefs.ErrUnauthenticated)
	}
	return p, nil
}

func (a *tokens) resolved() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func (a *tokens) set(tok string, p rbac.Principal, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.err[tok] = err
		return
	}
	delete(a.err, tok)
	if p.AccountID == "" {
		delete(a.m, tok)
		return
	}
	a.m[tok] = p
}

var (
	alice = rbac.Principal{AccountID: "acc_a", UserID: "usr_alice", Role: rbac.Member}
	bob   = rbac.Principal{AccountID: "acc_a", UserID: "usr_bob", Role: rbac.Member}
)

// streamRequest is a request authenticated as p with tok, as Authenticate leaves it.
func streamRequest(ctx context.Context, tok string, p rbac.Principal) *http.Request {
	r := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/builds/b/logs?follow=1", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	return r.WithContext(WithPrincipal(r.Context(), p))
}

func newTokens() *tokens {
	return &tokens{m: map[string]rbac.Principal{"fsk_alice": alice, "fss_alice": alice, "fsk_bob": bob}, err: map[string]error{}}
}

// ended reports whether ctx ended, and why.
func ended(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return true, context.Cause(ctx)
	default:
		return false, nil
	}
}

// A revocation naming the stream's user ends it at once — and only its user's streams.
func TestAccessRevocationEndsStreamAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := newTokens()
		x := NewAccess(auth, 0, nil)
		aliceCtx, releaseA := x.Hold(streamRequest(t.Context(), "fsk_alice", alice), nil)
		defer releaseA()
		bobCtx, releaseB := x.Hold(streamRequest(t.Context(), "fsk_bob", bob), nil)
		defer releaseB()

		auth.set("fsk_alice", rbac.Principal{}, nil) // the key is revoked...
		x.Revoked("acc_a", "usr_alice")              // ...and identity says so
		synctest.Wait()
		if ok, cause := ended(aliceCtx); !ok || !errors.Is(cause, ErrAccessEnded) || !errors.Is(cause, errdefs.ErrUnauthenticated) {
			t.Fatalf("alice's stream after the revocation: ended %v, cause %v", ok, cause)
		}
		if ok, _ := ended(bobCtx); ok {
			t.Fatal("bob's stream ended with alice's revocation")
		}
		if n := auth.resolved(); n != 1 {
			t.Fatalf("%d credentials resolved, want alice's only", n)
		}
		// A revocation for another account checks nothing.
		x.Revoked("acc_b", "")
		synctest.Wait()
		if n := auth.resolved(); n != 1 {
			t.Fatalf("a revocation in another account re-checked %d credentials", n-1)
		}
	})
}

// Without an event, the periodic re-check ends a stream whose credential expired within one
// interval; a check that stops allowing the stream ends it too; a credential that now resolves
// to another account ends it.
func TestAccessRecheckIsTheBackstop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := newTokens()
		x := NewAccess(auth, 0, nil)
		start := time.Now()
		expiring, r1 := x.Hold(streamRequest(t.Context(), "fsk_alice", alice), nil)
		defer r1()
		var allowed sync.Mutex
		allow := true
		readable, r2 := x.Hold(streamRequest(t.Context(), "fsk_bob", bob), func(_ context.Context, p rbac.Principal) error {
			allowed.Lock()
			defer allowed.Unlock()
			if !allow {
				return fmt.Errorf("role %s: %w", p.Role, errdefs.ErrForbidden)
			}
			return nil
		})
		defer r2()
		switched, r3 := x.Hold(streamRequest(t.Context(), "fss_alice", alice), nil)
		defer r3()

		time.Sleep(AccessRecheckInterval + time.Millisecond)
		synctest.Wait()
		for name, ctx := range map[string]context.Context{"expiring": expiring, "readable": readable, "switched": switched} {
			if ok, cause := ended(ctx); ok {
				t.Fatalf("%s ended while access lasted: %v", name, cause)
			}
		}
		auth.set("fsk_alice", rbac.Principal{}, nil)                                        // expired
		auth.set("fss_alice", rbac.Principal{AccountID: "acc_b", UserID: "usr_alice"}, nil) // session switched account
		allowed.Lock()
		allow = false
		allowed.Unlock()
		<-expiring.Done()
		<-readable.Done()
		<-switched.Done()
		if took := time.Since(start); took > 2*AccessRecheckInterval+time.Millisecond {
			t.Fatalf("the streams ended after %s, want within 2 intervals of their start", took)
		}
		if cause := context.Cause(readable); !errors.Is(cause, errdefs.ErrForbidden) || !errors.Is(cause, ErrAccessEnded) {
			t.Fatalf("readable's cause: %v", cause)
		}
		if cause := context.Cause(switched); !errors.Is(cause, errdefs.ErrUnauthenticated) {
			t.Fatalf("switched's cause: %v", cause)
		}
	})
}

// A database that does not answer does not end streams at once, but a stream whose access
// cannot be checked for accessMaxUnconfirmed ends.
func TestAccessUnconfirmedStreamEndsAfterBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := newTokens()
		x := NewAccess(auth, 0, nil)
		start := time.Now()
		ctx, release := x.Hold(streamRequest(t.Context(), "fsk_alice", alice), nil)
		defer release()
		auth.set("fsk_alice", rbac.Principal{}, errors.New("database is down"))
		<-ctx.Done()
		took := time.Since(start)
		if took < accessMaxUnconfirmed || took > accessMaxUnconfirmed+AccessRecheckInterval {
			t.Fatalf("the unconfirmed stream ended after %s, want %s to %s", took, accessMaxUnconfirmed, accessMaxUnconfirmed+AccessRecheckInterval)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, errdefs.ErrUnavailable) {
			t.Fatalf("cause: %v", cause)
		}
	})
}

// Released holds are forgotten and the watch stops when none is left; anonymous requests and a
// nil Access watch nothing.
func TestAccessWatchStopsWithTheLastStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auth := newTokens()
		x := NewAccess(auth, 0, nil)
		_, r1 := x.Hold(streamRequest(t.Context(), "fsk_alice", alice), nil)
		_, r2 := x.Hold(streamRequest(t.Context(), "fsk_bob", bob), nil)
		if x.Held() != 2 {
			t.Fatalf("%d held", x.Held())
		}
		r1()
		r2()
		synctest.Wait()
		x.mu.Lock()
		running := x.running
		x.mu.Unlock()
		if x.Held() != 0 || running {
			t.Fatalf("after release: %d held, watch running %v", x.Held(), running)
		}
		anon := httptest.NewRequestWithContext(t.Context(), "GET", "/", nil)
		ctx, release := x.Hold(anon, nil)
		if x.Held() != 0 {
			t.Fatal("an anonymous request is held")
		}
		release()
		if ctx.Err() == nil {
			t.Fatal("release did not end the context")
		}
		var none *Access
		ctx, release = none.Hold(streamRequest(t.Context(), "fsk_alice", alice), nil)
		none.Revoked("acc_a", "")
		release()
		if ctx.Err() == nil {
			t.Fatal("release did not end the context of a nil Access")
		}
	})
}
