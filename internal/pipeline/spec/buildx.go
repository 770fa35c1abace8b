package spec

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Platforms returns the build's platforms (`platform`, comma-separated), without blanks.
func (b *Build) Platforms() []string {
	var out []string
	for p := range strings.SplitSeq(b.Platform, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// buildField compiles the build step's buildx, cache_to, cosign and provider fields.
func (st *stepCompile) buildField(f kv, fp string) {
	c := st.c
	if st.build == nil {
		st.build = &Build{}
		st.s.Build = st.build
	}
	b := st.build
	switch f.name {
	case "buildx":
		b.Buildx = c.compileBuildx(f.val, fp)
	case "cache_to":
		// Codefresh passes each item to the builder as --cache-to; buildah exports the layer
		// cache to one repository.
		refs, ok := c.textList(f.val, fp, true)
		switch {
		case !ok:
		case len(refs) > 1:
			c.errorf(f.val, fp, strings.Join(refs, ","), "names %d cache repositories: Freshet's builder (buildah) exports its cache to one repository, give one", len(refs))
		case len(refs) == 1 && strings.HasPrefix(refs[0], "type="):
			c.errorf(f.val, fp, refs[0], "is a BuildKit cache exporter: Freshet's builder (buildah) exports its cache to a registry repository, give one (registry.example/team/app-cache)")
		case len(refs) == 1:
			b.CacheTo = refs[0]
		}
	case "cosign":
		b.Cosign = c.compileCosign(f.val, fp)
	case "provider":
		c.compileBuildProvider(f.val, fp)
	}
}

// compileBuildx reads buildx: true/false, or {qemu: {image, platforms}, builder: {driver,
// driver_opts}} (as Codefresh checks it). The settings are recorded; Freshet's builders do not
// use them, which a warning says.
func (c *compiler) compileBuildx(v *yaml.Node, fp string) *Buildx {
	if v != nil && v.Kind == yaml.ScalarNode {
		if on, ok := c.boolean(v, fp); ok && on {
			return &Buildx{}
		}
		return nil
	}
	if !c.mapping(v, fp, "true, false or a mapping of qemu and builder") {
		return nil
	}
	bx := &Buildx{}
	sub := map[string][]string{"qemu": {"image", "platforms"}, "builder": {"driver", "driver_opts"}}
	for _, e := range c.entries(v, fp) {
		ep := join(fp, e.name)
		fields, ok := sub[e.name]
		if !ok {
			c.unknownField(e, fp, "buildx", []string{"qemu", "builder"})
			continue
		}
		if isNull(e.val) || !c.mapping(e.val, ep, "a mapping of "+strings.Join(fields, " and ")) {
			continue
		}
		for _, g := range c.entries(e.val, ep) {
			if !slices.Contains(fields, g.name) {
				c.unknownField(g, ep, "buildx."+e.name, fields)
				continue
			}
			s, _ := c.text(g.val, join(ep, g.name))
			switch e.name + "." + g.name {
			case "qemu.image":
				bx.QEMUImage = s
			case "qemu.platforms":
				bx.QEMUPlatforms = s
			case "builder.driver":
				bx.Driver = s
			case "builder.driver_opts":
				bx.DriverOpts = s
			}
			c.warnf(g.key, join(ep, g.name), "", "is not used by Freshet: %s", buildxIgnored[e.name])
		}
	}
	return bx
}

var buildxIgnored = map[string]string{
	"qemu":    "foreign platforms run through the qemu-user-static binfmt handlers registered on the engine's host",
	"builder": "the runner's engine (Podman or buildah) builds every platform itself, without a BuildKit builder",
}

// cosignKeyless are cosign sign options of keyless signing and transparency logs: Fulcio and
// Rekor, which a self-hosted runner cannot reach here.
var cosignKeyless = []string{"fulcio-url", "rekor-url", "identity-token", "oidc-issuer", "oidc-client-id", "oidc-client-secret-file", "oidc-provider", "oidc-redirect-url", "certificate", "certificate-chain", "issue-certificate", "sk", "slot"}

// cosignAccepted are cosign sign options that are accepted without effect.
var cosignAccepted = map[string]string{
	"yes":                     "there is no prompt",
	"allow-insecure-registry": "the registry context's CA decides",
	"allow-http-registry":     "the registry context's URL decides",
	"recursive":               "a multi-platform image's index is signed",
}

// compileCosign reads cosign: {sign: true|false, options: {key: …, …}}. Signing needs a key:
// keyless signing (Fulcio, Rekor) cannot run on a self-hosted runner and is refused.
func (c *compiler) compileCosign(v *yaml.Node, fp string) *Cosign {
	if !c.mapping(v, fp, "a mapping of sign and options") {
		return nil
	}
	var sign bool
	var opts *kv
	for _, e := range c.entries(v, fp) {
		switch e.name {
		case "sign":
			sign, _ = c.boolean(e.val, join(fp, "sign"))
		case "options":
			opts = &e
		default:
			c.unknownField(e, fp, "cosign", []string{"sign", "options"})
		}
	}
	cs := &Cosign{}
	if opts != nil && !isNull(opts.val) && c.mapping(opts.val, join(fp, "options"), "a mapping of cosign sign options (key: ${{COSIGN_PRIVATE_KEY}})") {
		op := join(fp, "options")
		for _, o := range c.entries(opts.val, op) {
			p := join(op, o.name)
			switch {
			case o.name == "key":
				cs.Key, _ = c.text(o.val, p)
				if strings.Contains(cs.Key, "PRIVATE KEY-----") {
					c.warnf(o.val, p, "", "is a private key written in the pipeline file: put it in a secret context and write ${{COSIGN_PRIVATE_KEY}}")
				}
			case o.name == "tlog-upload":
				if up, ok := c.boolean(o.val, p); ok && up {
					c.errorf(o.val, p, "true", "cannot run here: Freshet does not upload to a Rekor transparency log; remove it or set false")
				}
			case slices.Contains(cosignKeyless, o.name):
				c.errorf(o.key, p, "", "is keyless signing (Fulcio/Rekor), which cannot run here: sign with a key (options.key: ${{COSIGN_PRIVATE_KEY}})")
			case cosignAccepted[o.name] != "":
				c.str(o.val, p)
				c.warnf(o.key, p, "", "is not used by Freshet: %s", cosignAccepted[o.name])
			default:
				c.unknownField(o, op, "cosign.options", append([]string{"key", "tlog-upload"}, sortedKeys(cosignAccepted)...))
			}
		}
	}
	if !sign {
		return nil
	}
	if cs.Key == "" {
		c.errorf(v, join(fp, "options.key"), "", "is missing: keyless signing (Fulcio/Rekor) cannot run here; give the private key, e.g. key: ${{COSIGN_PRIVATE_KEY}} from a secret context")
		return nil
	}
	return cs
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// compileBuildProvider checks a build's provider: {type: cf|gcb, arguments: {…}}. cf is
// Codefresh's own builder, which Freshet's runner replaces; gcb (Google Cloud Build) cannot run
// here and is refused.
func (c *compiler) compileBuildProvider(v *yaml.Node, fp string) {
	if !c.mapping(v, fp, "a mapping of type (cf or gcb) and arguments") {
		return
	}
	for _, e := range c.entries(v, fp) {
		ep := join(fp, e.name)
		switch e.name {
		case "type":
			s, ok := c.text(e.val, ep)
			switch {
			case !ok:
			case s == "cf":
				c.warnf(e.val, ep, s, "is not used by Freshet: the runner's engine builds the image")
			case s == "gcb":
				c.errorf(e.val, ep, s, "cannot run here: Freshet does not build on Google Cloud Build; remove provider to build with the runner's engine")
			default:
				c.errorf(e.val, ep, s, "is not a build provider: use cf or gcb")
			}
		case "arguments":
			c.mapping(e.val, ep, "a mapping of the provider's arguments")
		default:
			c.unknownField(e, fp, "a build provider", []string{"type", "arguments"})
		}
	}
}

// finishBuild checks what the build step's fields say together.
func (st *stepCompile) finishBuild(e kv) {
	c, b := st.c, st.build
	if b == nil {
		return
	}
	p := st.s.Path
	multi := len(b.Platforms()) > 1 && !strings.Contains(b.Platform, "${{")
	if multi && b.Buildx == nil {
		c.warnf(e.key, join(p, "platform"), b.Platform, "names several platforms without buildx: true, which Codefresh requires; Freshet builds them all")
	}
	if multi && (len(b.CacheFrom) > 0 || b.CacheTo != "") {
		c.warnf(e.key, join(p, "platform"), b.Platform, "names several platforms: cache_from and cache_to are not used by a multi-platform build (each platform builds without the layer cache)")
	}
	if multi && b.DisablePush {
		c.errorf(e.key, join(p, "disable_push"), "true", "cannot be set on a multi-platform build: its image (an index of one image per platform) exists only in the registry")
	}
	if b.Cosign != nil && b.DisablePush {
		c.errorf(e.key, join(p, "cosign"), "", "signs the pushed image: remove disable_push, or cosign")
	}
}
