package identity

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/internal/audit"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/paging"
	"github.com/freshet-dev/freshet/internal/rbac"
	"github.com/freshet-dev/freshet/internal/store"
	"github.com/freshet-dev/freshet/internal/token"
)

// MinAPIKeyTTL is the shortest lifetime an expiring API key may have: shorter ones are typos
// ("0.5ns", "30ms") that would make a key no one could use — or, rounded to zero, one that
// never expires.
const MinAPIKeyTTL = time.Minute

// CreateAPIKeyInput describes a new API key.
type CreateAPIKeyInput struct {
	Name string
	Role string // empty: the caller's role
	// ExpiresIn is the key's lifetime: nil means DefaultAPIKeyTTL, 0 means it never expires;
	// otherwise at least MinAPIKeyTTL, in whole seconds.
	ExpiresIn *time.Duration
}

const ttlHint = "give a duration of at least 1m in whole seconds, such as 720h or 90m, or 0 for a key that never expires"

// ParseAPIKeyTTL reads an API key's lifetime as the API sends it (a Go duration, field
// expiresIn): "" is the default (nil), a literal zero ("0", "0s") is never, anything else must
// be a whole number of seconds of at least MinAPIKeyTTL. A value that only rounds to zero
// ("0.5ns") is refused rather than taken as never.
func ParseAPIKeyTTL(s string) (*time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, errdefs.Invalid("expiresIn", s, "is not a duration: "+ttlHint)
	}
	if d == 0 && strings.ContainsAny(s, "123456789") {
		return nil, errdefs.Invalid("expiresIn", s, "is shorter than a nanosecond: "+ttlHint)
	}
	if err := checkTTL(s, d); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkTTL refuses negative, sub-second and too-short lifetimes; 0 (never) passes.
func checkTTL(s string, d time.Duration) error {
	switch {
	case d < 0:
		return errdefs.Invalid("expiresIn", s, "is negative: "+ttlHint)
	case d == 0:
		return nil
	case d%time.Second != 0:
		return errdefs.Invalid("expiresIn", s, "is not a whole number of seconds: "+ttlHint)
	case d < MinAPIKeyTTL:
		return errdefs.Invalid("expiresIn", s, "is shorter than 1m: "+ttlHint)
	}
	return nil
}

// CreateAPIKey creates an API key for p's user in p's account and returns it with its token,
// which is not stored and cannot be shown again.
func (s *Service) CreateAPIKey(ctx context.Context, p rbac.Principal, in CreateAPIKeyInput) (_ APIKey, tok string, err error) {
	e := audit.Start(ctx, p, "apikey.create", "apikey", "")
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageAPIKeys); err != nil {
		return APIKey{}, "", err
	}
	if err := validateName("name", in.Name); err != nil {
		return APIKey{}, "", err
	}
	role := p.Role
	if in.Role != "" {
		if role, err = rbac.ParseRole("role", in.Role); err != nil {
			return APIKey{}, "", err
		}
		if !p.Role.AtLeast(role) {
			return APIKey{}, "", fmt.Errorf("role: a key cannot have more than your role (%s): %w", p.Role, errdefs.ErrForbidden)
		}
	}
	ttl := DefaultAPIKeyTTL
	if in.ExpiresIn != nil {
		ttl = *in.ExpiresIn
	}
	if err := checkTTL(ttl.String(), ttl); err != nil {
		return APIKey{}, "", err
	}
	now := s.now()
	minted := token.APIKey.New()
	k := store.APIKey{ID: store.NewID(store.PrefixAPIKey), AccountID: p.AccountID, UserID: p.UserID, Name: in.Name,
		Prefix: minted.ID, SecretHash: minted.Hash, Role: string(role), CreatedAt: now}
	if ttl > 0 {
		k.ExpiresAt = now.Add(ttl)
	}
	e.Resource(k.ID)
	e.Detail("%q role %s prefix %s", in.Name, role, minted.ID)
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateAPIKey(ctx, k); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
	if err != nil {
		return APIKey{}, "", err
	}
	return apiKeyOf(k, now), minted.Token, nil
}

// ListAPIKeys lists the keys of p's account: all of them for admins, their own for others.
func (s *Service) ListAPIKeys(ctx context.Context, p rbac.Principal, page paging.Page) ([]APIKey, error) {
	if err := rbac.Allow(p, rbac.ReadAPIKeys); err != nil {
		return nil, err
	}
	ks, err := s.db.ListAPIKeys(ctx, p.AccountID, ownerFilter(p), page)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]APIKey, len(ks))
	for i, k := range ks {
		out[i] = apiKeyOf(k, now)
	}
	return out, nil
}

// RevokeAPIKey revokes a key of p's account. Non-admins may revoke only their own keys.
func (s *Service) RevokeAPIKey(ctx context.Context, p rbac.Principal, id string) (err error) {
	e := audit.Start(ctx, p, "apikey.revoke", "apikey", id)
	defer func() { s.audit.Finish(ctx, e, err) }()
	if err := rbac.Allow(p, rbac.ManageAPIKeys); err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		k, err := tx.GetAPIKey(ctx, p.AccountID, id)
		if err != nil {
			return err
		}
		if owner := ownerFilter(p); owner != "" && k.UserID != owner {
			return fmt.Errorf("api key %q: %w", id, errdefs.ErrNotFound)
		}
		e.Detail("%q prefix %s", k.Name, k.Prefix)
		if err := tx.RevokeAPIKey(ctx, p.AccountID, id, s.now()); err != nil {
			return err
		}
		return e.Commit(ctx, tx)
	})
}

// ownerFilter returns the user whose keys p may see, or "" for all of the account's keys.
func ownerFilter(p rbac.Principal) string {
	if p.Role.AtLeast(rbac.Admin) {
		return ""
	}
	return p.UserID
}
