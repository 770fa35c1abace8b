package security_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
	"github.com/freshet-dev/freshet/internal/testenv/kube"
)

// row is one line of the suite's table: an attack category and what it tried.
type row struct {
	category  string
	attempts  int
	successes int
	worst     time.Duration
}

var (
	tableMu sync.Mutex
	table   = map[string]*row{}
)

// attack records attempts of category: n tries, of which succeeded got in; worst is the slowest
// answer seen under the abusive input (0 when latency is not what the attack is about). An
// attack that got in fails t.
func attack(t testing.TB, category string, n, succeeded int, worst time.Duration) {
	t.Helper()
	tableMu.Lock()
	r := table[category]
	if r == nil {
		r = &row{category: category}
		table[category] = r
	}
	r.attempts += n
	r.successes += succeeded
	r.worst = max(r.worst, worst)
	tableMu.Unlock()
	if succeeded > 0 {
		t.Errorf("%s: %d of %d attempts succeeded", category, succeeded, n)
	}
}

// TestMain runs the attacks and prints the table: one "SECURITY|category|attempts|successes|worst"
// line per category, which `make security` formats. Attacks that need a cluster share the
// loopback one (internal/testenv/kube), stopped when the attacks are done. Started with
// envUpChild, the test binary is `freshet up` instead (see runner_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(envUpChild) != "" {
		os.Exit(runUpChild())
	}
	code := kube.Run(m)
	tableMu.Lock()
	cats := make([]string, 0, len(table))
	for c := range table {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	for _, c := range cats {
		r := table[c]
		fmt.Printf("SECURITY|%s|%d|%d|%s\n", r.category, r.attempts, r.successes, r.worst.Round(time.Millisecond))
	}
	tableMu.Unlock()
	os.Exit(code)
}

// backend is the database the attacks run on: PostgreSQL when FRESHET_TEST_POSTGRES is set (as
// in CI), else SQLite.
func backend() store.Dialect {
	if os.Getenv(storetest.EnvPostgres) != "" {
		return store.Postgres
	}
	return store.SQLite
}

// tenants is a control plane with two accounts that share nothing: A ("first", its admin and a
// member) and B ("bravo", provisioned by the platform, whose admin belongs to B only).
type tenants struct {
	s                           *servertest.Server
	aAdmin                      *client.Client
	aMember                     *client.Client
	bAdmin                      *client.Client
	bAdminEmail, bAdminPassword string
}

func startTenants(t *testing.T, cfg servertest.Config) *tenants {
	t.Helper()
	ctx := context.Background()
	s := servertest.StartWith(t, backend(), cfg)
	tn := &tenants{s: s, aAdmin: s.Admin, bAdminEmail: "eve@bravo.test", bAdminPassword: "eve-password-123"}
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "alice@first.test", Role: "member", Password: "alice-password"}); err != nil {
		t.Fatal(err)
	}
	tn.aMember = s.Login(t, "alice@first.test", "alice-password")
	if _, err := s.Identity().Provision(ctx, "bravo", tn.bAdminEmail, tn.bAdminPassword); err != nil {
		t.Fatal(err)
	}
	tn.bAdmin = s.Login(t, tn.bAdminEmail, tn.bAdminPassword)
	if me, err := tn.bAdmin.Me(ctx); err != nil || len(me.Accounts) != 1 || !strings.EqualFold(me.Account.Name, "bravo") {
		t.Fatalf("B's admin is not in B alone: %+v, %v", me, err)
	}
	return tn
}

// sessionToken logs email in at the server at url and returns the new session's token.
func sessionToken(t testing.TB, url, email, password string) string {
	t.Helper()
	res, err := client.New(url).Login(context.Background(), client.LoginRequest{Email: email, Password: password})
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	return res.Token
}
