package tunnel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// Do sends req to runtime rt through its tunnel on behalf of p and returns the runtime's
// answer, whatever its status; the caller closes the body. It is for control-plane code that
// talks to a runtime itself (the resource tree in GraphQL, push notifications), where
// ProxyHandler serves clients.
//
// The runtime sees the request as it would see a proxied one from p: p's identity in the
// X-Freshet-* headers (any such header in req is dropped, and so are req's Authorization header
// and session cookies), a request ID (ctx's, or a new one), and the path and query of req.URL,
// which are the runtime's own (/app-proxy/api/v1/…); req.URL's scheme and host are not used.
// ctx bounds the whole exchange; req's own context is not used. Do does not authorize: the
// caller has decided that p may reach rt. A runtime without a tunnel here or (with several
// replicas) at any other replica is an error wrapping ErrNotConnected and
// errdefs.ErrUnavailable; so is a replica holding the tunnel that cannot be reached.
func (s *Server) Do(ctx context.Context, rt Runtime, p rbac.Principal, req *http.Request) (*http.Response, error) {
	if rt.ID == "" || req == nil || req.URL == nil {
		return nil, errors.New("tunnel: Do needs a runtime ID and a request with a URL")
	}
	rid := httpx.RequestID(ctx)
	if rid == "" {
		rid = newRequestID()
	}
	h := s.outHeader(req, p, rt, rid, "")
	if req.RemoteAddr == "" { // no client connection to describe
		delete(h, "X-Forwarded-For")
		delete(h, "X-Forwarded-Host")
		delete(h, "X-Forwarded-Proto")
	}
	escPath := req.URL.EscapedPath()
	if escPath == "" {
		escPath = "/"
	}
	var body io.ReadCloser
	if req.Body != nil && req.Body != http.NoBody {
		body = req.Body
	}
	if e := s.reg.lookupID(rt.ID); e != nil {
		host := req.Host
		if host == "" {
			host = "runtime.tunnel"
		}
		out := &http.Request{
			Method:        req.Method,
			URL:           &url.URL{Scheme: "http", Host: "runtime.tunnel", RawQuery: req.URL.RawQuery},
			Header:        h,
			Host:          host,
			ContentLength: req.ContentLength,
			Body:          body,
		}
		setPath(out.URL, escPath)
		resp, tc, done, err := roundTrip(e, rt, out.WithContext(ctx))
		if err != nil {
			done()
			if tc == nil && body != nil {
				body.Close() // never handed to a transport, which would have closed it
			}
			if tc != nil && tc.dead.Load() {
				return nil, notConnected(rt.Name)
			}
			return nil, err
		}
		resp.Body = &doneBody{ReadCloser: resp.Body, done: done}
		return resp, nil
	}
	if _, addr, ok := s.peers.lookupID(rt.ID, time.Now()); ok {
		out, err := s.hopRequest(ctx, req.Method, rt, addr, h, escPath, req.URL.RawQuery, body, req.ContentLength)
		if err != nil {
			return nil, err
		}
		resp, err := s.hop.RoundTrip(out)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, s.hopFailed(rt, addr, err)
		}
		return resp, nil
	}
	if body != nil {
		body.Close()
	}
	return nil, notConnected(rt.Name)
}

// doneBody calls done when the body is closed: the exchange is over.
type doneBody struct {
	io.ReadCloser
	done func()
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}
