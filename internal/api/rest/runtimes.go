package rest

import (
	"github.com/freshet-dev/freshet/internal/version"
	"net/http"

	"github.com/freshet-dev/freshet/client"
	"github.com/freshet-dev/freshet/internal/api/httpx"
	"github.com/freshet-dev/freshet/internal/runtimes"
)

// ToRuntime converts a runtime to its API form.
func ToRuntime(rt runtimes.Runtime) client.Runtime {
	out := client.Runtime{ID: rt.ID, Name: rt.Name, Type: rt.Type, AccessMode: rt.AccessMode, IngressURL: rt.IngressURL, Repo: rt.Repo,
		Version: rt.Version, Status: rt.Status, LastHeartbeat: timePtr(rt.LastHeartbeat), Capabilities: rt.Capabilities,
		GitSources: rt.GitSources, CreatedAt: rt.CreatedAt, OwnerTeam: rt.OwnerTeam}
	for _, c := range rt.Components {
		out.Components = append(out.Components, client.RuntimeComponent{Name: c.Name, Health: c.Health, Message: c.Message, Version: c.Version})
	}
	for _, c := range rt.Clusters {
		out.Clusters = append(out.Clusters, client.RuntimeCluster{Name: c.Name, Server: c.Server, Health: c.Health})
	}
	out.VersionSkew = toVersionSkew(rt.Skew)
	out.TokenExpiresAt = timePtr(rt.TokenExpiresAt)
	if f := rt.Refusal; f != nil {
		out.TokenRefusal = &client.RuntimeRefusal{At: f.At, Kind: f.Kind, Reason: f.Reason, Remote: f.Remote}
	}
	return out
}

func toVersionSkew(s version.Skew) *client.VersionSkew {
	if s.Status == "" {
		return nil
	}
	return &client.VersionSkew{Status: s.Status, Agent: s.Agent, Server: s.Server, Message: s.Message}
}

func (a *API) listRuntimes(w http.ResponseWriter, r *http.Request) error {
	var rts []runtimes.Runtime
	var err error
	if owner := r.URL.Query().Get("owner"); owner != "" {
		rts, err = a.runtimes.ListOwnedBy(r.Context(), principal(r), owner)
	} else {
		rts, err = a.runtimes.List(r.Context(), principal(r))
	}
	if err != nil {
		return err
	}
	out := client.List[client.Runtime]{Items: []client.Runtime{}}
	for _, rt := range rts {
		out.Items = append(out.Items, ToRuntime(rt))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) setRuntimeOwner(w http.ResponseWriter, r *http.Request) error {
	var in client.SetOwnerRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	rt, err := a.runtimes.SetOwner(r.Context(), principal(r), r.PathValue("runtime"), in.Team)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToRuntime(rt))
	return nil
}

func (a *API) getRuntime(w http.ResponseWriter, r *http.Request) error {
	rt, err := a.runtimes.Get(r.Context(), principal(r), r.PathValue("runtime"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ToRuntime(rt))
	return nil
}

func (a *API) registerRuntime(w http.ResponseWriter, r *http.Request) error {
	var in client.RegisterRuntimeRequest
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	rt, token, err := a.runtimes.Register(r.Context(), principal(r), runtimes.RegisterInput{Name: in.Name, AccessMode: in.AccessMode,
		IngressHost: in.IngressHost, Repo: in.Repo, Team: in.Team})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, client.RegisteredRuntime{Runtime: ToRuntime(rt), Token: token})
	return nil
}

func (a *API) createHostedRuntime(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 {
		if err := httpx.DecodeJSON(r, &in); err != nil {
			return err
		}
	}
	rt, err := a.runtimes.CreateHosted(r.Context(), principal(r), in.Name)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusCreated, ToRuntime(rt))
	return nil
}

func (a *API) rotateRuntimeToken(w http.ResponseWriter, r *http.Request) error {
	token, err := a.runtimes.RotateToken(r.Context(), principal(r), r.PathValue("runtime"))
	if err != nil {
		return err
	}
	rt, err := a.runtimes.Get(r.Context(), principal(r), r.PathValue("runtime"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, client.RegisteredRuntime{Runtime: ToRuntime(rt), Token: token})
	return nil
}

func (a *API) deleteRuntime(w http.ResponseWriter, r *http.Request) error {
	if err := a.runtimes.Delete(r.Context(), principal(r), r.PathValue("runtime")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
