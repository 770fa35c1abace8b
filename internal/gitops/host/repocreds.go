package host

import (
	"context"
	"crypto/sha256"
	"encoding/json"

	"github.com/freshet-dev/freshet/internal/gitops/engine"
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

// readSettings reads argocd-cm (Lua health checks, resource tracking) from where the
// repository credentials are kept, when that source keeps it too. changed is false when
// the data is the same as the last read (or the read failed: the last settings stay).
func (h *Host) readSettings(ctx context.Context) (s engine.Settings, changed bool) {
	src, ok := h.opts.RepoCreds.(repocreds.SettingsSource)
	if !ok || src == nil {
		return engine.Settings{}, false
	}
	data, err := src.LoadSettings(ctx)
	if err != nil {
		h.log.Warn("reading argocd-cm failed; the last settings stay in use", "err", err)
		h.mu.Lock()
		h.settingsErrs = []string{err.Error()}
		h.mu.Unlock()
		return engine.Settings{}, false
	}
	raw, _ := json.Marshal(data) // map keys sorted
	sum := sha256.Sum256(raw)
	h.mu.Lock()
	same := h.settingsSum == sum
	h.settingsSum = sum
	h.mu.Unlock()
	if same {
		return engine.Settings{}, false
	}
	s, problems := engine.ParseSettings(data)
	msgs := make([]string, 0, len(problems))
	for _, p := range problems {
		h.log.Warn("argocd-cm", "err", p)
		msgs = append(msgs, p.Error())
	}
	h.mu.Lock()
	h.settingsErrs = msgs
	h.mu.Unlock()
	return s, true
}

// loadSettings reads argocd-cm and hands changed settings to the engine.
func (h *Host) loadSettings(ctx context.Context) {
	if s, changed := h.readSettings(ctx); changed {
		h.eng.SetSettings(s)
	}
}
