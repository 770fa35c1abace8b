package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/runtimes"
	"github.com/freshet-dev/freshet/internal/store"
)

// maxCreateBody is the most of a create's body read to find the name of what it creates: the
// app-proxy refuses bodies larger than 1 MiB.
const maxCreateBody = 1 << 20

// checkAppProxyLimits admits, before the request reaches the runtime, an application or a
// managed cluster created through runtime rt's app-proxy: billing.Reserve counts, under the
// account's plan row lock, what the runtimes reported plus the creations admitted and not yet
// reported, and refuses with 402 when one more would pass the plan's limit. An admitted create
// holds a reservation (recorded in r's appProxyReservation, see reserving) until the runtime
// reports the object; it is released when the runtime does not answer 2xx. The object's name
// is read from the body, which is then forwarded as it came. Requests that create nothing pass.
func (s *Server) checkAppProxyLimits(r *http.Request, p rbac.Principal, rtID, rtName, path string) error {
	if r.Method != http.MethodPost {
		return nil
	}
	if path == appProxyGraphQL {
		return s.checkAppProxyGraphQL(r, p)
	}
	kind, action, name, ok := appProxyOperation(r.Method, path)
	if !ok || action != rbac.ActCreate || name != "" {
		return nil
	}
	c := billing.Claim{RuntimeID: rtID, Runtime: rtName, By: p.UserID}
	switch kind {
	case rbac.KindApplications:
		c.Resource = billing.Applications
	case rbac.KindClusters:
		c.Resource = billing.ClustersPerRuntime
		c.Reported = func(ctx context.Context, tx *store.Tx) ([]string, error) {
			return runtimes.ManagedClusters(ctx, tx, p.AccountID, rtID)
		}
	default:
		return nil
	}
	body, err := peekBody(r, maxCreateBody)
	if err != nil {
		return err
	}
	c.Name = createdName(kind, body)
	id, err := s.billing.Reserve(r.Context(), p.AccountID, c)
	if err != nil {
		return err
	}
	if hold, ok := r.Context().Value(reservationKey{}).(*appProxyReservation); ok {
		hold.accountID, hold.id = p.AccountID, id
	} else if id != "" {
		// Not served through reserving: nobody would release it on a refusal; it expires.
		s.log.Warn("app-proxy limit reservation without a holder", "reservation", id)
	}
	return nil
}

// appProxyGraphQL is the app-proxy's GraphQL endpoint under a runtime's path.
const appProxyGraphQL = "/app-proxy/api/graphql"

// checkAppProxyGraphQL refuses the app-proxy GraphQL's createApplication while the account's
// plan limits applications: a GraphQL request may create several applications under aliases
// and variables, so creates are admitted (reserved) through the REST API only. The query is
// read as the runtime reads it (the first JSON value of the body, at most 1 MiB, its "query"
// field), and a field can only be named literally in it, so no create passes unseen; a body
// that does not decode passes, for the runtime refuses it too.
func (s *Server) checkAppProxyGraphQL(r *http.Request, p rbac.Principal) error {
	limited, err := s.billing.Limited(r.Context(), p.AccountID, billing.Applications)
	if err != nil || !limited {
		return err
	}
	body, err := peekBody(r, maxCreateBody)
	if err != nil {
		return err
	}
	var req struct {
		Query string `json:"query"`
	}
	if json.NewDecoder(bytes.NewReader(body)).Decode(&req) != nil {
		return nil
	}
	if strings.Contains(req.Query, "createApplication") {
		return errdefs.Invalid("query", "createApplication", "is not taken through the app-proxy's GraphQL while the account's plan limits applications: "+
			"create the application with POST /runtimes/{runtime}/app-proxy/api/v1/applications, which the limit admits")
	}
	return nil
}

// peekBody reads up to max bytes of r's body and puts them back in front of the rest, so the
// request is forwarded whole.
func peekBody(r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, max))
	if err != nil {
		return nil, err
	}
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	return head, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// createdName is the name of what a create through the app-proxy makes, as the runtime will
// report it: an application's metadata.name (its body is an Application manifest, YAML or
// JSON), a cluster credential's name. A body it cannot read gives "": the runtime refuses
// such a body too (and the reservation is released), or, should it accept what this cannot
// read, the reservation counts until it expires.
func createdName(kind rbac.Kind, body []byte) string {
	switch kind {
	case rbac.KindApplications:
		var a struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(body, &a) != nil {
			return ""
		}
		return a.Metadata.Name
	case rbac.KindClusters:
		var c struct {
			Name string `json:"name"`
		}
		// The runtime decodes the first JSON value of the body, as this does.
		if json.NewDecoder(bytes.NewReader(body)).Decode(&c) != nil {
			return ""
		}
		return c.Name
	}
	return ""
}

// appProxyReservation is the limit reservation an app-proxy create was admitted with.
type appProxyReservation struct {
	accountID, id string
}

type reservationKey struct{}

// reserving serves the tunnel's proxy handler so that a create admitted with a limit
// reservation (checkAppProxyLimits) gives it back when the runtime refuses it (an answer
// other than 2xx) or cannot be reached (502, 504): nothing was created. A 2xx answer keeps it
// until the runtime reports the object or it expires; so does a request whose caller went
// away before any answer (the runtime may have created the object).
func (s *Server) reserving(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		hold := &appProxyReservation{}
		rec := &statusRecorder{ResponseWriter: w}
		r = r.WithContext(context.WithValue(r.Context(), reservationKey{}, hold))
		defer func() {
			if hold.id == "" || rec.status == 0 || rec.status/100 == 2 {
				return
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
			defer cancel()
			if err := s.billing.Release(ctx, hold.accountID, hold.id); err != nil {
				s.log.Warn("release an app-proxy limit reservation (it expires)", "reservation", hold.id, "err", err)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// statusRecorder records the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush and Hijack.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
