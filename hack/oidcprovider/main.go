// Command oidcprovider runs an OpenID Connect provider on 127.0.0.1 for the browser tests
// (web/e2e): the provider of github.com/oauth2-proxy/mockoidc — discovery, a JWKS, the
// authorization-code flow with PKCE, signed ID tokens — which the Go tests of single sign-on
// use in-process. It prints one JSON line on stdout,
//
//	{"issuer":"http://127.0.0.1:PORT/oidc","clientId":"…","clientSecret":"…","control":"http://127.0.0.1:PORT2"}
//
// and serves until stdin closes or it is signalled. The provider logs in whoever it is told to:
// `POST <control>/_test/users {"email","name","emailVerified","groups"}` queues the person the
// next authorization request logs in (without one queued, mockoidc's default user).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/oauth2-proxy/mockoidc"
)

type user struct {
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	EmailVerified *bool    `json:"emailVerified"`
	Groups        []string `json:"groups"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oidcprovider:", err)
		os.Exit(1)
	}
}

func run() error {
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := m.Start(ln, nil); err != nil {
		return err
	}
	defer m.Shutdown()
	// The control endpoint is a listener of its own: mockoidc's mux serves only its endpoints.
	cln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_test/users", func(w http.ResponseWriter, r *http.Request) {
		var u user
		if json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&u) != nil || u.Email == "" {
			http.Error(w, `POST a JSON body {"email": …, "name": …, "emailVerified": true, "groups": […]}`, http.StatusBadRequest)
			return
		}
		verified := u.EmailVerified == nil || *u.EmailVerified
		m.QueueUser(&mockoidc.MockUser{Subject: u.Email, Email: u.Email, EmailVerified: verified, PreferredUsername: u.Name, Groups: u.Groups})
		w.WriteHeader(http.StatusNoContent)
	})
	go func() { _ = http.Serve(cln, mux) }()
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{"issuer": m.Issuer(), "clientId": m.ClientID, "clientSecret": m.ClientSecret,
		"control": "http://" + cln.Addr().String()}); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-stop:
	case <-eof:
	}
	return nil
}
