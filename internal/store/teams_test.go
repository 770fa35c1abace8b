package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

func TestTeamsAndRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, u := seed(t, db, "acme")
		b, bu := seed(t, db, "globex")
		now := time.Now()

		m0, err := db.GetMember(ctx, a.ID, u.ID)
		if err != nil || m0.PolicyVersion != 0 {
			t.Fatalf("GetMember = %+v, %v; want policy version 0", m0, err)
		}
		dev := store.Team{ID: store.NewID(store.PrefixTeam), AccountID: a.ID, Name: "dev", CreatedAt: now}
		if err := db.CreateTeam(ctx, dev); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateTeam(ctx, store.Team{ID: store.NewID(store.PrefixTeam), AccountID: a.ID, Name: "dev", CreatedAt: now}); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("duplicate team name: %v, want ErrConflict", err)
		}
		// The same name in another account is another team.
		if err := db.CreateTeam(ctx, store.Team{ID: store.NewID(store.PrefixTeam), AccountID: b.ID, Name: "dev", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if got, err := db.GetTeam(ctx, a.ID, "dev"); err != nil || got.ID != dev.ID {
			t.Fatalf("GetTeam by name = %+v, %v", got, err)
		}
		if _, err := db.GetTeam(ctx, b.ID, dev.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("GetTeam across accounts: %v, want ErrNotFound", err)
		}
		if err := db.AddTeamMember(ctx, a.ID, dev.ID, u.ID, now); err != nil {
			t.Fatal(err)
		}
		if err := db.AddTeamMember(ctx, a.ID, dev.ID, u.ID, now); !errors.Is(err, errdefs.ErrConflict) {
			t.Fatalf("member added twice: %v, want ErrConflict", err)
		}
		// Only members of the team's account can join it.
		if err := db.AddTeamMember(ctx, a.ID, dev.ID, bu.ID, now); err == nil {
			t.Fatal("a user of another account joined the team")
		}
		ms, err := db.TeamMembers(ctx, a.ID)
		if err != nil || len(ms) != 1 || ms[0].UserID != u.ID || ms[0].Email != "admin@acme.test" {
			t.Fatalf("TeamMembers = %+v, %v", ms, err)
		}
		if ms, _ := db.TeamMembers(ctx, b.ID); len(ms) != 0 {
			t.Fatalf("account b sees a's team members: %+v", ms)
		}

		r1 := store.Rule{ID: store.NewID(store.PrefixRule), AccountID: a.ID, TeamID: dev.ID, Action: "run", Kind: "pipelines", Attrs: `{"tags":["prod"]}`, CreatedAt: now}
		r2 := store.Rule{ID: store.NewID(store.PrefixRule), AccountID: a.ID, UserID: u.ID, Action: "read", Kind: "applications", Attrs: `{"namespace":"web"}`, CreatedAt: now}
		for _, r := range []store.Rule{r1, r2} {
			if err := db.CreateRule(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.BumpPolicyVersion(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if m, _ := db.GetMember(ctx, a.ID, u.ID); m.PolicyVersion != 1 {
			t.Fatalf("policy version after a bump = %d, want 1", m.PolicyVersion)
		}
		rules, err := db.AllRules(ctx, a.ID)
		if err != nil || len(rules) != 2 || rules[0].TeamName != "dev" || rules[1].UserEmail != "admin@acme.test" || rules[0].Attrs != r1.Attrs {
			t.Fatalf("AllRules = %+v, %v", rules, err)
		}
		page, err := db.ListRules(ctx, a.ID, paging.Page{Limit: 1})
		if err != nil || len(page) != 1 || page[0].ID != r1.ID {
			t.Fatalf("ListRules page 1 = %+v, %v", page, err)
		}
		if page, _ := db.ListRules(ctx, a.ID, paging.Page{After: r1.ID}); len(page) != 1 || page[0].ID != r2.ID {
			t.Fatalf("ListRules page 2 = %+v", page)
		}
		if rs, _ := db.AllRules(ctx, b.ID); len(rs) != 0 {
			t.Fatalf("account b sees a's rules: %+v", rs)
		}
		if err := db.DeleteRule(ctx, b.ID, r1.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("DeleteRule across accounts: %v, want ErrNotFound", err)
		}
		if err := db.RemoveTeamMember(ctx, a.ID, dev.ID, u.ID); err != nil {
			t.Fatal(err)
		}
		if err := db.RemoveTeamMember(ctx, a.ID, dev.ID, u.ID); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("removing a non-member: %v, want ErrNotFound", err)
		}
		// Deleting the team deletes its rules; leaving the account deletes the member's rules
		// and team memberships, and bumps the version.
		if err := db.AddTeamMember(ctx, a.ID, dev.ID, u.ID, now); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteTeam(ctx, a.ID, dev.ID); err != nil {
			t.Fatal(err)
		}
		if rs, _ := db.AllRules(ctx, a.ID); len(rs) != 1 || rs[0].ID != r2.ID {
			t.Fatalf("rules after the team was deleted = %+v", rs)
		}
		other := store.User{ID: store.NewID(store.PrefixUser), Email: "o@acme.test", Name: "o", PasswordHash: "h", CreatedAt: now}
		if err := db.CreateUser(ctx, other); err != nil {
			t.Fatal(err)
		}
		if err := db.AddMember(ctx, a.ID, other.ID, "member", now); err != nil {
			t.Fatal(err)
		}
		ops := store.Team{ID: store.NewID(store.PrefixTeam), AccountID: a.ID, Name: "ops", CreatedAt: now}
		if err := db.CreateTeam(ctx, ops); err != nil {
			t.Fatal(err)
		}
		if err := db.AddTeamMember(ctx, a.ID, ops.ID, other.ID, now); err != nil {
			t.Fatal(err)
		}
		if err := db.CreateRule(ctx, store.Rule{ID: store.NewID(store.PrefixRule), AccountID: a.ID, UserID: other.ID, Action: "read", Kind: "builds", Attrs: `{}`, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := db.RemoveMember(ctx, a.ID, other.ID); err != nil {
			t.Fatal(err)
		}
		if ms, _ := db.TeamMembers(ctx, a.ID, ops.ID); len(ms) != 0 {
			t.Fatalf("team members after the user left the account: %+v", ms)
		}
		if rs, _ := db.AllRules(ctx, a.ID); len(rs) != 1 {
			t.Fatalf("rules after the user left the account: %+v", rs)
		}
		if v, _ := db.PolicyVersion(ctx, a.ID); v != 2 {
			t.Fatalf("policy version after a member left = %d, want 2", v)
		}
	})
}

func TestProjectTags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := seed(t, db, "acme")
		for _, p := range []store.Project{
			{ID: store.NewID(store.PrefixProject), AccountID: a.ID, Name: "web", Tags: []string{"prod", "pci"}, CreatedAt: time.Now()},
			{ID: store.NewID(store.PrefixProject), AccountID: a.ID, Name: "lab", CreatedAt: time.Now()},
		} {
			if err := db.CreateProject(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := db.GetProject(ctx, a.ID, "web")
		if err != nil || len(got.Tags) != 2 || got.Tags[1] != "pci" {
			t.Fatalf("GetProject = %+v, %v", got, err)
		}
		list, err := db.ListProjects(ctx, a.ID, "", paging.Page{})
		if err != nil || len(list) != 2 || len(list[1].Tags) != 0 {
			t.Fatalf("ListProjects = %+v, %v", list, err)
		}
	})
}
