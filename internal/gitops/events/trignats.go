package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/netpolicy"
)

// natsTimeout bounds a nats trigger's connection and publication.
const natsTimeout = 10 * time.Second

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

// fireNATS publishes the message built from the events on the trigger's subject: one
// connection per execution, through the runtime's network policy, authenticated from the
// Sensor's namespace's Secrets.
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
	opts := []nats.Option{nats.Name("freshet-runtime-sensor " + cs.ns + "/" + cs.name), nats.Timeout(natsTimeout),
		nats.NoReconnect(), nats.SetCustomDialer(policyDialer{ctx: ctx, p: c.opts.Policy})}
	if n.TLS != nil {
		cfg, err := c.tlsConfig(ctx, cs.ns, "nats.tls", n.TLS)
		if err != nil {
			return "", err
		}
		opts = append(opts, nats.Secure(cfg))
	}
	if a := n.Auth; a != nil {
		o, err := c.natsAuth(ctx, cs.ns, a)
		if err != nil {
			return "", err
		}
		opts = append(opts, o)
	}
	shown := redact(n.URL)
	nc, err := nats.Connect(n.URL, opts...)
	if err != nil {
		if netpolicy.IsRefused(err) {
			return "", permanentError{fmt.Errorf("nats: connect to %s: %s", shown, netpolicy.Describe(err))}
		}
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			// The credentials are wrong: retrying the same ones changes nothing.
			return "", permanentError{fmt.Errorf("nats: connect to %s: %v", shown, err)}
		}
		return "", fmt.Errorf("nats: connect to %s: %v", shown, err)
	}
	defer nc.Close()
	if err := nc.Publish(subject, payload); err != nil {
		return "", permanentError{fmt.Errorf("nats: publish on %s: %v", subject, err)}
	}
	if err := nc.FlushWithContext(ctx); err != nil {
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
