package container

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/freshet-dev/freshet/internal/runner/executor"
)

// helperRef names the helper image: an image with one empty directory, never run, whose
// containers only let the executor read the workspace volume (a build's context).
const helperRef = "freshet-volume-reader:v1"

// Build builds b through the engine's build API with a context read from the workspace. See
// executor.ImageBuilder.
func (c *Container) Build(ctx context.Context, ws executor.Workspace, b executor.BuildSpec, out io.Writer) (executor.BuildResult, error) {
	var res executor.BuildResult
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	if err := c.checkWorkspace(ctx, ws, true); err != nil {
		return res, fmt.Errorf("build %s: %w", b.Name, err)
	}
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	fail := func(format string, args ...any) (executor.BuildResult, error) {
		res.Message = fmt.Sprintf(format, args...)
		o.Notice("%s", res.Message)
		return res, nil
	}
	if len(b.Tags) == 0 {
		return res, fmt.Errorf("build %s: %w: no tag for the image", b.Name, executor.ErrInvalidStep)
	}
	image := b.Tags[0]
	dir, dockerfile, msg := b.Context(VolumePath)
	if msg != "" {
		return fail("build of %s: %s", image, msg)
	}
	dfName := path.Join(dir, dockerfile) // for messages
	if dockerfile == "" {
		dockerfile, dfName = executor.InlineDockerfileName, "the inline dockerfile"
	}
	if b.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.Timeout)
		defer cancel()
	}
	helper, err := c.helperContainer(ctx, ws)
	if err != nil {
		return res, fmt.Errorf("build %s: %w", b.Name, err)
	}
	defer c.remove(helper)

	src, err := c.cli.CopyFromContainer(ctx, helper, client.CopyFromContainerOptions{SourcePath: dir + "/."})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fail("build of %s: the build context %s does not exist in the workspace", image, dir)
		}
		return res, fmt.Errorf("build %s: read the context %s: %w", b.Name, dir, err)
	}
	defer src.Content.Close()
	ctxTar := &contextTar{src: tar.NewReader(src.Content), limit: c.opts.MaxContextSize, dockerfile: dockerfile}
	if b.DockerfileContent != "" {
		ctxTar.inline = []byte(b.DockerfileContent)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(ctxTar.copy(pw)) }()

	opts := client.ImageBuildOptions{
		Tags: b.Tags, Dockerfile: dockerfile, Target: b.Target, NoCache: b.NoCache, Remove: true, ForceRemove: true,
		BuildArgs: map[string]*string{}, AuthConfigs: authConfigs(b.Registries), CacheFrom: b.CacheFrom,
		Labels: map[string]string{LabelManaged: "true", LabelRunner: c.opts.Runner},
	}
	for _, a := range b.BuildArgs {
		v := a.Value
		opts.BuildArgs[a.Name] = &v
	}
	if b.Platform != "" {
		p, err := parsePlatform(b.Platform)
		if err != nil {
			return fail("build of %s: platform %q: %v", image, b.Platform, err)
		}
		opts.Platforms = []ocispec.Platform{p}
	}
	var extra url.Values
	if b.CacheTo != "" {
		extra = url.Values{"cacheto": {b.CacheTo}}
	}
	o.Notice("building %s from %s in %s", image, dfName, dir)
	resp, err := c.cli.ImageBuild(withBuildQuery(ctx, extra), pr, opts)
	if err != nil {
		pr.CloseWithError(err)
		if msg := ctxTar.problem(); msg != "" {
			return fail("build of %s: %s", image, msg)
		}
		if cerr := ctx.Err(); cerr != nil {
			res.Canceled, res.TimedOut = errors.Is(cerr, context.Canceled), errors.Is(cerr, context.DeadlineExceeded)
			return fail("build of %s: %v", image, cerr)
		}
		return fail("build of %s: %s", image, oneLine(err.Error()))
	}
	defer resp.Body.Close()
	st := buildStream{out: o}
	streamErr := st.read(resp.Body)
	pr.CloseWithError(io.ErrClosedPipe)
	if msg := ctxTar.problem(); msg != "" {
		return fail("build of %s: %s", image, msg)
	}
	if cerr := ctx.Err(); cerr != nil {
		res.Canceled, res.TimedOut = errors.Is(cerr, context.Canceled), errors.Is(cerr, context.DeadlineExceeded)
		if res.TimedOut {
			return fail("build of %s timed out after %s", image, b.Timeout)
		}
		return fail("build of %s canceled", image)
	}
	if st.err != "" || streamErr != nil {
		why := st.err
		if why == "" {
			why = streamErr.Error()
		}
		where := ""
		if line, instr := ctxTar.instruction(st.step); line > 0 {
			where = fmt.Sprintf(" at %s line %d (%s)", dfName, line, instr)
		} else if !ctxTar.sawDockerfile() {
			where = fmt.Sprintf(": %s not found in the build context", dfName)
		}
		return fail("build of %s failed%s: %s", image, where, oneLine(why))
	}
	in, err := c.cli.ImageInspect(ctx, image)
	if err != nil {
		return res, fmt.Errorf("build %s: inspect the built image %s: %w", b.Name, image, err)
	}
	res.ImageID = in.ID
	return res, nil
}

// helperContainer creates (never starts) a container with the workspace mounted, from the
// helper image, through which the workspace's files are read.
func (c *Container) helperContainer(ctx context.Context, ws executor.Workspace) (string, error) {
	img, err := c.helperImage(ctx)
	if err != nil {
		return "", err
	}
	created, err := c.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       fmt.Sprintf("%s-%d-reader", ws.Handle, c.sequence.Add(1)),
		Config:     &container.Config{Image: img, Cmd: []string{"/never-runs"}, Labels: c.labels(ws.BuildID, ws.Handle, "helper")},
		HostConfig: &container.HostConfig{Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: ws.Handle, Target: VolumePath}}},
	})
	if err != nil {
		return "", fmt.Errorf("create a container to read the workspace: %w", err)
	}
	return created.ID, nil
}

// helperImage imports the helper image once (a tar of one empty directory) and returns its ID.
func (c *Container) helperImage(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.helper != "" {
		return c.helper, nil
	}
	if in, err := c.cli.ImageInspect(ctx, helperRef); err == nil {
		c.helper = in.ID
		return c.helper, nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "codefresh/", Mode: 0o755, ModTime: time.Unix(0, 0)})
	_ = tw.Close()
	r, err := c.cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, helperRef, client.ImageImportOptions{})
	if err != nil {
		return "", fmt.Errorf("import the workspace reader image: %w", err)
	}
	_, _ = io.Copy(io.Discard, r)
	r.Close()
	in, err := c.cli.ImageInspect(ctx, helperRef)
	if err != nil {
		// Some engines ignore the tag of an import: find it by its repository.
		if in2, err2 := c.cli.ImageInspect(ctx, strings.Split(helperRef, ":")[0]); err2 == nil {
			in, err = in2, nil
		}
	}
	if err != nil {
		return "", fmt.Errorf("import the workspace reader image: %w", err)
	}
	c.helper = in.ID
	return c.helper, nil
}

// contextTar rewrites the archive the engine gives of the context directory's contents into a
// build context (clean relative paths), counting its size against limit and keeping the Dockerfile.
type contextTar struct {
	src        *tar.Reader
	limit      int64
	dockerfile string
	inline     []byte // an inline Dockerfile, added to the context as dockerfile

	mu      sync.Mutex
	size    int64
	tooBig  bool
	content []byte // the Dockerfile
	seen    bool
}

func (t *contextTar) copy(w io.Writer) error {
	tw := tar.NewWriter(w)
	for {
		h, err := t.src.Next()
		if err == io.EOF {
			if t.inline != nil {
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: t.dockerfile, Mode: 0o644, Size: int64(len(t.inline)), ModTime: time.Unix(0, 0)}); err != nil {
					return err
				}
				if _, err := tw.Write(t.inline); err != nil {
					return err
				}
				t.mu.Lock()
				t.content, t.seen = t.inline, true
				t.mu.Unlock()
			}
			return tw.Close()
		}
		if err != nil {
			return err
		}
		// The engine archives the directory's contents (SourcePath ends in /.): names are
		// relative to it, with or without a leading ./ or /.
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" || name == "." || (t.inline != nil && name == t.dockerfile) {
			continue
		}
		t.mu.Lock()
		t.size += h.Size
		over := t.size > t.limit
		if over {
			t.tooBig = true
		}
		t.mu.Unlock()
		if over {
			return fmt.Errorf("the build context is larger than %d bytes", t.limit)
		}
		h.Name = name
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		var r io.Reader = t.src
		if name == t.dockerfile && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(io.LimitReader(t.src, 1<<20))
			if err != nil {
				return err
			}
			t.mu.Lock()
			t.content, t.seen = b, true
			t.mu.Unlock()
			r = io.MultiReader(bytes.NewReader(b), t.src)
		}
		if _, err := io.Copy(tw, r); err != nil {
			return err
		}
	}
}

func (t *contextTar) problem() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tooBig {
		return fmt.Sprintf("the build context is larger than the limit of %d MiB: leave out what the image does not need (build from a subdirectory with working_directory)", t.limit>>20)
	}
	return ""
}

func (t *contextTar) sawDockerfile() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen
}

// instruction returns the line and text of the step'th instruction (1-based) of the
// Dockerfile, or 0 when unknown.
func (t *contextTar) instruction(step int) (int, string) {
	t.mu.Lock()
	content := t.content
	t.mu.Unlock()
	if content == nil {
		return 0, ""
	}
	return executor.DockerfileInstruction(content, step)
}

// buildStream reads the engine's build output: JSON messages whose stream text goes to out.
type buildStream struct {
	out  *executor.Output
	step int    // the last step the engine announced ("STEP 2/5: …", "Step 2/5 : …")
	err  string // the error the engine reported
}

var stepLine = regexp.MustCompile(`(?i)^step (\d+)/\d+ ?:`)

func (s *buildStream) read(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if m.Stream != "" {
			_, _ = s.out.Write([]byte(m.Stream))
			for l := range strings.SplitSeq(m.Stream, "\n") {
				if g := stepLine.FindStringSubmatch(strings.TrimSpace(l)); g != nil {
					s.step, _ = strconv.Atoi(g[1])
				}
			}
		}
		if m.Error != nil && s.err == "" {
			s.err = m.Error.Message
		}
	}
}

// parsePlatform parses os/arch[/variant].
func parsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return ocispec.Platform{}, errors.New("want os/arch or os/arch/variant, e.g. linux/amd64")
	}
	p := ocispec.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Push tags p.Source as p.Target, pushes it with the registry's credentials, and reads the
// digest and size back from the registry. See executor.ImageBuilder.
func (c *Container) Push(ctx context.Context, p executor.PushSpec, out io.Writer) (executor.PushResult, error) {
	var res executor.PushResult
	if out == nil {
		out = io.Discard
	}
	o := executor.NewOutput(out)
	fail := func(format string, args ...any) (executor.PushResult, error) {
		res.Message = fmt.Sprintf(format, args...)
		o.Notice("%s", res.Message)
		return res, nil
	}
	if p.Source != p.Target {
		if _, err := c.cli.ImageTag(ctx, client.ImageTagOptions{Source: p.Source, Target: p.Target}); err != nil {
			if cerrdefs.IsNotFound(err) {
				return fail("push of %s: image %s is not on the engine", p.Target, p.Source)
			}
			return fail("push of %s: tag %s: %s", p.Target, p.Source, oneLine(err.Error()))
		}
	}
	auth := ""
	if p.Registry.Username != "" || p.Registry.Password != "" {
		auth = encodeAuth(p.Registry)
	}
	o.Notice("pushing %s to registry %s", p.Target, p.Registry.Name)
	resp, err := c.cli.ImagePush(ctx, p.Target, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		return fail("push of %s to registry %s failed: %s", p.Target, p.Registry.Name, oneLine(err.Error()))
	}
	var pushErr, digest string
	for m, err := range resp.JSONMessages(ctx) {
		if err != nil {
			pushErr = err.Error()
			break
		}
		if m.Error != nil && pushErr == "" {
			pushErr = m.Error.Message
		}
		if m.Aux != nil {
			var aux struct{ Digest string }
			if json.Unmarshal(*m.Aux, &aux) == nil && aux.Digest != "" {
				digest = aux.Digest
			}
		}
	}
	if pushErr != "" {
		if ctx.Err() != nil {
			return fail("push of %s canceled", p.Target)
		}
		return fail("push of %s to registry %s failed: %s", p.Target, p.Registry.Name, oneLine(pushErr))
	}
	d, size, err := executor.RemoteManifest(ctx, p.Target, p.Registry)
	if err != nil {
		if digest == "" {
			return fail("push of %s to registry %s: the registry does not show the pushed image: %s", p.Target, p.Registry.Name, oneLine(err.Error()))
		}
		o.Notice("pushed %s (%s); its size could not be read back: %s", p.Target, digest, oneLine(err.Error()))
		res.Digest = digest
		return res, nil
	}
	res.Digest, res.Size = d, size
	o.Notice("pushed %s@%s (%d bytes)", p.Target, d, size)
	return res, nil
}
