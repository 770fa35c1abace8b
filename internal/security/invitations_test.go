package security_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/server/servertest"
)

// B's admin adds emails that belong to A's users, beside emails no one has, and compares what
// comes back: the status, the body's fields and their form, the time, B's audit record, and
// what B's user list and user reads show afterwards. Any difference tells B which emails A
// has. And A's users must not have become members of B: only an invitation they accept may
// make them one.
func TestAddingAnotherAccountsUser(t *testing.T) {
	ctx := context.Background()
	tn := startTenants(t, servertest.Config{})
	const pairs = 10
	res, err := client.New(tn.s.URL).Login(ctx, client.LoginRequest{Email: tn.bAdminEmail, Password: tn.bAdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	bToken := res.Token
	taken := make([]string, pairs)
	for i := range taken {
		taken[i] = fmt.Sprintf("staff%d@first.test", i)
		if _, err := tn.aAdmin.CreateUser(ctx, client.CreateUserRequest{Email: taken[i], Role: "viewer", Password: "staff-password-1"}); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		status int
		body   map[string]any
		took   time.Duration
	}
	add := func(email string, withPassword bool) answer {
		body := fmt.Sprintf(`{"email":%q,"role":"member"}`, email)
		if withPassword {
			body = fmt.Sprintf(`{"email":%q,"role":"member","password":"chosen-by-b-1"}`, email)
		}
		t0 := time.Now()
		st, out := postAs(t, tn.s.URL+"/api/v1/users", bToken, body)
		return answer{st, out, time.Since(t0)}
	}
	tries, got := 0, 0
	var diffs, takenTimes, freshTimes []time.Duration
	for i := range pairs {
		withPassword := i%3 == 0
		var a, b answer // a: the email A has; b: a new one
		fresh := fmt.Sprintf("fresh%d@nowhere.test", i)
		if i%2 == 0 {
			a, b = add(taken[i], withPassword), add(fresh, withPassword)
		} else {
			b, a = add(fresh, withPassword), add(taken[i], withPassword)
		}
		tries++
		if why := addAnswersDiffer(a.status, b.status, a.body, b.body); why != "" {
			got++
			t.Errorf("adding %s vs %s: %s\n%v\n%v", taken[i], fresh, why, a.body, b.body)
		}
		diffs, takenTimes, freshTimes = append(diffs, a.took-b.took), append(takenTimes, a.took), append(freshTimes, b.took)
	}
	md := medianLatency(diffs)
	t.Logf("adding users: median %s for emails A has, %s for new ones, median difference of pairs %s", medianLatency(takenTimes), medianLatency(freshTimes), md)
	tries++
	if bound := max(5*time.Millisecond, min(medianLatency(takenTimes), medianLatency(freshTimes))/3); md > bound || md < -bound {
		got++
		t.Errorf("adding an email A has takes %s longer than a new one (median of pairs), more than %s", md, bound)
	}

	// B's user list and reads show both kinds alike; B's audit records them alike.
	users, err := tn.bAdmin.ListUsers(ctx, client.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	aIDs := map[string]bool{}
	aUsers, _ := tn.aAdmin.ListUsers(ctx, client.ListOptions{Limit: 1000})
	for _, u := range aUsers.Items {
		aIDs[u.ID] = true
	}
	listed := 0
	for _, u := range users.Items {
		if !strings.HasSuffix(u.Email, "@first.test") && !strings.HasPrefix(u.Email, "fresh") {
			continue
		}
		listed++
		tries++
		if aIDs[u.ID] || u.Role != "member" || !strings.HasPrefix(u.ID, "usr_") {
			got++
			t.Errorf("B lists %+v", u)
		}
		tries++
		if g, err := tn.bAdmin.GetUser(ctx, u.ID); err != nil || g != u {
			got++
			t.Errorf("B reads %s as %+v, %v; listed as %+v", u.ID, g, err, u)
		}
	}
	if listed != 2*pairs {
		t.Errorf("B lists %d of the %d users it added", listed, 2*pairs)
	}
	evs, err := tn.bAdmin.ListAudit(ctx, client.AuditFilter{Action: "user.create", ListOptions: client.ListOptions{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]int{}
	for _, e := range evs.Items {
		if e.Actor != tn.bAdminEmail {
			continue
		}
		_, detail, _ := strings.Cut(e.Detail, " ") // past the email: "as member"
		shapes[fmt.Sprintf("%s|%s|%s|%v", e.Result, e.ResourceType, detail, strings.HasPrefix(e.ResourceID, "usr_"))]++
	}
	t.Logf("B's user.create records by shape: %v", shapes)
	tries++
	if len(shapes) != 1 {
		got++
		t.Errorf("B's audit records differ by kind of email: %v", shapes)
	}

	// Consent: no user of A became a member of B, and B's chosen password logs nobody in.
	for _, email := range taken {
		tries++
		if _, err := client.New(tn.s.URL).Login(ctx, client.LoginRequest{Email: email, Password: "chosen-by-b-1", Account: "bravo"}); err == nil {
			got++
			t.Errorf("B's password logs %s into B", email)
		}
		tries++
		c := tn.s.Login(t, email, "staff-password-1")
		me, err := c.Me(ctx)
		if err != nil || len(me.Accounts) != 1 {
			got++
			t.Errorf("%s is in %+v without accepting (%v)", email, me.Accounts, err)
		}
	}
	attack(t, "tenancy: adding another account's users", tries, got, max(slices.Max(takenTimes), slices.Max(freshTimes)))
}

// addAnswersDiffer says how two answers to adding a user differ in what they reveal: status, fields,
// or the form of a field's value (an ID's prefix, a password's length, a time's presence).
func addAnswersDiffer(s1, s2 int, a, b map[string]any) string {
	if s1 != s2 {
		return fmt.Sprintf("status %d vs %d", s1, s2)
	}
	ka, kb := slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))
	if !slices.Equal(ka, kb) {
		return fmt.Sprintf("fields %v vs %v", ka, kb)
	}
	form := func(k string, v any) string {
		s, _ := v.(string)
		switch k {
		case "id":
			p, _, _ := strings.Cut(s, "_")
			return p + fmt.Sprint(len(s))
		case "password", "role":
			return fmt.Sprint(s == "", len(s), k == "role" && s != "member")
		case "createdAt":
			t, err := time.Parse(time.RFC3339Nano, s)
			return fmt.Sprint(err == nil && time.Since(t) < time.Minute)
		}
		return ""
	}
	for _, k := range ka {
		if fa, fb := form(k, a[k]), form(k, b[k]); fa != fb {
			return fmt.Sprintf("field %s: %v vs %v", k, a[k], b[k])
		}
	}
	return ""
}

// postAs sends a JSON body with a bearer token and decodes the JSON answer.
func postAs(t *testing.T, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
