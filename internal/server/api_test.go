package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/rest"
	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/events"
	"github.com/freshet-dev/freshet/internal/server/servertest"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/store/storetest"
)

// call makes a raw request and decodes the JSON answer.
func call(t *testing.T, method, url, token string, body []byte, hdr ...string) (int, map[string]any, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	json.Unmarshal(data, &out)
	return resp.StatusCode, out, resp.Header
}

func errField(body map[string]any) (code, field, msg string) {
	e, _ := body["error"].(map[string]any)
	code, _ = e["code"].(string)
	field, _ = e["field"].(string)
	msg, _ = e["message"].(string)
	return
}

func adminToken(t *testing.T, s *servertest.Server) string {
	t.Helper()
	k, err := s.Admin.CreateAPIKey(context.Background(), client.CreateAPIKeyRequest{Name: "test-admin"})
	if err != nil {
		t.Fatal(err)
	}
	return k.Token
}

func TestBadInputNamesTheField(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	tok := adminToken(t, s)
	big := `{"email":"` + strings.Repeat("a", 2<<20) + `"}`
	cases := []struct {
		name, method, path, body string
		status                   int
		field, code              string
	}{
		{"malformed json", "POST", "/api/v1/users", `{"email": "x@y.z",`, 400, "body", "invalid_argument"},
		{"not an object", "POST", "/api/v1/users", `[1,2]`, 400, "body", "invalid_argument"},
		{"trailing data", "POST", "/api/v1/users", `{"email":"a@b.c","role":"member"} {}`, 400, "body", "invalid_argument"},
		{"unknown field", "POST", "/api/v1/users", `{"email":"a@b.c","role":"member","nickname":"x"}`, 400, "nickname", "invalid_argument"},
		{"wrong type", "POST", "/api/v1/users", `{"email":42,"role":"member"}`, 400, "email", "invalid_argument"},
		{"empty body", "POST", "/api/v1/users", ``, 400, "body", "invalid_argument"},
		{"null body", "POST", "/api/v1/users", `null`, 400, "body", "invalid_argument"},
		{"duplicate key", "POST", "/api/v1/users", `{"email":"a@b.c","role":"viewer","role":"admin"}`, 400, "role", "invalid_argument"},
		{"duplicate key in two cases", "POST", "/api/v1/users", `{"email":"a@b.c","role":"viewer","Role":"admin"}`, 400, "Role", "invalid_argument"},
		{"too large", "POST", "/api/v1/users", big, 413, "", "too_large"},
		{"invalid email", "POST", "/api/v1/users", `{"email":"not-an-email","role":"member"}`, 400, "email", "invalid_argument"},
		{"display-name email", "POST", "/api/v1/users", `{"email":"Bob <bob@x.io>","role":"member"}`, 400, "email", "invalid_argument"},
		{"invalid role", "POST", "/api/v1/users", `{"email":"ok@x.io","role":"owner"}`, 400, "role", "invalid_argument"},
		{"short password", "POST", "/api/v1/users", `{"email":"ok@x.io","role":"member","password":"short"}`, 400, "password", "invalid_argument"},
		{"invalid key name", "POST", "/api/v1/apikeys", `{"name":"../etc"}`, 400, "name", "invalid_argument"},
		{"invalid expiry", "POST", "/api/v1/apikeys", `{"name":"k","expiresIn":"soon"}`, 400, "expiresIn", "invalid_argument"},
		{"negative expiry", "POST", "/api/v1/apikeys", `{"name":"k","expiresIn":"-1h"}`, 400, "expiresIn", "invalid_argument"},
		{"expiry rounding to never", "POST", "/api/v1/apikeys", `{"name":"k","expiresIn":"0.5ns"}`, 400, "expiresIn", "invalid_argument"},
		{"expiry below a minute", "POST", "/api/v1/apikeys", `{"name":"k","expiresIn":"59s"}`, 400, "expiresIn", "invalid_argument"},
		{"invalid account name", "POST", "/api/v1/accounts", `{"name":""}`, 400, "name", "invalid_argument"},
		{"bad limit", "GET", "/api/v1/users?limit=0", ``, 400, "limit", "invalid_argument"},
		{"huge limit", "GET", "/api/v1/users?limit=100000", ``, 400, "limit", "invalid_argument"},
		{"bad cursor", "GET", "/api/v1/users?after=%25%25", ``, 400, "after", "invalid_argument"},
		{"bad since", "GET", "/api/v1/audit?since=yesterday", ``, 400, "since", "invalid_argument"},
		{"unknown route", "GET", "/api/v1/nope", ``, 404, "", "not_found"},
		{"unknown user", "GET", "/api/v1/users/usr_nope", ``, 404, "", "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != "" || c.method == "POST" {
				body = []byte(c.body)
			}
			status, out, _ := call(t, c.method, s.URL+c.path, tok, body)
			code, field, msg := errField(out)
			if status != c.status || code != c.code || field != c.field {
				t.Fatalf("got %d %s field=%q (%s), want %d %s field=%q", status, code, field, msg, c.status, c.code, c.field)
			}
			if msg == "" {
				t.Fatal("error has no message")
			}
		})
	}
	// Nothing was half-written: only the admin exists.
	users, err := s.Admin.ListUsers(context.Background(), client.ListOptions{})
	if err != nil || len(users.Items) != 1 {
		t.Fatalf("users after bad input = %+v, %v", users.Items, err)
	}
}

func TestAuthenticationFailuresSayNothingSpecific(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	_, err := client.New(s.URL).Login(ctx, client.LoginRequest{Email: s.AdminEmail, Password: "wrong-password"})
	_, err2 := client.New(s.URL).Login(ctx, client.LoginRequest{Email: "nobody@first.test", Password: "wrong-password"})
	if !client.IsStatus(err, 401) || !client.IsStatus(err2, 401) || err.Error() != err2.Error() {
		t.Fatalf("wrong password: %v; unknown user: %v — want the same 401", err, err2)
	}
	for _, tok := range []string{"", "fsk_abcdefgh_" + strings.Repeat("x", 32), "fss_nope", "garbage"} {
		status, out, hdr := call(t, "GET", s.URL+"/api/v1/me", tok, nil)
		if code, _, _ := errField(out); status != 401 || code != "unauthenticated" || hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %d %v", tok, status, out)
		}
	}
	status, _, _ := call(t, "GET", s.URL+"/api/v1/me", "", nil, "Authorization", "Basic YTpi")
	if status != 401 {
		t.Errorf("basic auth: %d, want 401", status)
	}
}

func TestLoginRateLimit(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	c := client.New(s.URL)
	var last error
	for range 12 {
		_, last = c.Login(ctx, client.LoginRequest{Email: s.AdminEmail, Password: "wrong-password"})
	}
	if !client.IsStatus(last, 429) {
		t.Fatalf("12th bad login: %v, want 429", last)
	}
	// Even the right password is refused while blocked.
	if _, err := c.Login(ctx, client.LoginRequest{Email: s.AdminEmail, Password: servertest.AdminPassword}); !client.IsStatus(err, 429) {
		t.Fatalf("good password while blocked: %v, want 429", err)
	}
	evs, err := s.Admin.ListAudit(ctx, client.AuditFilter{Action: "auth.login", Result: "denied"})
	if err != nil || len(evs.Items) < 10 {
		t.Fatalf("denied logins audited: %d, %v", len(evs.Items), err)
	}
}

func TestCookieSessionNeedsCSRF(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	res, err := client.New(s.URL).Login(context.Background(), client.LoginRequest{Email: s.AdminEmail, Password: servertest.AdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	cookie := "freshet_session=" + res.Token
	body := []byte(`{"name":"from-browser"}`)
	status, _, _ := call(t, "GET", s.URL+"/api/v1/me", "", nil, "Cookie", cookie)
	if status != 200 {
		t.Fatalf("cookie GET: %d", status)
	}
	status, out, _ := call(t, "POST", s.URL+"/api/v1/apikeys", "", body, "Cookie", cookie)
	if code, _, _ := errField(out); status != 403 || code != "permission_denied" {
		t.Fatalf("cookie POST without CSRF: %d %v", status, out)
	}
	status, _, _ = call(t, "POST", s.URL+"/api/v1/apikeys", "", body, "Cookie", cookie, "X-CSRF-Token", "forged")
	if status != 403 {
		t.Fatalf("cookie POST with a forged CSRF token: %d", status)
	}
	status, _, _ = call(t, "POST", s.URL+"/api/v1/apikeys", "", body, "Cookie", cookie, "X-CSRF-Token", res.CSRFToken)
	if status != 201 {
		t.Fatalf("cookie POST with CSRF: %d", status)
	}
}

func TestStaleCookieIsAnonymousAndCleared(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	status, _, hdr := call(t, "GET", s.URL+"/api/v1/docs", "", nil, "Cookie", "freshet_session=fss_expired-or-forged")
	if status != 200 {
		t.Fatalf("docs with a stale cookie: %d, want 200", status)
	}
	if c := hdr.Values("Set-Cookie"); len(c) < 2 || !strings.Contains(strings.Join(c, ";"), "freshet_session=;") {
		t.Fatalf("stale cookie not cleared: %v", c)
	}
	// An API call with only a stale cookie is unauthenticated (401), not an error about the cookie.
	if status, _, _ := call(t, "GET", s.URL+"/api/v1/me", "", nil, "Cookie", "freshet_session=fss_expired-or-forged"); status != 401 {
		t.Fatalf("me with a stale cookie: %d", status)
	}
	// A bad bearer token is still refused outright.
	if status, _, _ := call(t, "GET", s.URL+"/api/v1/docs", "fss_forged", nil); status != 401 {
		t.Fatalf("docs with a bad bearer token: %d", status)
	}
}

func TestLoginSetsSecureCookieAttributes(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	resp, err := http.Post(s.URL+"/api/v1/auth/login", "application/json",
		strings.NewReader(fmt.Sprintf(`{"email":%q,"password":%q}`, s.AdminEmail, servertest.AdminPassword)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "freshet_session" {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie = %+v, want HttpOnly and SameSite=Lax", session)
	}
}

func TestRolesAndAPIKeys(t *testing.T) {
	for _, d := range storetest.Backends() {
		t.Run(string(d), func(t *testing.T) { testRolesAndAPIKeys(t, d) })
	}
}

func testRolesAndAPIKeys(t *testing.T, d store.Dialect) {
	s := servertest.Start(t, d)
	ctx := context.Background()
	for _, u := range []client.CreateUserRequest{
		{Email: "mia@first.test", Role: "member", Password: "member-password"},
		{Email: "vic@first.test", Role: "viewer", Password: "viewer-password"},
	} {
		if _, err := s.Admin.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "MIA@first.test", Role: "viewer"}); !client.IsStatus(err, 409) {
		t.Fatalf("duplicate member: %v, want 409", err)
	}
	member := s.Login(t, "mia@first.test", "member-password")
	viewer := s.Login(t, "vic@first.test", "viewer-password")

	if _, err := viewer.CreateUser(ctx, client.CreateUserRequest{Email: "x@first.test", Role: "viewer"}); !client.IsStatus(err, 403) {
		t.Fatalf("viewer creates user: %v, want 403", err)
	}
	if _, err := viewer.ListUsers(ctx, client.ListOptions{}); err != nil {
		t.Fatalf("viewer lists users: %v", err)
	}
	if _, err := member.ListAudit(ctx, client.AuditFilter{}); !client.IsStatus(err, 403) {
		t.Fatalf("member reads audit: %v, want 403", err)
	}
	if _, err := member.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "up", Role: "admin"}); !client.IsStatus(err, 403) {
		t.Fatalf("member creates admin key: %v, want 403", err)
	}
	mk, err := member.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "mine", ExpiresIn: "0"})
	if err != nil || mk.Role != "member" || mk.ExpiresAt != nil {
		t.Fatalf("member key = %+v, %v", mk, err)
	}
	// A member sees only their own keys; the admin sees all.
	adminKey := adminToken(t, s)
	if ks, _ := member.ListAPIKeys(ctx, client.ListOptions{}); len(ks.Items) != 1 {
		t.Fatalf("member sees %d keys, want 1", len(ks.Items))
	}
	if ks, _ := s.Admin.ListAPIKeys(ctx, client.ListOptions{}); len(ks.Items) != 2 {
		t.Fatalf("admin sees %d keys, want 2", len(ks.Items))
	}
	adminKeys, _ := s.Admin.ListAPIKeys(ctx, client.ListOptions{})
	var adminKeyID string
	for _, k := range adminKeys.Items {
		if k.UserID != mk.UserID {
			adminKeyID = k.ID
		}
	}
	if err := member.RevokeAPIKey(ctx, adminKeyID); !client.IsStatus(err, 404) {
		t.Fatalf("member revokes the admin's key: %v, want 404", err)
	}
	if _, err := s.Client(adminKey).Me(ctx); err != nil {
		t.Fatalf("admin key stopped working: %v", err)
	}
	// A key never grants more than its owner holds now: demote mia, her key drops to viewer.
	mkc := s.Client(mk.Token)
	if me, err := mkc.Me(ctx); err != nil || me.Role != "member" || me.Via != "apikey" {
		t.Fatalf("member key me = %+v, %v", me, err)
	}
	if _, err := s.Admin.UpdateUser(ctx, mk.UserID, client.UpdateUserRequest{Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
	if me, _ := mkc.Me(ctx); me.Role != "viewer" {
		t.Fatalf("demoted owner's key role = %s, want viewer", me.Role)
	}
	// Removing the user kills their key and session.
	if err := s.Admin.DeleteUser(ctx, mk.UserID); err != nil {
		t.Fatal(err)
	}
	if _, err := mkc.Me(ctx); !client.IsStatus(err, 401) {
		t.Fatalf("deleted user's key: %v, want 401", err)
	}
	if _, err := member.Me(ctx); !client.IsStatus(err, 401) {
		t.Fatalf("deleted user's session: %v, want 401", err)
	}
	// The last admin stays.
	me, _ := s.Admin.Me(ctx)
	if err := s.Admin.DeleteUser(ctx, me.User.ID); !client.IsStatus(err, 409) {
		t.Fatalf("delete last admin: %v, want 409", err)
	}
	if _, err := s.Admin.UpdateUser(ctx, me.User.ID, client.UpdateUserRequest{Role: "member"}); !client.IsStatus(err, 409) {
		t.Fatalf("demote last admin: %v, want 409", err)
	}
	// A key lives at least a minute (that expired keys stop working is identity's test, on a
	// clock it controls); shorter lifetimes are refused, not rounded.
	short, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "short", ExpiresIn: "1m"})
	if err != nil || short.ExpiresAt == nil || time.Until(*short.ExpiresAt) > time.Minute {
		t.Fatalf("1m key = %+v, %v", short, err)
	}
	if _, err := s.Client(short.Token).Me(ctx); err != nil {
		t.Fatalf("1m key: %v", err)
	}
	for _, ttl := range []string{"50ms", "0.5ns"} {
		if _, err := s.Admin.CreateAPIKey(ctx, client.CreateAPIKeyRequest{Name: "shorter", ExpiresIn: ttl}); !client.IsStatus(err, 400) {
			t.Fatalf("key expiring in %s: %v, want 400", ttl, err)
		}
	}
	// Denied calls are audited too.
	evs, err := s.Admin.ListAudit(ctx, client.AuditFilter{Result: "denied", Action: "user.create"})
	if err != nil || len(evs.Items) != 1 || evs.Items[0].Actor != "vic@first.test" {
		t.Fatalf("denied user.create records = %+v, %v", evs.Items, err)
	}
}

func TestLogoutEndsSession(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	if err := s.Admin.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admin.Me(ctx); !client.IsStatus(err, 401) {
		t.Fatalf("after logout: %v, want 401", err)
	}
}

func TestPaginationOverREST(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	for i := range 12 {
		if _, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: fmt.Sprintf("u%d@first.test", i), Role: "viewer", Password: "password-123"}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	o := client.ListOptions{Limit: 5}
	pages := 0
	for {
		l, err := s.Admin.ListUsers(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, u := range l.Items {
			if seen[u.ID] {
				t.Fatalf("user %s on two pages", u.ID)
			}
			seen[u.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		o.After = l.NextCursor
	}
	if len(seen) != 13 || pages != 3 {
		t.Fatalf("%d users over %d pages, want 13 over 3", len(seen), pages)
	}
}

func TestGraphQL(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx := context.Background()
	var out struct {
		Me struct {
			User struct{ Email string }
			Role string
		}
		Users struct {
			Nodes    []struct{ ID, Email string }
			PageInfo struct{ HasNextPage bool }
		}
		AuditEvents struct {
			Nodes []struct{ Action, Result string }
		}
	}
	err := s.Admin.GraphQL(ctx, `query { me { user { email } role } users(first: 10) { nodes { id email } pageInfo { hasNextPage } }
		auditEvents(filter: {action: "auth.*"}, first: 5) { nodes { action result } } }`, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.Me.User.Email != s.AdminEmail || out.Me.Role != "admin" || len(out.Users.Nodes) != 1 || out.Users.PageInfo.HasNextPage {
		t.Fatalf("graphql = %+v", out)
	}
	if len(out.AuditEvents.Nodes) == 0 || out.AuditEvents.Nodes[0].Action != "auth.login" {
		t.Fatalf("auditEvents = %+v", out.AuditEvents)
	}
	// Errors carry codes.
	err = s.Admin.GraphQL(ctx, `{ users(first: 0) { nodes { id } } }`, nil, &out)
	var ge client.GraphQLErrors
	if !asGraphQL(err, &ge) || ge[0].Extensions["code"] != "invalid_argument" || ge[0].Extensions["field"] != "first" {
		t.Fatalf("bad first: %v %+v", err, ge)
	}
	// The template Hub: the catalogue and one version, as REST answers them; an unknown
	// template is null, an unknown version an error naming it.
	var hubOut struct {
		HubTemplates []struct{ Name, Source, LatestVersion string }
		HubTemplate  *struct {
			Name, Version, Readme string
			Parameters            []struct {
				Name, Default string
				Required      bool
			}
		}
		Absent *struct{ Name string }
	}
	if err := s.Admin.GraphQL(ctx, `{ hubTemplates(category: "gitops") { name source latestVersion }
		hubTemplate(name: "git-clone", version: "0.1.0") { name version readme parameters { name default required } }
		absent: hubTemplate(name: "absent") { name } }`, nil, &hubOut); err != nil {
		t.Fatal(err)
	}
	if len(hubOut.HubTemplates) != 1 || hubOut.HubTemplates[0].Name != "promote-image-tag" || hubOut.HubTemplates[0].Source != "builtin" ||
		hubOut.HubTemplate == nil || hubOut.HubTemplate.Readme == "" || len(hubOut.HubTemplate.Parameters) != 3 || !hubOut.HubTemplate.Parameters[0].Required ||
		hubOut.HubTemplate.Parameters[1].Default != "main" || hubOut.Absent != nil {
		t.Fatalf("hub over GraphQL: %+v", hubOut)
	}
	err = s.Admin.GraphQL(ctx, `{ hubTemplate(name: "git-clone", version: "9.9.9") { name } }`, nil, &hubOut)
	if !asGraphQL(err, &ge) || ge[0].Extensions["field"] != "version" {
		t.Fatalf("an unknown hub version: %v %+v", err, ge)
	}
	// Unauthenticated GraphQL is a 401, like REST.
	if err := client.New(s.URL).GraphQL(ctx, `{ me { role } }`, nil, nil); !client.IsStatus(err, 401) {
		t.Fatalf("anonymous graphql: %v", err)
	}
}

func asGraphQL(err error, out *client.GraphQLErrors) bool {
	ge, ok := err.(client.GraphQLErrors)
	if ok {
		*out = ge
	}
	return ok && len(ge) > 0
}

func TestSpecDocumentsEveryRoute(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	_, ops, err := rest.ParseSpec()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]rest.Operation{}
	for _, op := range ops {
		documented[op.Method+" "+op.Path] = op
		if op.ID == "" || op.Summary == "" {
			t.Errorf("%s %s has no operationId or summary", op.Method, op.Path)
		}
	}
	served := map[string]bool{}
	for _, r := range s.Routes() {
		key := r.Method + " " + r.Path
		served[key] = true
		op, ok := documented[key]
		if !ok {
			t.Errorf("route %s is not in api/openapi.yaml", key)
			continue
		}
		if op.Public != r.Public {
			t.Errorf("route %s: public=%v in code, %v in the spec", key, r.Public, op.Public)
		}
	}
	for key := range documented {
		if !served[key] {
			t.Errorf("api/openapi.yaml documents %s, which no route serves", key)
		}
	}
	status, _, _ := call(t, "GET", s.URL+"/api/v1/docs", "", nil)
	if status != 200 {
		t.Fatalf("docs page: %d", status)
	}
}

func TestOperationsEndpoints(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	for _, p := range []string{"/healthz", "/readyz"} {
		status, out, hdr := call(t, "GET", s.URL+p, "", nil, "X-Request-Id", "req-123")
		if status != 200 || hdr.Get("X-Request-Id") != "req-123" {
			t.Errorf("%s: %d %v request id %q", p, status, out, hdr.Get("X-Request-Id"))
		}
	}
	_, _, hdr := call(t, "GET", s.URL+"/healthz", "", nil, "X-Request-Id", "bad id with spaces")
	if id := hdr.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Errorf("malformed client request id echoed: %q", id)
	}
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `freshet_http_requests_total{code="200",method="GET",route="GET /healthz"}`) {
		t.Fatalf("metrics lack the request counter:\n%.2000s", b)
	}
}

func TestAPIEventsReachTheBus(t *testing.T) {
	s := servertest.Start(t, store.SQLite)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan events.Event, 10)
	sub, err := bus.Subscribe(ctx, s.Bus(), "test-user-events", bus.SubjectRoot+".*.audit.user.>", func(_ context.Context, m bus.Message[events.Event]) error {
		got <- m.Data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	u, err := s.Admin.CreateUser(ctx, client.CreateUserRequest{Email: "evt@first.test", Role: "viewer", Password: "event-password"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-got:
		if e.Action != "user.create" || e.ResourceID != u.ID || e.Result != "success" || e.Actor != s.AdminEmail {
			t.Fatalf("event = %+v", e)
		}
	case <-ctx.Done():
		t.Fatal("no user.create event on the bus")
	}
}
