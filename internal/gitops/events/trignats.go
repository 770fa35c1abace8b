package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// natsTimeout bounds a nats trigger's connection and publication.
const natsTimeout = 10 * time.Second

// maxNATSConns bounds the connections a Sensor keeps (one per server and credentials);
// beyond, an execution connects for itself and closes after.
const maxNATSConns = 16

// natsPool are a Sensor's nats triggers' connections, kept between executions: one per URL
// and TLS/auth settings, made at the first execution that needs it, made again after it
// closed (no reconnection of its own: the next execution connects), all closed when the
// Sensor's run stops (the Sensor deleted or changed, the runtime stopping).
type natsPool struct {
	mu     sync.Mutex
	conns  map[string]*nats.Conn
	closed bool
}

// get is the kept connection of key, or a new one from dial, kept when there is room; keep
// false: the caller closes it after use.
func (p *natsPool) get(key string, dial func() (*nats.Conn, error)) (nc *nats.Conn, keep bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if nc := p.conns[key]; nc != nil {
		if !nc.IsClosed() && nc.IsConnected() {
			return nc, true, nil
		}
		nc.Close()
		delete(p.conns, key)
	}
	// Connecting under the lock: a Sensor's events are handled one at a time anyway.
	nc, err = dial()
	if err != nil {
		return nil, false, err
	}
	if p.closed || len(p.conns) >= maxNATSConns {
		return nc, false, nil
	}
	if p.conns == nil {
		p.conns = map[string]*nats.Conn{}
	}
	p.conns[key] = nc
	return nc, true, nil
}

// drop closes key's connection, if it is nc (after it failed).
func (p *natsPool) drop(key string, nc *nats.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[key] == nc {
		delete(p.conns, key)
	}
	nc.Close()
}

// close closes every connection; the pool keeps none after.
func (p *natsPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for k, nc := range p.conns {
		nc.Close()
		delete(p.conns, k)
	}
}

// size is how many connections are kept.
func (p *natsPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// checkSubject checks a subject to publish on: tokens of printable characters without
// wildcards, separated by dots.
func checkSubject(f, s string) error {
	if s == "" || len(s) > 1000 {
		return errdefs.Invalid(f, s, "is required: the subject to publish on (e.g. orders.created)")
	}
	for _, tok := range strings.Split(s, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return errdefs.Invalid(f, s, "is not a subject to publish on: dot-separated tokens, no spaces and no wildcards (* or >)")
		}
	}
	return nil
}

func validateNATSTrigger(f string, n *NATSTrigger, deps map[string]bool) error {
	if n.URL == "" {
		return errdefs.Invalid(f+".url", "", "is required (nats://host:4222)")
	}
	if _, err := natsURLs(f+".url", n.URL); err != nil {
		return err
	}
	if err := checkSubject(f+".subject", n.Subject); err != nil {
		return err
	}
	if len(n.Payload) == 0 {
		return errdefs.Invalid(f+".payload", "", "is required: the parameters the message is built from (as Argo, a nats trigger without them fails)")
	}
	if err := checkParams(f+".payload", n.Payload, deps, false); err != nil {
		return err
	}
	if err := checkParameters(f+".parameters", n.Parameters, deps); err != nil {
		return err
	}
	if err := checkTLS(f+".tls", n.TLS); err != nil {
		return err
	}
	return checkNATSAuth(f+".auth", n.Auth)
}

// fireNATS publishes the message built from the events on the trigger's subject, on the
// Sensor's kept connection to the server (made through the runtime's network policy,
// authenticated from the Sensor's namespace's Secrets when it is made).
func (c *Controller) fireNATS(ctx context.Context, cs *compiledSensor, t *compiledTrigger, n *NATSTrigger) (string, error) {
	subject := n.Subject // as Argo: parameters do not change the subject
	if len(n.Parameters) > 0 {
		var nn NATSTrigger
		if err := withParams("nats.parameters", n, n.Parameters, t.have, &nn); err != nil {
			return "", permanentError{err}
		}
		n = &nn
		if _, err := natsURLs("nats.url", n.URL); err != nil {
			return "", permanentError{fmt.Errorf("once the parameters are set: %w", err)}
		}
	}
	for _, one := range strings.Split(n.URL, ",") {
		if err := c.opts.Policy.CheckServerURL("nats.url", redact(strings.TrimSpace(one))); err != nil {
			return "", permanentError{err}
		}
	}
	payload, err := buildPayload("nats.payload", n.Payload, t.have)
	if err != nil {
		return "", permanentError{err}
	}
	ctx, cancel := context.WithTimeout(ctx, natsTimeout)
	defer cancel()
	// The connection is kept per server and per TLS and auth settings (the Secrets' names,
	// not their values: a changed Secret is read at the next connection).
	settings, _ := json.Marshal(struct {
		TLS  *TLSConfig
		Auth *NATSAuth
	}{n.TLS, n.Auth})
	key := n.URL + "\x00" + string(settings)
	shown := redact(n.URL)
	nc, keep, err := cs.nats.get(key, func() (*nats.Conn, error) {
		// The dialer's context outlives this execution's: a kept connection is not tied to it.
		opts := []nats.Option{nats.Name("freshet-runtime-sensor " + cs.ns + "/" + cs.name), nats.Timeout(natsTimeout),
			nats.NoReconnect(), nats.SetCustomDialer(policyDialer{ctx: context.WithoutCancel(ctx), p: c.opts.Policy})}
		if n.TLS != nil {
			cfg, err := c.tlsConfig(ctx, cs.ns, "nats.tls", n.TLS)
			if err != nil {
				return nil, natsOptError{err}
			}
			opts = append(opts, nats.Secure(cfg))
		}
		if a := n.Auth; a != nil {
			o, err := c.natsAuth(ctx, cs.ns, a)
			if err != nil {
				return nil, natsOptError{err}
			}
			opts = append(opts, o)
		}
		return nats.Connect(n.URL, opts...)
	})
	if err != nil {
		var oe natsOptError
		if errors.As(err, &oe) {
			return "", oe.error // reading the TLS or auth Secrets
		}
		if netpolicy.IsRefused(err) {
			return "", permanentError{fmt.Errorf("nats: connect to %s: %s", shown, netpolicy.Describe(err))}
		}
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			// The credentials are wrong: retrying the same ones changes nothing.
			return "", permanentError{fmt.Errorf("nats: connect to %s: %v", shown, err)}
		}
		return "", fmt.Errorf("nats: connect to %s: %v", shown, err)
	}
	if !keep {
		defer nc.Close()
	}
	if err := nc.Publish(subject, payload); err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting) {
			cs.nats.drop(key, nc)
			return "", fmt.Errorf("nats: publish on %s at %s: %v", subject, shown, err)
		}
		return "", permanentError{fmt.Errorf("nats: publish on %s: %v", subject, err)}
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		cs.nats.drop(key, nc) // the next attempt connects again
		return "", fmt.Errorf("nats: publish on %s at %s: %v", subject, shown, err)
	}
	return fmt.Sprintf("published %d bytes on %s at %s", len(payload), subject, shown), nil
}

// natsAuth is the connection option of a nats trigger's auth.
func (c *Controller) natsAuth(ctx context.Context, ns string, a *NATSAuth) (nats.Option, error) {
	switch {
	case a.Basic != nil:
		var user, pass string
		var err error
		if a.Basic.Username != nil {
			if user, err = c.readSecret(ctx, ns, *a.Basic.Username); err != nil {
				return nil, fmt.Errorf("nats.auth.basic.username: %w", err)
			}
		}
		if a.Basic.Password != nil {
			if pass, err = c.readSecret(ctx, ns, *a.Basic.Password); err != nil {
				return nil, fmt.Errorf("nats.auth.basic.password: %w", err)
			}
		}
		return nats.UserInfo(user, pass), nil
	case a.Token != nil:
		tok, err := c.readSecret(ctx, ns, *a.Token)
		if err != nil {
			return nil, fmt.Errorf("nats.auth.token: %w", err)
		}
		return nats.Token(tok), nil
	case a.NKey != nil:
		seed, err := c.readSecret(ctx, ns, *a.NKey)
		if err != nil {
			return nil, fmt.Errorf("nats.auth.nkey: %w", err)
		}
		kp, err := nkeys.FromSeed([]byte(seed))
		if err != nil {
			return nil, permanentError{fmt.Errorf("nats.auth.nkey: secret %s key %s is not an NKey seed", a.NKey.Name, a.NKey.Key)}
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, permanentError{fmt.Errorf("nats.auth.nkey: %v", err)}
		}
		return nats.Nkey(pub, kp.Sign), nil
	default:
		creds, err := c.readSecret(ctx, ns, *a.Credential)
		if err != nil {
			return nil, fmt.Errorf("nats.auth.credential: %w", err)
		}
		jwt, err := nkeys.ParseDecoratedJWT([]byte(creds))
		if err != nil {
			return nil, permanentError{fmt.Errorf("nats.auth.credential: secret %s key %s holds no user JWT", a.Credential.Name, a.Credential.Key)}
		}
		kp, err := nkeys.ParseDecoratedNKey([]byte(creds))
		if err != nil {
			return nil, permanentError{fmt.Errorf("nats.auth.credential: secret %s key %s holds no NKey seed", a.Credential.Name, a.Credential.Key)}
		}
		return nats.UserJWT(func() (string, error) { return jwt, nil }, kp.Sign), nil
	}
}

// natsOptError is a failure to make a connection's options (its Secrets), told apart from a
// failure to connect.
type natsOptError struct{ error }
