// Package fakedns answers DNS queries for tests from a table, on a UDP socket on 127.0.0.1, so
// a test can make any name resolve to any address (a name that resolves to 127.0.0.1, or one
// whose answer changes between queries: DNS rebinding) without the network.
//
//	r := fakedns.Start(t, map[string][]string{"evil.example.": {"127.0.0.1"}})
//	addrs, _ := r.Resolver().LookupNetIP(ctx, "ip", "evil.example")
package fakedns

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"context"
	"golang.org/x/net/dns/dnsmessage"
)

// Server is a running fake DNS server.
type Server struct {
	conn *net.UDPConn

	mu      sync.Mutex
	answers map[string][]netip.Addr // by lower-case FQDN
	queries map[string]int
}

// Start serves answers (FQDN or name → addresses) until the test ends. Names not in the table
// are NXDOMAIN.
func Start(t testing.TB, answers map[string][]string) *Server {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{conn: conn, answers: map[string][]netip.Addr{}, queries: map[string]int{}}
	for name, addrs := range answers {
		s.Set(name, addrs...)
	}
	go s.serve()
	t.Cleanup(func() { conn.Close() })
	return s
}

// Set changes the addresses name resolves to from now on.
func (s *Server) Set(name string, addrs ...string) {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	s.mu.Lock()
	s.answers[fqdn(name)] = as
	s.mu.Unlock()
}

// Queries returns how many queries name has had (A and AAAA count separately).
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[fqdn(name)]
}

// Resolver returns a resolver that asks this server only.
func (s *Server) Resolver() *net.Resolver {
	addr := s.conn.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if out := s.answer(buf[:n]); out != nil {
			_, _ = s.conn.WriteToUDP(out, from)
		}
	}
}

func (s *Server) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(q.Name.String())
	s.mu.Lock()
	addrs, known := s.answers[name]
	s.queries[name]++
	s.mu.Unlock()
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	for _, a := range addrs {
		rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			_ = b.AResource(rr, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			_ = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
