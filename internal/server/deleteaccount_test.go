package server_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/server"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
)

// statusOf is the HTTP status of a client error (0 for none or another error).
func statusOf(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Status
	}
	return 0
}

// DELETE /api/v1/account deletes the caller's account and everything in it — its members'
// sessions and API keys stop working, its hosted runtime is stopped and its data removed —
// when an admin of it confirms with its name; a member is refused, a wrong name is a 400
// naming the field; another account is untouched; every attempt is audited.
func TestDeleteAccount(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dataDir := t.TempDir()
			s := servertest.StartWith(t, d, servertest.Config{Edit: func(o *server.Options) { o.DataDir = dataDir }})

			// Account A ("first"): the admin's project and API key.
			if _, err := s.Admin.CreateProject(ctx, "a-project"); err != nil {
				t.Fatal(err)
			}
			aKey, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "a-key", Role: "admin"})
			if err != nil {
				t.Fatal(err)
			}

			// Account B ("leaving"): the same admin in a second session, a member, a key, a
			// project and the hosted runtime.
			if _, err := s.Admin.CreateAccount(ctx, "leaving"); err != nil {
				t.Fatal(err)
			}
			bAdmin := s.Login(t, s.AdminEmail, servertest.AdminPassword)
			bMe, err := bAdmin.SwitchAccount(ctx, "leaving")
			if err != nil {
				t.Fatal(err)
			}
			bID := bMe.Account.ID
			if _, err := bAdmin.CreateProject(ctx, "b-project"); err != nil {
				t.Fatal(err)
			}
			bKey, err := bAdmin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "b-key", Role: "admin"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bAdmin.CreateUser(ctx, client.CreateUserRequest{Email: "member@leaving.test", Role: "member", Password: "member-password-1"}); err != nil {
				t.Fatal(err)
			}
			member := s.Login(t, "member@leaving.test", "member-password-1")
			h, err := bAdmin.CreateHostedRuntime(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			waitRuntime(t, bAdmin, h.Name, 30*time.Second, "healthy")
			hostedDir := filepath.Join(dataDir, "hosted", h.ID)
			if _, err := os.Stat(hostedDir); err != nil {
				t.Fatalf("the hosted runtime's data: %v", err)
			}

			// A member may not; an admin confirming with another name may not.
			if err := member.DeleteAccount(ctx, "leaving"); statusOf(err) != http.StatusForbidden {
				t.Fatalf("a member deletes the account: %v, want 403", err)
			}
			err = bAdmin.DeleteAccount(ctx, "first")
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Field != "confirm" {
				t.Fatalf("confirm with A's name: %v, want a 400 naming the field confirm", err)
			}
			if err := bAdmin.DeleteAccount(ctx, ""); statusOf(err) != http.StatusBadRequest {
				t.Fatalf("no confirmation: %v, want 400", err)
			}
			if _, err := bAdmin.Account(ctx); err != nil {
				t.Fatalf("B after refused deletions: %v", err)
			}

			if err := bAdmin.DeleteAccount(ctx, "leaving"); err != nil {
				t.Fatalf("delete B: %v", err)
			}

			// B's sessions and keys are gone with it: the caller's own session too.
			for name, c := range map[string]*client.Client{"B admin's session": bAdmin, "B's member": member, "B's API key": s.Client(bKey.Token)} {
				if _, err := c.Me(ctx); statusOf(err) != http.StatusUnauthorized {
					t.Errorf("%s after the deletion: %v, want 401", name, err)
				}
			}
			if _, err := s.DB().GetAccount(ctx, bID); !errors.Is(err, errdefs.ErrNotFound) {
				t.Errorf("B's row after the deletion: %v", err)
			}
			// The hosted runtime is stopped and its data removed.
			deadline := time.Now().Add(15 * time.Second)
			for {
				_, err := os.Stat(hostedDir)
				running := slices.Contains(s.HostedRunning(), h.ID)
				if !running && os.IsNotExist(err) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the deleted account's hosted runtime: running %v, its data: %v", running, err)
				}
				time.Sleep(50 * time.Millisecond)
			}

			// A is untouched: its admin's session, key and project.
			me, err := s.Admin.Me(ctx)
			if err != nil || me.Account.Name != "first" {
				t.Fatalf("A's admin after B's deletion: %+v, %v", me, err)
			}
			if len(me.Accounts) != 1 {
				t.Errorf("the admin's accounts after B's deletion: %+v, want A alone", me.Accounts)
			}
			ps, err := s.Client(aKey.Token).ListProjects(ctx, client.ListOptions{})
			if err != nil || len(ps.Items) != 1 || ps.Items[0].Name != "a-project" {
				t.Fatalf("A's projects through A's key: %+v, %v", ps.Items, err)
			}

			// Each attempt is in the audit log, under B's ID (the operators' record).
			evs, err := s.DB().ListAudit(ctx, bID, store.AuditFilter{Action: "account.delete"}, paging.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			results := map[string]int{}
			for _, e := range evs {
				results[e.Result]++
				if e.Result == "success" && (e.ResourceID != bID || e.Detail != `"leaving"`) {
					t.Errorf("the deletion's audit record: %+v", e)
				}
			}
			if results["success"] != 1 || results["denied"] != 1 || results["failure"] != 2 {
				t.Errorf("account.delete audit results = %v, want 1 success, 1 denied (the member), 2 failures (the wrong names)", results)
			}
		})
	}
}
