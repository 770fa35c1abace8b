package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

var (
	// ErrInvalidSubject is returned for a subject outside SubjectRoot or with empty tokens (and,
	// when publishing, with wildcards).
	ErrInvalidSubject = errors.New("invalid subject")
	// ErrMissingKey is returned by Publish when the idempotency key is empty or not a header value.
	ErrMissingKey = errors.New("missing idempotency key")
)

// Publish marshals v as JSON and publishes it durably on subject, waiting for the stream to store
// it. key is the idempotency key: it is sent as Nats-Msg-Id, so a retried publish within the
// duplicate window is stored once, and it is delivered to subscribers as Message.Key.
func Publish[T any](ctx context.Context, b *Bus, subject, key string, v T) error {
	if err := checkSubject(subject, false); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if key == "" || strings.ContainsAny(key, "\r\n") {
		return fmt.Errorf("publish %s: %w: key %q must be non-empty and on one line", subject, ErrMissingKey, key)
	}
	if b.isClosing() {
		return fmt.Errorf("publish %s: %w", subject, ErrClosed)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("publish %s: encode %T: %w", subject, v, err)
	}
	if _, err := b.js.Publish(ctx, subject, data,
		jetstream.WithMsgID(key),
		jetstream.WithExpectStream(b.opts.Stream),
	); err != nil {
		return fmt.Errorf("publish %s (key %s): %w", subject, key, err)
	}
	return nil
}

// checkSubject accepts SubjectRoot.<token>[.<token>...]; wildcards ('*' tokens, a final '>') only
// when wildcards is set.
func checkSubject(subject string, wildcards bool) error {
	tokens := strings.Split(subject, ".")
	if len(tokens) < 2 || tokens[0] != SubjectRoot {
		return fmt.Errorf("%w %q: must start with %q (freshet.<account>.<domain>.<event>)", ErrInvalidSubject, subject, SubjectRoot+".")
	}
	for i, t := range tokens {
		switch {
		case t == "":
			return fmt.Errorf("%w %q: empty token", ErrInvalidSubject, subject)
		case strings.ContainsAny(t, " \t\r\n"):
			return fmt.Errorf("%w %q: whitespace in token %q", ErrInvalidSubject, subject, t)
		case t == "*" || (t == ">" && i == len(tokens)-1):
			if !wildcards {
				return fmt.Errorf("%w %q: wildcards are not allowed when publishing", ErrInvalidSubject, subject)
			}
		case strings.ContainsAny(t, "*>"):
			return fmt.Errorf("%w %q: '*' and '>' must stand alone as a token ('>' only last)", ErrInvalidSubject, subject)
		}
	}
	return nil
}
