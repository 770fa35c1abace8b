package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// WithSSH also serves the repositories over SSH on 127.0.0.1 (see Repo.SSHURL), accepting the
// user "git" with any of the authorized public keys. The server's host key is generated;
// SSHKnownHosts returns the known_hosts line for it.
func WithSSH(authorized ...ssh.PublicKey) Option {
	return func(s *Server) { s.ssh = &sshServer{authorized: authorized} }
}

type sshServer struct {
	authorized []ssh.PublicKey
	hostKey    ssh.Signer
	ln         net.Listener
	wg         sync.WaitGroup
	once       sync.Once
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
}

func (s *Server) startSSH() {
	s.t.Helper()
	x := s.ssh
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	if x.hostKey, err = ssh.NewSignerFromKey(priv); err != nil {
		s.t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if meta.User() != "git" {
				return nil, fmt.Errorf("unknown user %q", meta.User())
			}
			for _, k := range x.authorized {
				if string(k.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("key not authorized")
		},
	}
	cfg.AddHostKey(x.hostKey)
	if x.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		s.t.Fatal(err)
	}
	x.conns = map[net.Conn]struct{}{}
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		for {
			c, err := x.ln.Accept()
			if err != nil {
				return
			}
			x.mu.Lock()
			x.conns[c] = struct{}{}
			x.mu.Unlock()
			x.wg.Add(1)
			go func() {
				defer x.wg.Done()
				s.serveSSH(c, cfg)
				x.mu.Lock()
				delete(x.conns, c)
				x.mu.Unlock()
			}()
		}
	}()
}

func (x *sshServer) close() {
	x.once.Do(func() {
		if x.ln == nil {
			return
		}
		x.ln.Close()
		x.mu.Lock()
		for c := range x.conns {
			c.Close()
		}
		x.mu.Unlock()
		x.wg.Wait()
	})
}

// SSHAddr is the host:port of the SSH endpoint ("" without WithSSH).
func (s *Server) SSHAddr() string {
	if s.ssh == nil || s.ssh.ln == nil {
		return ""
	}
	return s.ssh.ln.Addr().String()
}

// SSHKnownHosts returns a known_hosts line for the SSH endpoint's host key.
func (s *Server) SSHKnownHosts() []byte {
	if s.ssh == nil || s.ssh.ln == nil {
		return nil
	}
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.SSHAddr())}, s.ssh.hostKey.PublicKey()) + "\n")
}

// SSHURL is the repository's ssh:// URL ("" without WithSSH).
func (r *Repo) SSHURL() string {
	if r.s.SSHAddr() == "" {
		return ""
	}
	return "ssh://git@" + r.s.SSHAddr() + "/" + r.name + ".git"
}

func (s *Server) serveSSH(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		s.count(sshStatsKey, func(st *Stats) { st.Unauthorized++ })
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			return
		}
		go s.serveSession(ch, creqs)
	}
}

// sshStatsKey collects SSH handshake failures, which happen before a repository is named.
const sshStatsKey = "(ssh)"

func (s *Server) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				req.Reply(req.Type == "env", nil)
			}
			continue
		}
		if len(req.Payload) < 4 {
			req.Reply(false, nil)
			return
		}
		n := binary.BigEndian.Uint32(req.Payload)
		if int(n) > len(req.Payload)-4 {
			req.Reply(false, nil)
			return
		}
		service, dir, err := s.parseSSHCommand(string(req.Payload[4 : 4+n]))
		if err != nil {
			req.Reply(false, nil)
			fmt.Fprintln(ch.Stderr(), err)
			return
		}
		req.Reply(true, nil)
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.ToSlash(strings.TrimPrefix(dir, s.root)), "/"), ".git")
		s.count(name, func(st *Stats) {
			if service == "upload-pack" {
				st.UploadPacks++
			} else {
				st.ReceivePacks++
			}
		})
		cmd := exec.Command(s.git, service, dir)
		cmd.Env = append(s.gitEnv(), "PATH="+lookPathEnv())
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
		status := uint32(0)
		if err := cmd.Run(); err != nil {
			status = 1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = uint32(ee.ExitCode())
			}
		}
		ch.CloseWrite()
		payload := make([]byte, 4)
		binary.BigEndian.PutUint32(payload, status)
		ch.SendRequest("exit-status", false, payload)
		return
	}
}

// parseSSHCommand accepts "git-upload-pack '/name.git'" (and receive-pack) and returns the git
// subcommand and the repository directory, which must be one of the server's repositories.
func (s *Server) parseSSHCommand(cmdline string) (service, dir string, err error) {
	verb, arg, ok := strings.Cut(cmdline, " ")
	if !ok {
		return "", "", fmt.Errorf("unsupported command %q", cmdline)
	}
	switch verb {
	case "git-upload-pack":
		service = "upload-pack"
	case "git-receive-pack":
		service = "receive-pack"
	default:
		return "", "", fmt.Errorf("unsupported command %q", verb)
	}
	arg = strings.Trim(strings.TrimSpace(arg), "'\"")
	name := strings.TrimSuffix(strings.TrimPrefix(arg, "/"), ".git")
	s.mu.Lock()
	r, ok := s.repos[name]
	s.mu.Unlock()
	if !ok {
		return "", "", fmt.Errorf("repository %q not found", arg)
	}
	return service, r.bare, nil
}
