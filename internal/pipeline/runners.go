package pipeline

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/billing"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

var labelRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9._/-]{0,61}[a-zA-Z0-9])?$`)

// validLabel checks one label of a runner or of the runners a pipeline selects, naming field.
func validLabel(field, k, v string) error {
	if !labelRE.MatchString(k) || len(v) > 63 {
		return errdefs.Invalid(field, k+"="+v, "is not a valid label: keys are 1-63 letters, digits, '.', '/', '_' or '-'; values up to 63 characters")
	}
	return nil
}

// RegisterRunner registers a runner in p's account and returns its token, shown once.
func (s *Service) RegisterRunner(ctx context.Context, p rbac.Principal, name string, labels map[string]string) (_ Runner, tok string, err error) {
	e := audit.Start(ctx, p, "runner.register", "runner", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRunners); err != nil {
		return Runner{}, "", err
	}
	if err := validName("name", name); err != nil {
		return Runner{}, "", err
	}
	for k, v := range labels {
		if err := validLabel("labels", k, v); err != nil {
			return Runner{}, "", err
		}
	}
	minted := token.Runner.New()
	now := s.now()
	r := store.Runner{ID: store.NewID(store.PrefixRunner), AccountID: p.AccountID, Name: name, TokenPrefix: minted.ID,
		TokenHash: minted.Hash, Labels: encodeJSON(orEmpty(labels)), Info: "{}", CreatedAt: now}
	e.Resource(r.ID)
	e.Detail("%q", name)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.admit(ctx, tx, p.AccountID, billing.Runners); err != nil {
			return err
		}
		if err := tx.CreateRunner(ctx, r); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return Runner{}, "", err
	}
	out, err := toRunner(r)
	return out, minted.Token, err
}

// ListRunners lists p's account's runners.
func (s *Service) ListRunners(ctx context.Context, p rbac.Principal) ([]Runner, error) {
	if err := rbac.Allow(p, rbac.ReadRunners); err != nil {
		return nil, err
	}
	rows, err := s.db.ListRunners(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := make([]Runner, len(rows))
	for i, r := range rows {
		if out[i], err = toRunner(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DeleteRunner deletes a runner; its token stops working and its connections are closed.
func (s *Service) DeleteRunner(ctx context.Context, p rbac.Principal, ref string) (err error) {
	e := audit.Start(ctx, p, "runner.delete", "runner", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRunners); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		r, err := tx.GetRunner(ctx, p.AccountID, ref)
		if err != nil {
			return err
		}
		e.Resource(r.ID)
		if err := tx.DeleteRunner(ctx, p.AccountID, r.ID); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// DrainRunner asks a runner to take no new builds and finish the ones it runs. drain is the
// dispatcher's Drain.
func (s *Service) DrainRunner(ctx context.Context, p rbac.Principal, ref string, drain func(runnerID string)) (err error) {
	e := audit.Start(ctx, p, "runner.drain", "runner", ref)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageRunners); err != nil {
		return err
	}
	r, err := s.db.GetRunner(ctx, p.AccountID, ref)
	if err != nil {
		return err
	}
	e.Resource(r.ID)
	drain(r.ID)
	return s.db.Tx(ctx, func(tx *store.Tx) error { return e.Commit(ctx, tx) })
}

// AuthenticateRunner resolves a runner token.
func (s *Service) AuthenticateRunner(ctx context.Context, tok string) (Runner, error) {
	unauth := fmt.Errorf("invalid runner token: %w", errdefs.ErrUnauthenticated)
	id, secret, ok := token.Runner.Parse(tok)
	if !ok {
		return Runner{}, unauth
	}
	r, err := s.db.RunnerByPrefix(ctx, id)
	if err != nil || !token.Verify(r.TokenHash, secret) {
		return Runner{}, unauth
	}
	return toRunner(r)
}

// EnsureRunner returns the token of runner name in account, reusing the one saved in
// tokenFile when it still works, and otherwise registering the runner anew (replacing one of
// the same name) and saving its token there with mode 0600. `freshet up` runs its in-process
// runner with it.
func (s *Service) EnsureRunner(ctx context.Context, accountID, name string, labels map[string]string, tokenFile string) (string, error) {
	if b, err := os.ReadFile(tokenFile); err == nil {
		tok := strings.TrimSpace(string(b))
		if r, err := s.AuthenticateRunner(ctx, tok); err == nil && r.AccountID == accountID {
			return tok, nil
		}
	}
	if old, err := s.db.GetRunner(ctx, accountID, name); err == nil {
		if err := s.db.DeleteRunner(ctx, accountID, old.ID); err != nil {
			return "", err
		}
	}
	sys := rbac.Principal{AccountID: accountID, Email: "system", Role: rbac.Admin}
	_, tok, err := s.RegisterRunner(ctx, sys, name, labels)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save runner token: %w", err)
	}
	return tok, nil
}
