package host

import (
	"context"

	"github.com/freshet-dev/freshet/internal/gitops/repocreds"
)

// loadRepoCreds reads the runtime's repository credentials from Options.RepoCreds. A Secret
// that does not parse is left out and reported in Health; when the source itself fails, the
// credentials read before stay in use.
func (h *Host) loadRepoCreds(ctx context.Context) {
	if h.opts.RepoCreds == nil {
		return
	}
	set, problems, err := h.opts.RepoCreds.Load(ctx)
	var msgs []string
	if err != nil {
		h.log.Warn("reading repository credentials failed; the last ones read stay in use", "err", err)
		msgs = append(msgs, err.Error())
	} else {
		h.repoCreds.Store(set)
	}
	for _, p := range problems {
		h.log.Warn("repository credential left out", "err", p)
		msgs = append(msgs, p.Error())
	}
	h.mu.Lock()
	h.credErrs = msgs
	h.mu.Unlock()
}

// RepoCreds is the repository credentials read last (nil before any).
func (h *Host) RepoCreds() *repocreds.Set { return h.repoCreds.Load() }
