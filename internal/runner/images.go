package runner

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/freshet-dev/freshet/api/runnerv1"
	"github.com/freshet-dev/freshet/internal/errdefs"
	"github.com/freshet-dev/freshet/internal/pipeline/spec"
	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// DefaultImageTag is the tag a build step gives its image when it names none (Codefresh's
// default: the branch, normalized for a tag).
const DefaultImageTag = "${{CF_BRANCH_TAG_NORMALIZED}}"

// DefaultPushTag is the tag a push step pushes when it names none.
const DefaultPushTag = "latest"

// lint lists, one line each, the steps this runner's executor cannot run at all: build and push
// steps need an image builder, services need service containers. The build fails with them
// before any step runs.
func (e *engine) lint() []string {
	_, builds := e.exec.(executor.ImageBuilder)
	_, services := e.exec.(executor.ServiceRunner)
	var problems []string
	if e.p.Services != nil && len(e.p.Services.Composition) > 0 && !services {
		problems = append(problems, fmt.Sprintf("services (the pipeline's, image %s) need a container engine: the %s executor of this runner runs no containers",
			e.p.Services.Composition[0].Image, e.exec.Name()))
	}
	e.p.Walk(func(st *spec.Step) bool {
		switch {
		case (st.Type == spec.TypeBuild || st.Type == spec.TypePush) && !builds:
			problems = append(problems, fmt.Sprintf("step %s: a %s step needs a container engine to build and push images: the %s executor of this runner has none (run this pipeline on a runner with --executor container)",
				st.Name, st.Type, e.exec.Name()))
		case st.Services != nil && len(st.Services.Composition) > 0 && !services:
			problems = append(problems, fmt.Sprintf("step %s: its services (image %s) need a container engine: the %s executor of this runner runs no containers",
				st.Name, st.Services.Composition[0].Image, e.exec.Name()))
		case (st.Type == spec.TypeComposition || st.Type == spec.TypeLaunchComposition) && !services:
			problems = append(problems, fmt.Sprintf("step %s: a %s step needs a container engine to run its containers on a network of their own: the %s executor of this runner has none (run this pipeline on a runner with --executor container)",
				st.Name, st.Type, e.exec.Name()))
		}
		return true
	})
	return problems
}

// registries are the job's registries as the executor takes them.
func (e *engine) registries() []executor.Registry {
	out := make([]executor.Registry, 0, len(e.job.Registries))
	for _, r := range e.job.Registries {
		out = append(out, executor.Registry{Name: r.Name, URL: r.URL, Username: r.Username, Password: r.Password, CA: r.CA})
	}
	return out
}

// registry finds the registry a step names ("" for the default one).
func (e *engine) registry(name string) (runnerv1.Registry, string) {
	var names []string
	for _, r := range e.job.Registries {
		if (name == "" && r.Default) || (name != "" && r.Name == name) {
			return r, ""
		}
		names = append(names, r.Name)
	}
	known := "the build has no registry contexts (freshet context create registry NAME --url URL)"
	if len(names) > 0 {
		known = "the build may use " + strings.Join(names, ", ")
	}
	if name == "" {
		return runnerv1.Registry{}, "there is no default registry: " + known
	}
	return runnerv1.Registry{}, fmt.Sprintf("no registry context named %q: %s", name, known)
}

// imagesOf returns the images step s pushed when s is its final, successful state.
func (e *engine) imagesOf(s runnerv1.StepState) []runnerv1.Image {
	if s.Status != stSuccess {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.images[s.Name]
}

// setVars sets variables for the later steps.
func (e *engine) setVars(kv ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		e.vars[kv[i]] = kv[i+1]
	}
}

// startServices starts a composition through the executor. It returns the network steps join,
// a function that stops the services, or why they could not start.
func (e *engine) startServices(ctx context.Context, owner string, sv *spec.Services) (string, func(), string) {
	sr, ok := e.exec.(executor.ServiceRunner)
	if !ok {
		return "", nil, fmt.Sprintf("the %s executor runs no service containers", e.exec.Name())
	}
	set := executor.ServiceSet{Name: owner, Registries: e.registries()}
	for _, s := range sv.Composition {
		image, err := e.interpChecked("services.composition."+s.Name+".image", s.Image, imageValue)
		if err != nil {
			return "", nil, err.Error()
		}
		wd, err := e.interpChecked("services.composition."+s.Name+".working_dir", s.WorkingDir, pathValue)
		if err != nil {
			return "", nil, err.Error()
		}
		svc := executor.Service{Name: s.Name, Image: image, Ports: s.Ports, PullPolicy: s.PullPolicy, WorkingDir: wd, Workspace: s.Volume}
		for _, v := range s.Env {
			svc.Env = append(svc.Env, executor.EnvVar{Name: v.Name, Value: e.interp(v.Value)})
		}
		for _, a := range s.EntryPoint {
			svc.EntryPoint = append(svc.EntryPoint, e.interp(a))
		}
		for _, a := range s.Cmd {
			svc.Cmd = append(svc.Cmd, e.interp(a))
		}
		set.Services = append(set.Services, svc)
	}
	if r := sv.Readiness; r != nil {
		image, err := e.interpChecked("services.readiness.image", r.Image, imageValue)
		if err != nil {
			return "", nil, err.Error()
		}
		cmds, vars, err := spec.InterpolateShell("services.readiness.commands", r.Commands, e.lookup)
		if err != nil {
			return "", nil, err.Error()
		}
		rd := &executor.Readiness{Image: image, Commands: cmds, Timeout: r.Timeout.Duration, Period: r.Period.Duration, InitialDelay: r.InitialDelay.Duration}
		for _, v := range vars {
			rd.Env = append(rd.Env, executor.EnvVar{Name: v.Name, Value: v.Value})
		}
		set.Readiness = rd
	}
	names := make([]string, len(set.Services))
	for i, s := range set.Services {
		names[i] = s.Name
	}
	e.logf("%s: starting services %s", owner, strings.Join(names, ", "))
	network, msg, err := sr.StartServices(ctx, e.ws, set, e.out)
	if err != nil {
		return "", nil, err.Error()
	}
	if msg != "" {
		return "", nil, msg
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := sr.StopServices(sctx, e.ws, network); err != nil {
			e.logf("%s: stop services: %v", owner, err)
		}
	}
	return network, stop, ""
}

// imageRef joins a registry URL, a repository and a tag.
func imageRef(registryURL, repo, tag string) string {
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(registryURL, "https://"), "http://"), "/")
	ref := repo
	if host != "" {
		ref = host + "/" + repo
	}
	if tag != "" {
		ref += ":" + tag
	}
	return ref
}

// tagValue checks a value put into a tag.
func tagValue(v string) string {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-", c)) {
			return fmt.Sprintf("has %q, which cannot be part of a tag (letters, digits, '.', '_', '-'): use ${{CF_BRANCH_TAG_NORMALIZED}} for a branch", c)
		}
	}
	return ""
}

// tagsOf interpolates a step's tags (the default when it has none) and checks them.
func (e *engine) tagsOf(tags []string, def string) ([]string, error) {
	if len(tags) == 0 {
		tags = []string{def}
	}
	var out []string
	for i, t := range tags {
		v, err := e.interpChecked(fmt.Sprintf("tags[%d]", i), t, tagValue)
		if err != nil {
			return nil, err
		}
		if t == DefaultImageTag && strings.Contains(v, "${{") {
			v = DefaultPushTag // a build without a branch
		}
		if v == "" || len(v) > 128 || tagValue(v) != "" || strings.Contains(v, "${{") {
			return nil, errdefs.Invalid(fmt.Sprintf("tags[%d]", i), t, fmt.Sprintf("is %q once its variables are put in, which is not a tag: 1 to 128 letters, digits, '.', '_' or '-'", v))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// imageStepFailed ends a build or push step with msg (logged), or as terminated when its
// context ended: the step's result, exit code, attempts and reason.
func (e *engine) imageStepFailed(ctx context.Context, st *spec.Step, msg string) (spec.Result, int, int, string) {
	if ctx.Err() != nil {
		return spec.ResultTerminated, 0, 1, "terminated"
	}
	e.logf("step %s: %s", st.Name, msg)
	return spec.ResultFailure, 1, 1, msg
}

// build runs a build step: the engine builds the image, and, unless disable_push, pushes it to
// the registry the step names or the default one.
func (e *engine) build(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	b := st.Build
	fail := func(msg string) (spec.Result, int, int, string) { return e.imageStepFailed(ctx, st, msg) }
	builder, ok := e.exec.(executor.ImageBuilder)
	if !ok || b == nil {
		return fail(fmt.Sprintf("a build step needs a container engine: the %s executor has none", e.exec.Name()))
	}
	repo, err := e.interpChecked("image_name", b.ImageName, imageValue)
	if err != nil {
		return fail(err.Error())
	}
	repo = strings.ToLower(repo)
	tags, err := e.tagsOf(b.Tags, DefaultImageTag)
	if err != nil {
		return fail(err.Error())
	}
	if b.TagPolicy == spec.TagPolicyLowercase {
		for i := range tags {
			tags[i] = strings.ToLower(tags[i])
		}
		tags = slices.Compact(tags)
	}
	var cacheFrom []string
	for i, c := range b.CacheFrom {
		v, err := e.interpChecked(fmt.Sprintf("cache_from[%d]", i), c, imageValue)
		if err != nil {
			return fail(err.Error())
		}
		cacheFrom = append(cacheFrom, v)
	}
	cacheTo, err := e.interpChecked("cache_to", b.CacheTo, imageValue)
	if err != nil {
		return fail(err.Error())
	}
	platform := e.interp(b.Platform)
	platforms := (&spec.Build{Platform: platform}).Platforms()
	wd, err := e.interpChecked("working_directory", st.WorkingDir, pathValue)
	if err != nil {
		return fail(err.Error())
	}
	dir, inWorkspace, err := executor.ResolveWorkingDir(e.ws.Path, wd)
	if err != nil || !inWorkspace {
		return fail(fmt.Sprintf("working_directory %q: the build context must be inside the workspace (%s)", wd, e.ws.Path))
	}
	dockerfile, err := e.interpChecked("dockerfile", b.Dockerfile, pathValue)
	if err != nil {
		return fail(err.Error())
	}
	var reg runnerv1.Registry
	push := !b.DisablePush
	if push {
		regName := e.interp(b.Registry)
		var why string
		if reg, why = e.registry(regName); why != "" {
			if regName != "" {
				return fail(fmt.Sprintf("image %s: push to registry %s: %s", repo, regName, why))
			}
			if len(platforms) > 1 || b.Cosign != nil {
				return fail(fmt.Sprintf("image %s: a multi-platform or signed image is pushed by its build: %s", repo, why))
			}
			e.logf("step %s: the image is not pushed: %s (set disable_push: true to say so)", st.Name, why)
			push = false
		}
	}
	var refs []string
	for _, t := range tags {
		if push {
			refs = append(refs, imageRef(reg.URL, repo, t))
		} else {
			refs = append(refs, imageRef("", repo, t))
		}
	}
	// An inline Dockerfile is used as written: variables are not put into it (build_arguments
	// carry values into a build).
	bs := executor.BuildSpec{Name: st.Name, ContextDir: dir, Dockerfile: dockerfile, DockerfileContent: b.DockerfileContent,
		Tags: refs, Target: e.interp(b.Target), Platform: platform, NoCache: b.NoCache, CacheFrom: cacheFrom, CacheTo: cacheTo,
		Registries: e.registries(), Timeout: st.Timeout.Duration}
	for _, a := range b.BuildArgs {
		bs.BuildArgs = append(bs.BuildArgs, executor.EnvVar{Name: a.Name, Value: e.interp(a.Value)})
	}
	if len(platforms) > 1 {
		if !push {
			return fail(fmt.Sprintf("image %s: a multi-platform image (%s) exists only in a registry: remove disable_push", repo, platform))
		}
		e.logf("step %s (build) %s for %s", st.Name, strings.Join(refs, ", "), strings.Join(platforms, ", "))
		img, imageID, msg := e.buildPlatforms(ctx, st, builder, bs, platforms, reg, repo, tags)
		if ctx.Err() != nil {
			return spec.ResultTerminated, 0, 1, "terminated"
		}
		if msg != "" {
			return fail(msg)
		}
		return e.built(ctx, st, refs, repo, tags, imageID, img, reg)
	}
	e.logf("step %s (build) %s", st.Name, strings.Join(refs, ", "))
	res, err := builder.Build(ctx, e.ws, bs, e.out)
	switch {
	case err != nil:
		return fail(err.Error())
	case res.Canceled || ctx.Err() != nil:
		return spec.ResultTerminated, 0, 1, "terminated"
	case res.Message != "":
		return fail(res.Message)
	}
	e.setVars(st.Name, refs[0], st.Name+".imageId", res.ImageID, "steps."+st.Name+".imageId", res.ImageID,
		st.Name+".imageName", repo, st.Name+".tag", tags[0])
	if !push {
		return spec.ResultSuccess, 0, 1, ""
	}
	img, msg := e.pushAll(ctx, builder, st.Name, refs[0], reg, repo, tags)
	if msg != "" {
		return fail(msg)
	}
	return e.built(ctx, st, refs, repo, tags, res.ImageID, img, reg)
}

// built ends a build step whose image was pushed as img: it is signed when the step says so,
// and the step's variables are set.
func (e *engine) built(ctx context.Context, st *spec.Step, refs []string, repo string, tags []string, imageID string, img runnerv1.Image, reg runnerv1.Registry) (spec.Result, int, int, string) {
	if c := st.Build.Cosign; c != nil {
		msg := e.signImage(ctx, st, c, reg, repo, img.Digest)
		if ctx.Err() != nil {
			return spec.ResultTerminated, 0, 1, "terminated"
		}
		if msg != "" {
			return e.imageStepFailed(ctx, st, msg)
		}
	}
	e.setVars(st.Name, refs[0], st.Name+".imageId", imageID, "steps."+st.Name+".imageId", imageID,
		st.Name+".imageName", repo, st.Name+".tag", tags[0], st.Name+".digest", img.Digest, st.Name+".image", refs[0])
	e.mu.Lock()
	e.images[st.Name] = []runnerv1.Image{img}
	e.mu.Unlock()
	return spec.ResultSuccess, 0, 1, ""
}

// pushAll pushes source as repo:tag for every tag to reg and returns the image as the registry
// stored it.
func (e *engine) pushAll(ctx context.Context, builder executor.ImageBuilder, step, source string, reg runnerv1.Registry, repo string, tags []string) (runnerv1.Image, string) {
	img := runnerv1.Image{Registry: reg.Name, Repository: imageRef(reg.URL, repo, ""), Tags: tags}
	for _, t := range tags {
		res, err := builder.Push(ctx, executor.PushSpec{Name: step, Source: source, Target: imageRef(reg.URL, repo, t),
			Registry: executor.Registry{Name: reg.Name, URL: reg.URL, Username: reg.Username, Password: reg.Password, CA: reg.CA}}, e.out)
		if err != nil {
			return img, err.Error()
		}
		if res.Message != "" {
			return img, res.Message
		}
		img.Digest, img.Size = res.Digest, res.Size
	}
	return img, ""
}

// push runs a push step: the candidate (an image a build step made) is tagged and pushed to
// the registry the step names, or the default one.
func (e *engine) push(ctx context.Context, st *spec.Step) (spec.Result, int, int, string) {
	p := st.Push
	fail := func(msg string) (spec.Result, int, int, string) { return e.imageStepFailed(ctx, st, msg) }
	builder, ok := e.exec.(executor.ImageBuilder)
	if !ok || p == nil {
		return fail(fmt.Sprintf("a push step needs a container engine: the %s executor has none", e.exec.Name()))
	}
	candidate, err := e.interpChecked("candidate", p.Candidate, imageValue)
	if err != nil {
		return fail(err.Error())
	}
	if candidate == "" || strings.Contains(candidate, "${{") {
		return fail(fmt.Sprintf("candidate %q is not an image: name a build step's image, as ${{BUILD_STEP_NAME}}", p.Candidate))
	}
	repo := strings.ToLower(e.interp(p.ImageName))
	if repo == "" {
		repo = repositoryPath(candidate)
	}
	if msg := imageValue(repo); msg != "" {
		return fail(fmt.Sprintf("image_name %q %s", repo, msg))
	}
	tags, err := e.tagsOf(p.Tags, DefaultPushTag)
	if err != nil {
		return fail(err.Error())
	}
	regName := e.interp(p.Registry)
	reg, why := e.registry(regName)
	if why != "" {
		return fail(fmt.Sprintf("push of %s: %s", candidate, why))
	}
	e.logf("step %s (push) %s to registry %s as %s:%s", st.Name, candidate, reg.Name, repo, strings.Join(tags, ","))
	img, msg := e.pushAll(ctx, builder, st.Name, candidate, reg, repo, tags)
	if msg != "" {
		return fail(msg)
	}
	e.setVars(st.Name+".digest", img.Digest, st.Name+".image", imageRef(reg.URL, repo, tags[0]))
	e.mu.Lock()
	e.images[st.Name] = []runnerv1.Image{img}
	e.mu.Unlock()
	return spec.ResultSuccess, 0, 1, ""
}

// repositoryPath is the repository of an image reference without its registry host and tag:
// registry.example:5000/team/app:v1 → team/app.
func repositoryPath(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		ref = ref[:i]
	}
	first, rest, ok := strings.Cut(ref, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return rest
	}
	return path.Clean(ref)
}
