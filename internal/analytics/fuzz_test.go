package analytics

import (
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/api/runtimev1"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/images"
)

// FuzzDecodeGitOps: whatever a GitOps event's payload holds, decoding never panics, refuses with
// ErrBadEvent only, and what it accepts has its identity and the subject's account.
func FuzzDecodeGitOps(f *testing.F) {
	f.Add("freshet.acc_a.gitops.sync-finished", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","syncId":1,"phase":"Succeeded","startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:01:00Z","commit":{"time":"2025-12-31T00:00:00Z"}}`)
	f.Add("freshet.acc_a.gitops.health-changed", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","from":"Healthy","to":"Degraded","at":"2026-01-01T00:00:00Z"}`)
	f.Add("freshet.acc_a.gitops.health-changed", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","to":"Degraded"}`)
	f.Add("freshet.acc_b.gitops.sync-finished", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","finishedAt":"2026-01-01T00:01:00Z"}`)
	f.Add("freshet.acc_a.gitops.sync-finished", `{"syncId":"one"}`)
	f.Add("freshet.acc_a.gitops.sync-finished", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","syncId":2,"finishedAt":"2026-01-01T00:01:00Z","commits":{"kind":"range","truncated":true,"commits":[{"sha":"aa","author":"Ann","message":"PROJ-1 and #2","time":"2025-12-31T00:00:00Z"}]}}`)
	f.Add("freshet.acc_a.gitops.app-renamed", `{}`)
	f.Add("freshet", `null`)
	f.Add("freshet.acc_a.gitops.rollout-changed", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","namespace":"prod","rollout":"web","kind":"Aborted","at":"2026-01-01T00:00:00Z"}`)
	f.Add("freshet.acc_a.gitops.rollout-changed", `{"accountId":"acc_a","runtimeId":"rt_1","application":"web","kind":""}`)
	published := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, subject, payload string) {
		ev, err := decodeGitOps(subject, []byte(payload), published)
		if err != nil {
			if !errors.Is(err, ErrBadEvent) {
				t.Fatalf("refused with %v, not ErrBadEvent", err)
			}
			return
		}
		account := bus.SubjectAccount(subject)
		switch {
		case ev.sync != nil:
			if ev.sync.AccountID != account || ev.sync.RuntimeID == "" || ev.sync.Application == "" || ev.sync.FinishedAt.IsZero() {
				t.Fatalf("accepted a sync without identity: %+v", ev.sync)
			}
			// What a deployment stores of the commits is bounded, whatever the event says.
			if cr := commitRange(ev.sync.Commits); cr != nil {
				if len(cr.Commits) > runtimev1.MaxSyncCommits {
					t.Fatalf("stores %d commits", len(cr.Commits))
				}
				for _, c := range cr.Commits {
					if len(c.Author) > runtimev1.MaxCommitAuthorBytes || len(c.Message) > runtimev1.MaxCommitMessageBytes || len(c.Issues) > images.MaxKeys {
						t.Fatalf("stores commit %+v", c)
					}
				}
			}
		case ev.health != nil:
			if ev.health.AccountID != account || ev.health.RuntimeID == "" || ev.health.Application == "" || ev.health.To == "" || ev.health.At.IsZero() {
				t.Fatalf("accepted a transition without identity: %+v", ev.health)
			}
		case ev.rollout != nil:
			if ev.rollout.AccountID != account || ev.rollout.RuntimeID == "" || ev.rollout.Application == "" || ev.rollout.Kind == "" || ev.rollout.At.IsZero() {
				t.Fatalf("accepted a rollout transition without identity: %+v", ev.rollout)
			}
		}
	})
}

// FuzzParseTime: refusals name the field; a duration ago is never after now, and an RFC 3339
// time is the instant it spells.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"30d", "2w", "36h", "90m", "2026-01-02T15:04:05Z", "2026-01-02T15:04:05.5+02:00", "", "-1d", "1e9d", "d"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime("since", s, now)
		if err != nil {
			if errdefs.Field(err) != "since" || !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("%q: refused with %v, not naming since", s, err)
			}
			return
		}
		if tm, perr := time.Parse(time.RFC3339Nano, s); perr == nil {
			if !got.Equal(tm) {
				t.Fatalf("%q = %v, want %v", s, got, tm)
			}
			return
		}
		if got.After(now) {
			t.Fatalf("%q = %v: after now", s, got)
		}
	})
}
