package identity

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// Benchmark sizes: the figure is for an account with 1,000 rules and 100 teams.
const (
	benchTeams        = 100
	benchRules        = 1000
	benchTeamsPerUser = 10
)

// BenchmarkAuthorization measures what rules add to a request: resolving its API key to a
// principal (Authenticate, which now reads the account's policy version with the member and
// takes the user's compiled rules from the cache) and deciding one action on one resource
// (rbac.Authorize), in an account with 1,000 rules over 100 teams, against the same request in
// an account with no rules, and reports the p50 and p99 of each. The database reads are the
// same for both (the policy version comes with the member row every request reads), so what
// rules add is the cache lookup of the user's compiled rules and the decision: p50-added-ns and
// p99-added-ns time exactly that, apart from the database's noise. The rules' cold load (once
// per change, per replica) is reload-ns.
//
//	go test -run '^$' -bench BenchmarkAuthorization -benchtime 20000x ./internal/identity/
func BenchmarkAuthorization(b *testing.B) {
	for _, d := range storetest.Backends() {
		b.Run(string(d), func(b *testing.B) { benchAuthorization(b, d) })
	}
}

func benchAuthorization(b *testing.B, d store.Dialect) {
	ctx := context.Background()
	db := storetest.Open(b, d)
	log := slog.New(slog.DiscardHandler)
	s := New(Deps{Store: db, Audit: audit.NewLog(db, log), Log: log})
	tokens := map[string]string{}
	for _, acct := range []string{"plain", "governed"} {
		boot, err := s.Provision(ctx, acct, "admin@"+acct+".test", "admin-password-123")
		if err != nil {
			b.Fatal(err)
		}
		admin, err := s.Login(ctx, boot.Email, "admin-password-123", acct)
		if err != nil {
			b.Fatal(err)
		}
		u, err := s.CreateUser(ctx, admin.Principal, CreateUserInput{Email: "dev@" + acct + ".test", Role: "member", Password: "dev-password-123"})
		if err != nil {
			b.Fatal(err)
		}
		dev, err := s.Login(ctx, "dev@"+acct+".test", "dev-password-123", acct)
		if err != nil {
			b.Fatal(err)
		}
		_, tok, err := s.CreateAPIKey(ctx, dev.Principal, CreateAPIKeyInput{Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		tokens[acct] = tok
		if acct == "plain" {
			continue
		}
		// 100 teams; the user is in 10. 1,000 rules over the teams and kinds, each with a tag or
		// a namespace; the resource below matches the last rule of its kind that the user has.
		kinds := []string{"pipelines", "builds", "applications", "runtimes"}
		actions := map[string]string{"pipelines": "run", "builds": "read", "applications": "sync", "runtimes": "read"}
		for i := range benchTeams {
			name := fmt.Sprintf("team-%03d", i)
			if _, err := s.CreateTeam(ctx, admin.Principal, name); err != nil {
				b.Fatal(err)
			}
			if i%(benchTeams/benchTeamsPerUser) == 0 {
				if err := s.AddTeamMember(ctx, admin.Principal, name, u.Member.ID); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i := range benchRules {
			k := kinds[i%len(kinds)]
			in := RuleInput{Team: fmt.Sprintf("team-%03d", i%benchTeams), Action: actions[k], Kind: k}
			switch k {
			case "pipelines", "builds":
				in.Tags = []string{fmt.Sprintf("tag-%d", i), fmt.Sprintf("tag-%d", i+1)}
			default:
				in.Namespace = fmt.Sprintf("ns-%d", i)
			}
			if _, err := s.CreateRule(ctx, admin.Principal, in); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The user is in teams 0, 10 … 90 and so has the pipelines rules i = 0, 20 … 980 (i%4 == 0
	// and i%10 == 0): 50 candidates for run on pipelines. tag-981 is carried by rule 980 only,
	// of the last team the scan reaches.
	res := rbac.Resource{Kind: rbac.KindPipelines, Name: "web/deploy", Attrs: rbac.Attributes{Tags: []string{"tag-981"}}}
	one := func(tok string) (time.Duration, error) {
		start := time.Now()
		p, err := s.Authenticate(ctx, tok)
		if err != nil {
			return 0, err
		}
		err = rbac.Authorize(p, rbac.ActRun, res)
		return time.Since(start), err
	}
	for acct, tok := range tokens { // warm the cache and check the decision
		if _, err := one(tok); err != nil {
			b.Fatalf("%s: %v", acct, err)
		}
	}
	// The cold load of the governed account's rules.
	var reload time.Duration
	for range 20 {
		gov, _ := db.GetAccount(ctx, mustAccount(b, s, tokens["governed"]))
		start := time.Now()
		if _, err := s.loadPolicy(ctx, gov.ID, 0); err != nil {
			b.Fatal(err)
		}
		reload += time.Since(start)
	}
	plain := make([]time.Duration, 0, b.N)
	governed := make([]time.Duration, 0, b.N)
	decide := make([]time.Duration, 0, b.N)
	p, _ := s.Authenticate(ctx, tokens["governed"])
	m, err := db.GetMember(ctx, p.AccountID, p.UserID)
	if err != nil {
		b.Fatal(err)
	}
	version := m.PolicyVersion
	b.ResetTimer()
	for range b.N {
		// Interleaved, so both see the same machine.
		dp, err := one(tokens["plain"])
		if err != nil {
			b.Fatal(err)
		}
		dg, err := one(tokens["governed"])
		if err != nil {
			b.Fatal(err)
		}
		// What rules add to a request besides the member row it reads anyway: taking the
		// user's compiled rules from the cache, and the decision.
		start := time.Now()
		rules, err := s.rulesFor(ctx, p.AccountID, p.UserID, version)
		if err != nil {
			b.Fatal(err)
		}
		p.Rules = rules
		if err := rbac.Authorize(p, rbac.ActRun, res); err != nil {
			b.Fatal(err)
		}
		decide = append(decide, time.Since(start))
		plain, governed = append(plain, dp), append(governed, dg)
	}
	b.StopTimer()
	q := func(ds []time.Duration, f float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(f*float64(len(ds)-1))].Nanoseconds())
	}
	b.ReportMetric(q(plain, 0.50), "p50-plain-ns")
	b.ReportMetric(q(plain, 0.99), "p99-plain-ns")
	b.ReportMetric(q(governed, 0.50), "p50-rules-ns")
	b.ReportMetric(q(governed, 0.99), "p99-rules-ns")
	b.ReportMetric(q(decide, 0.50), "p50-added-ns")
	b.ReportMetric(q(decide, 0.99), "p99-added-ns")
	b.ReportMetric(float64(reload.Nanoseconds()/20), "reload-ns")
}

func mustAccount(b *testing.B, s *Service, tok string) string {
	p, err := s.Authenticate(context.Background(), tok)
	if err != nil {
		b.Fatal(err)
	}
	return p.AccountID
}
