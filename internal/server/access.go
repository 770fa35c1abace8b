package server

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/bus"
	"github.com/freshet-dev/freshet/internal/rbac"
)

// subjectRevoked carries identity's revocations to every replica (core NATS, not stored): a
// stream is held by the replica the client reached, which need not be the one where the key
// was revoked.
const subjectRevoked = bus.LiveSubjectRoot + ".access.revoked"

// revocation is the message on subjectRevoked: whose access in which account may have shrunk.
type revocation struct {
	Account string `json:"account,omitempty"`
	User    string `json:"user,omitempty"`
}

// watchRevocations ends this replica's open streams (httpx.Access) when another replica reports
// a change that may shrink their caller's access (see revoked). Should the bus lose a message,
// each replica's periodic re-check still ends the stream within httpx.AccessRecheckInterval.
func (s *Server) watchRevocations() error {
	if _, err := s.bus.Conn().Subscribe(subjectRevoked, func(m *nats.Msg) {
		var rv revocation
		if err := json.Unmarshal(m.Data, &rv); err != nil {
			s.log.Warn("unreadable revocation", "subject", m.Subject, "err", err)
			return
		}
		s.access.Revoked(rv.Account, rv.User)
	}); err != nil {
		return err
	}
	return nil
}

// revoked is identity's OnRevoke: it ends this replica's streams of the user at once, whatever
// the bus does, and tells the other replicas.
func (s *Server) revoked(accountID, userID string) {
	s.access.Revoked(accountID, userID)
	data, _ := json.Marshal(revocation{Account: accountID, User: userID})
	if err := s.bus.Conn().Publish(subjectRevoked, data); err != nil {
		s.log.Warn("publish revocation", "account", accountID, "user", userID, "err", err)
	}
}

// describe reads a resource's attributes for authz explain from the domain that holds it. It
// reads s.pipes and s.runtimes when called (by a request, after New built them).
func (s *Server) describe(ctx context.Context, accountID string, k rbac.Kind, name string) (rbac.Resource, error) {
	switch k {
	case rbac.KindRuntimes, rbac.KindApplications:
		return s.runtimes.Resource(ctx, accountID, k, name)
	}
	return s.pipes.Resource(ctx, accountID, k, name)
}
