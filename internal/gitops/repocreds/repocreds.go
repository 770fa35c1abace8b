// Package repocreds reads repository credentials as Argo CD keeps them, so a team moving to
// Freshet brings its repository Secrets unchanged: Secrets labelled
// argocd.argoproj.io/secret-type: repository (one repository, matched by URL) and repo-creds
// (a credential template, matched by the longest URL prefix), with Argo CD's keys (url, type,
// name, project, username, password, bearerToken, sshPrivateKey, tlsClientCertData,
// tlsClientCertKey, insecure, insecureIgnoreHostKey, enableOCI, insecureOCIForceHttp), and
// the ConfigMap argocd-tls-certs-cm (PEM CA certificates by repository host name).
//
// A Set answers "which credentials reach this URL" for git repositories, Helm chart
// repositories and OCI registries alike, and "which repository has this name" for chart
// dependencies written @name or alias:name. Secret values never appear in errors.
package repocreds

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/gitops/git"
	"github.com/freshet-dev/freshet/internal/repourl"
)

// Argo CD's names.
const (
	SecretTypeLabel   = "argocd.argoproj.io/secret-type"
	TypeRepository    = "repository"
	TypeRepoCreds     = "repo-creds"
	TLSCertsConfigMap = "argocd-tls-certs-cm"
)

// Entry is one repository Secret or credential template.
type Entry struct {
	Secret   string // the Secret's name, for messages
	Template bool   // repo-creds: applies to every URL with URL as prefix
	URL      string
	Type     string // git (default), helm or oci
	Name     string // for Helm dependencies written @name / alias:name
	Project  string // Argo CD scopes credentials to a project; kept for display
	Creds    git.Credentials
}

// hasCreds reports whether the entry carries credentials of its own (Argo CD then does not
// apply a template to it).
func (e *Entry) hasCreds() bool {
	c := e.Creds
	return c.Username != "" || c.Password != "" || c.Token != "" || len(c.SSHPrivateKey) > 0 || len(c.TLSClientCert) > 0
}

// maxValue bounds one value of a Secret.
const maxValue = 1 << 20

// FromSecret reads one Secret's data (stringData already merged in). secretType is its
// argocd.argoproj.io/secret-type label.
func FromSecret(name, secretType string, data map[string][]byte) (*Entry, error) {
	field := func(k string) string { return "secret " + name + ": " + k }
	e := &Entry{Secret: name}
	switch secretType {
	case TypeRepository:
	case TypeRepoCreds:
		e.Template = true
	default:
		return nil, errdefs.Invalid("secret "+name+": metadata.labels."+SecretTypeLabel, secretType, "want repository or repo-creds")
	}
	for k, v := range data {
		if len(v) > maxValue {
			return nil, errdefs.Invalid(field(k), "", fmt.Sprintf("is larger than %d bytes", maxValue))
		}
	}
	str := func(k string) string { return strings.TrimSpace(string(data[k])) }
	boolean := func(k string) (bool, error) {
		s := str(k)
		if s == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, errdefs.Invalid(field(k), s, `want "true" or "false"`)
		}
		return b, nil
	}
	e.URL = str("url")
	e.Type = strings.ToLower(str("type"))
	e.Name, e.Project = str("name"), str("project")
	if e.URL == "" {
		return nil, errdefs.Invalid(field("url"), "", "is required: the repository's URL (or, for repo-creds, the URL prefix it applies to)")
	}
	if strings.ContainsAny(e.URL, " \t\r\n") {
		return nil, errdefs.Invalid(field("url"), redact(e.URL), "must not contain spaces")
	}
	if u, err := url.Parse(e.URL); err == nil && u.User != nil {
		if _, hasPW := u.User.Password(); hasPW {
			return nil, errdefs.Invalid(field("url"), redact(e.URL), "must not carry a password; give it in the password key")
		}
	}
	switch e.Type {
	case "":
		e.Type = "git"
	case "git", "helm", "oci":
	default:
		return nil, errdefs.Invalid(field("type"), e.Type, "want git, helm or oci")
	}
	c := &e.Creds
	c.Username, c.Password = string(data["username"]), string(data["password"])
	c.Token = string(data["bearerToken"])
	c.SSHPrivateKey = data["sshPrivateKey"]
	c.TLSClientCert, c.TLSClientKey = data["tlsClientCertData"], data["tlsClientCertKey"]
	var err error
	if c.InsecureSkipTLSVerify, err = boolean("insecure"); err != nil {
		return nil, err
	}
	if c.InsecureIgnoreHostKey, err = boolean("insecureIgnoreHostKey"); err != nil {
		return nil, err
	}
	if c.OCI, err = boolean("enableOCI"); err != nil {
		return nil, err
	}
	if c.OCIPlainHTTP, err = boolean("insecureOCIForceHttp"); err != nil {
		return nil, err
	}
	if e.Type == "oci" || strings.HasPrefix(e.URL, "oci://") {
		c.OCI = true
	}
	if (len(c.TLSClientCert) > 0) != (len(c.TLSClientKey) > 0) {
		return nil, errdefs.Invalid(field("tlsClientCertData"), "", "tlsClientCertData and tlsClientCertKey go together: give both or neither")
	}
	if len(c.TLSClientCert) > 0 {
		if _, err := tls.X509KeyPair(c.TLSClientCert, c.TLSClientKey); err != nil {
			return nil, errdefs.Invalid(field("tlsClientCertData"), "", "with tlsClientCertKey is not a PEM certificate and its PEM private key")
		}
	}
	if len(c.SSHPrivateKey) > 0 {
		if b, _ := pem.Decode(c.SSHPrivateKey); b == nil {
			return nil, errdefs.Invalid(field("sshPrivateKey"), "", "is not a PEM private key")
		}
	}
	return e, nil
}

// Set is the runtime's repository credentials.
type Set struct {
	repos     map[string]*Entry // by normalised URL
	templates []*Entry          // longest prefix first
	byName    map[string]*Entry
	cas       map[string][]byte // PEM by lower-case host name
}

// NewSet indexes entries; caByHost is argocd-tls-certs-cm's data (PEM by host name). When two
// entries name the same URL, the one of the Secret whose name sorts first is used.
func NewSet(entries []*Entry, caByHost map[string]string) *Set {
	s := &Set{repos: map[string]*Entry{}, byName: map[string]*Entry{}, cas: map[string][]byte{}}
	sorted := append([]*Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Secret < sorted[j].Secret })
	for _, e := range sorted {
		if e.Template {
			s.templates = append(s.templates, e)
			continue
		}
		k := normalize(e.URL)
		if _, dup := s.repos[k]; !dup {
			s.repos[k] = e
		}
		if e.Name != "" {
			if _, dup := s.byName[e.Name]; !dup {
				s.byName[e.Name] = e
			}
		}
	}
	sort.SliceStable(s.templates, func(i, j int) bool { return len(normalize(s.templates[i].URL)) > len(normalize(s.templates[j].URL)) })
	for host, pemData := range caByHost {
		s.cas[strings.ToLower(strings.TrimSpace(host))] = []byte(pemData)
	}
	return s
}

// Len is the number of repositories and templates.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.repos) + len(s.templates)
}

// Lookup returns the credentials for the repository at rawURL: its repository Secret's,
// with those of the longest matching credential template when the Secret has none of its own
// (or there is no Secret), and the CA certificates argocd-tls-certs-cm has for its host.
// found is false when nothing matched.
func (s *Set) Lookup(rawURL string) (c git.Credentials, found bool) {
	if s == nil {
		return git.Credentials{}, false
	}
	key := normalize(rawURL)
	repo := s.repos[key]
	if repo != nil {
		c, found = repo.Creds, true
	}
	if repo == nil || !repo.hasCreds() {
		for _, t := range s.templates {
			if strings.HasPrefix(key, normalize(t.URL)) {
				oci, plain, insecure := c.OCI, c.OCIPlainHTTP, c.InsecureSkipTLSVerify
				c = t.Creds
				c.OCI, c.OCIPlainHTTP, c.InsecureSkipTLSVerify = c.OCI || oci, c.OCIPlainHTTP || plain, c.InsecureSkipTLSVerify || insecure
				found = true
				break
			}
		}
	}
	if ca := s.cas[host(rawURL)]; len(ca) > 0 {
		c.CABundle = append(append([]byte(nil), c.CABundle...), ca...)
		found = true
	}
	return c, found
}

// ByName returns the repository Secret whose name key is name (Helm dependencies written
// "@name" or "alias:name").
func (s *Set) ByName(name string) (*Entry, bool) {
	if s == nil {
		return nil, false
	}
	e, ok := s.byName[name]
	return e, ok
}

// normalize is the form URLs are compared in: git URLs as repourl normalises them, others
// without scheme "oci://", trailing "/" and with a lower-case host.
func normalize(raw string) string {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "oci://") && strings.Contains(raw, "://") || strings.HasPrefix(raw, "git@") {
		if n, err := repourl.Normalize(raw); err == nil {
			return n
		}
	}
	raw = strings.TrimPrefix(raw, "oci://")
	raw = strings.TrimSuffix(raw, "/")
	if i := strings.Index(raw, "/"); i >= 0 {
		return strings.ToLower(raw[:i]) + raw[i:]
	}
	return strings.ToLower(raw)
}

// host is rawURL's host name, lower case, without port.
func host(raw string) string {
	raw = strings.TrimPrefix(strings.TrimSpace(raw), "oci://")
	if !strings.Contains(raw, "://") {
		if at := strings.Index(raw, "@"); at >= 0 && strings.HasPrefix(raw, "git@") { // scp-like git@host:path
			h, _, _ := strings.Cut(raw[at+1:], ":")
			return strings.ToLower(h)
		}
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func redact(raw string) string { return repourl.Redact(raw) }

// ParseCAs checks argocd-tls-certs-cm's data: each value must hold PEM certificates.
func ParseCAs(data map[string]string) (map[string]string, []error) {
	out := map[string]string{}
	var errs []error
	for h, v := range data {
		if !x509.NewCertPool().AppendCertsFromPEM([]byte(v)) {
			errs = append(errs, errdefs.Invalid("configmap "+TLSCertsConfigMap+": data."+h, "", "holds no PEM certificate"))
			continue
		}
		out[h] = v
	}
	return out, errs
}
