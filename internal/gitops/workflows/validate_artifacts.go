package workflows

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/freshet-dev/freshet/internal/errdefs"
)

// Where an artifact list is.
const (
	artsArguments = iota // a step's, a task's or the workflow's arguments
	artsInputs           // a template's inputs
	artsOutputs          // a template's outputs
)

// checkArtifacts checks an artifact list (of template t, nil for arguments) and records its
// names in names.
func checkArtifacts(arts []Artifact, path string, where int, t *Template, names map[string]bool) error {
	leafPod := t != nil && (t.Container != nil || t.Script != nil)
	composite := t != nil && (t.Steps != nil || t.DAG != nil)
	for i := range arts {
		a := &arts[i]
		f := fmt.Sprintf("%s[%d]", path, i)
		if !nameRe.MatchString(a.Name) {
			return errdefs.Invalid(f+".name", a.Name, "must be 1-128 letters, digits, '-' or '_', starting with a letter or digit")
		}
		if names[a.Name] {
			return errdefs.Invalid(f+".name", a.Name, "is given twice")
		}
		names[a.Name] = true
		if a.FromExpression != "" {
			if where == artsInputs || (where == artsOutputs && !composite) {
				return errdefs.Invalid(f+".fromExpression", a.FromExpression, "is for arguments and the outputs of steps and dag templates")
			}
			if a.From != "" || a.HasLocation() {
				return errdefs.Invalid(f+".fromExpression", a.FromExpression, "cannot be given with from or a location")
			}
			if err := checkFromExpression(a.FromExpression); err != nil {
				return errdefs.Invalid(f+".fromExpression", a.FromExpression, err.Error())
			}
		}
		switch {
		case a.SubPath != "":
			return notYet(f+".subPath", "artifact subPath")
		case a.RecurseMode:
			return notYet(f+".recurseMode", "artifact recurseMode")
		case a.ArchiveLogs != nil && *a.ArchiveLogs:
			return notYet(f+".archiveLogs", "archived logs")
		}
		if err := checkLocation(a.ArtifactLocation, f, where); err != nil {
			return err
		}
		if a.From != "" && a.HasLocation() {
			return errdefs.Invalid(f+".from", a.From, "cannot be given with a location (s3, git, http, raw)")
		}
		if a.From != "" && !strings.Contains(a.From, "{{") {
			return errdefs.Invalid(f+".from", a.From, "must be a reference such as {{steps.NAME.outputs.artifacts.NAME}}")
		}
		if a.Mode != nil && (*a.Mode < 0 || *a.Mode > 0o7777) {
			return errdefs.Invalid(f+".mode", strconv.Itoa(int(*a.Mode)), "must be a file mode, 0 to 07777 (in YAML, 0755 is octal)")
		}
		if ar := a.Archive; ar != nil {
			n := 0
			for _, set := range []bool{ar.Tar != nil, ar.None != nil, ar.Zip != nil} {
				if set {
					n++
				}
			}
			if n > 1 {
				return errdefs.Invalid(f+".archive", "", "must give one of tar, none, zip")
			}
			if ar.Tar != nil && ar.Tar.CompressionLevel != nil && (*ar.Tar.CompressionLevel < -1 || *ar.Tar.CompressionLevel > 9) {
				return errdefs.Invalid(f+".archive.tar.compressionLevel", strconv.Itoa(int(*ar.Tar.CompressionLevel)), "must be -1 (gzip's default) to 9")
			}
		}
		if g := a.ArtifactGC; g != nil {
			if err := checkGCStrategy(g.Strategy, f+".artifactGC.strategy"); err != nil {
				return err
			}
		}
		switch where {
		case artsArguments:
			if a.From == "" && a.FromExpression == "" && !a.HasLocation() {
				return errdefs.Invalid(f, a.Name, "must give from, fromExpression or a location (s3, git, http, raw)")
			}
		case artsInputs:
			if a.From != "" {
				return errdefs.Invalid(f+".from", a.From, "is for arguments: a template's input artifact is given by the step or task that calls it")
			}
			if leafPod {
				if err := absPath(a.Path, f+".path"); err != nil {
					return err
				}
			}
		case artsOutputs:
			switch {
			case leafPod:
				if err := absPath(a.Path, f+".path"); err != nil {
					return err
				}
				if a.From != "" {
					return errdefs.Invalid(f+".from", a.From, "is for steps and dag templates: a container's output artifact is read from its path")
				}
			case composite:
				if a.From == "" && a.FromExpression == "" {
					return errdefs.Invalid(f+".from", "", "is required (or fromExpression): the output artifact of a step or task, such as {{steps.NAME.outputs.artifacts.NAME}}")
				}
			default:
				return errdefs.Invalid(f, a.Name, "output artifacts are for container, script, steps and dag templates")
			}
			if a.GlobalName != "" && !nameRe.MatchString(a.GlobalName) {
				return errdefs.Invalid(f+".globalName", a.GlobalName, "must be 1-128 letters, digits, '-' or '_'")
			}
		}
	}
	return nil
}

func absPath(p, field string) error {
	if p == "" {
		return errdefs.Invalid(field, "", "is required: where the artifact is in the container")
	}
	if !strings.HasPrefix(p, "/") && !strings.Contains(p, "{{") {
		return errdefs.Invalid(field, p, "must be an absolute path in the container")
	}
	return nil
}

func checkLocation(l ArtifactLocation, f string, where int) error {
	for _, u := range []struct {
		name string
		set  bool
	}{{"artifactory", isSet(l.Artifactory)}, {"hdfs", isSet(l.HDFS)}, {"oss", isSet(l.OSS)}, {"gcs", isSet(l.GCS)}, {"azure", isSet(l.Azure)}} {
		if u.set {
			return notYet(f+"."+u.name, u.name+" artifacts (s3, git, http and raw are)")
		}
	}
	var kinds []string
	for name, set := range map[string]bool{"s3": l.S3 != nil, "git": l.Git != nil, "http": l.HTTP != nil, "raw": l.Raw != nil} {
		if set {
			kinds = append(kinds, name)
		}
	}
	if len(kinds) > 1 {
		return errdefs.Invalid(f, strings.Join(kinds, ", "), "must give at most one location")
	}
	if where == artsOutputs && (l.Git != nil || l.Raw != nil) {
		return errdefs.Invalid(f, kinds[0], "is an input location: an output artifact is stored in s3 or http (or the artifact repository)")
	}
	if s := l.S3; s != nil {
		if err := checkBucket(&s.S3Bucket, f+".s3"); err != nil {
			return err
		}
		if s.Key == "" && where != artsOutputs {
			return errdefs.Invalid(f+".s3.key", "", "is required")
		}
		if strings.HasPrefix(s.Key, "/") {
			return errdefs.Invalid(f+".s3.key", s.Key, "must not start with /")
		}
	}
	if g := l.Git; g != nil {
		switch {
		case isSet(g.SSHPrivateKeySecret):
			return notYet(f+".git.sshPrivateKeySecret", "git artifacts over ssh (http and https are)")
		case len(g.Fetch) > 0:
			return notYet(f+".git.fetch", "git artifact fetch refspecs")
		case g.SingleBranch || g.Branch != "":
			return notYet(f+".git.branch", "git artifact branch and singleBranch (give the branch as revision)")
		case g.InsecureIgnoreHostKey:
			return notYet(f+".git.insecureIgnoreHostKey", "git artifacts over ssh")
		}
		if err := checkURL(g.Repo, f+".git.repo"); err != nil {
			return err
		}
		if g.Depth != nil && *g.Depth > 1<<20 {
			return errdefs.Invalid(f+".git.depth", strconv.FormatUint(*g.Depth, 10), "must be at most 1048576")
		}
		for _, s := range []struct {
			name string
			sel  *corev1.SecretKeySelector
		}{{"usernameSecret", g.UsernameSecret}, {"passwordSecret", g.PasswordSecret}} {
			if err := checkSecretSel(s.sel, f+".git."+s.name); err != nil {
				return err
			}
		}
	}
	if h := l.HTTP; h != nil {
		if isSet(h.Auth) {
			return notYet(f+".http.auth", "http artifact auth (give an Authorization header)")
		}
		if err := checkURL(h.URL, f+".http.url"); err != nil {
			return err
		}
		for i, hd := range h.Headers {
			if hd.Name == "" || strings.ContainsAny(hd.Name, " :\r\n") || strings.ContainsAny(hd.Value, "\r\n") {
				return errdefs.Invalid(fmt.Sprintf("%s.http.headers[%d]", f, i), hd.Name, "must be a header name (no spaces or colons) and a value on one line")
			}
		}
	}
	if r := l.Raw; r != nil && len(r.Data) > maxRawBytes {
		return errdefs.Invalid(f+".raw.data", fmt.Sprintf("%d bytes", len(r.Data)), fmt.Sprintf("must be at most %d bytes (use s3 or http for more)", maxRawBytes))
	}
	return nil
}

// maxRawBytes bounds a raw artifact: it travels in the pod's spec.
const maxRawBytes = 32 << 10

func checkURL(raw, field string) error {
	if strings.Contains(raw, "{{") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errdefs.Invalid(field, raw, "must be an http or https URL with a host")
	}
	return nil
}

func checkSecretSel(s *corev1.SecretKeySelector, field string) error {
	if s == nil {
		return nil
	}
	if s.Name == "" {
		return errdefs.Invalid(field+".name", "", "is required: the name of a Secret in the workflow's namespace")
	}
	if s.Key == "" {
		return errdefs.Invalid(field+".key", "", "is required: the key of the Secret holding the value")
	}
	return nil
}

func checkBucket(b *S3Bucket, f string) error {
	switch {
	case b.UseSDKCreds:
		return notYet(f+".useSDKCreds", "S3 SDK credentials (give accessKeySecret and secretKeySecret)")
	case b.RoleARN != "":
		return notYet(f+".roleARN", "S3 role ARNs")
	case isSet(b.EncryptionOptions):
		return notYet(f+".encryptionOptions", "S3 encryption options")
	case isSet(b.CASecret):
		return notYet(f+".caSecret", "S3 CA secrets")
	case isSet(b.SessionTokenSecret):
		return notYet(f+".sessionTokenSecret", "S3 session tokens")
	}
	if b.Endpoint != "" && strings.Contains(b.Endpoint, "/") && !strings.Contains(b.Endpoint, "{{") {
		return errdefs.Invalid(f+".endpoint", b.Endpoint, "must be host or host:port (no scheme; insecure: true means plain HTTP)")
	}
	if err := checkSecretSel(b.AccessKeySecret, f+".accessKeySecret"); err != nil {
		return err
	}
	if err := checkSecretSel(b.SecretKeySecret, f+".secretKeySecret"); err != nil {
		return err
	}
	if (b.AccessKeySecret == nil) != (b.SecretKeySecret == nil) {
		return errdefs.Invalid(f+".secretKeySecret", "", "must be given with accessKeySecret (both, or neither for anonymous access)")
	}
	return nil
}

func checkGCStrategy(s, field string) error {
	switch s {
	case "", ArtifactGCOnWorkflowCompletion, ArtifactGCOnWorkflowDeletion, ArtifactGCNever:
		return nil
	}
	return errdefs.Invalid(field, s, "must be OnWorkflowCompletion, OnWorkflowDeletion or Never")
}

// checkArtifactSpec checks spec.artifactGC and spec.artifactRepositoryRef.
func checkArtifactSpec(s *WorkflowSpec, path string) error {
	if g := s.ArtifactGC; g != nil {
		if err := checkGCStrategy(g.Strategy, path+".artifactGC.strategy"); err != nil {
			return err
		}
	}
	if r := s.ArtifactRepositoryRef; r != nil {
		if r.ConfigMap != "" && !dnsName(r.ConfigMap) {
			return errdefs.Invalid(path+".artifactRepositoryRef.configMap", r.ConfigMap, "must be a ConfigMap name")
		}
	}
	return nil
}

func dnsName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || (c == '-' || c == '.') && i > 0 && i < len(s)-1
		if !ok {
			return false
		}
	}
	return true
}
