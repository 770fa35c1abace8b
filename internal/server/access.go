package server

import (
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/freshet-dev/freshet/internal/bus"
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

// watchRevocations ends open streams (httpx.Access) at once when identity reports a change
// that may shrink their caller's access: on this replica directly, on the others over the bus.
// Should the bus lose a message, each replica's periodic re-check still ends the stream within
// httpx.AccessRecheckInterval.
func (s *Server) watchRevocations() error {
	nc := s.bus.Conn()
	if _, err := nc.Subscribe(subjectRevoked, func(m *nats.Msg) {
		var rv revocation
		if err := json.Unmarshal(m.Data, &rv); err != nil {
			s.log.Warn("unreadable revocation", "subject", m.Subject, "err", err)
			return
		}
		s.access.Revoked(rv.Account, rv.User)
	}); err != nil {
		return err
	}
	s.identity.SetRevokeHook(func(accountID, userID string) {
		s.access.Revoked(accountID, userID) // this replica's streams, whatever the bus does
		data, _ := json.Marshal(revocation{Account: accountID, User: userID})
		if err := nc.Publish(subjectRevoked, data); err != nil {
			s.log.Warn("publish revocation", "account", accountID, "user", userID, "err", err)
		}
	})
	return nil
}
