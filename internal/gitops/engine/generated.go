package engine

import (
	"sort"
	"strings"

	"github.com/freshet-dev/freshet/internal/gitops/app"
)

// Applications an ApplicationSet generates. The ApplicationSet controller (package appset)
// creates, updates and removes them; the engine runs them like any application, owned by the
// ApplicationSet: their status names it (Owner, OwnerKind ApplicationSet), an application in
// git cannot take their names and the applications API cannot change them. Their project is
// resolved like an app-of-apps child's.

// appSetOwnerPrefix marks an owner that is an ApplicationSet (application names hold no
// slash, so it never collides with an application owner).
const appSetOwnerPrefix = KindApplicationSet + "/"

// AppSetOwner is the owner string Engine.Owner returns for an application that ApplicationSet
// name generates.
func AppSetOwner(name string) string { return appSetOwnerPrefix + name }

// splitOwner returns an owner's kind and name ("", "" for none).
func splitOwner(owner string) (kind, name string) {
	switch {
	case owner == "":
		return "", ""
	case strings.HasPrefix(owner, appSetOwnerPrefix):
		return KindApplicationSet, strings.TrimPrefix(owner, appSetOwnerPrefix)
	}
	return KindApplication, owner
}

// UpsertGenerated adds or updates an application ApplicationSet appSet generates. An
// application of that name defined in git or owned by another owner is not replaced: the
// error wraps ErrOwned.
func (e *Engine) UpsertGenerated(a *app.Application, appSet string) error {
	return e.upsert(a, nil, AppSetOwner(appSet), nil, 0)
}

// Enqueue asks for a refresh of an application soon (its ApplicationSet child's health
// changed, say).
func (e *Engine) Enqueue(name string) {
	e.mu.Lock()
	_, ok := e.apps[name]
	e.mu.Unlock()
	if ok {
		e.queue.AddAfter(name, e.opts.EventDebounce)
	}
}

// Generated lists, sorted, the applications ApplicationSet appSet generates.
func (e *Engine) Generated(appSet string) []string {
	owner := AppSetOwner(appSet)
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for name, st := range e.apps {
		st.mu.Lock()
		if st.owner == owner {
			out = append(out, name)
		}
		st.mu.Unlock()
	}
	sort.Strings(out)
	return out
}
