package executor

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// PushIndex writes a multi-platform image to reg: an image index (a Docker manifest list when
// the images are Docker manifests, an OCI index otherwise) of the images repo@digests, which
// must be in the registry already, each with the platform its config names. The index is
// tagged with every one of tags. It returns the index's digest and the size of the images'
// configs and layers.
func PushIndex(ctx context.Context, reg Registry, repo string, digests, tags []string) (digest string, size int64, err error) {
	if len(digests) == 0 || len(tags) == 0 {
		return "", 0, fmt.Errorf("an image index needs images and a tag")
	}
	opts := RemoteOptions(ctx, reg)
	var idx v1.ImageIndex = empty.Index
	mt := types.OCIImageIndex
	for i, d := range digests {
		ref, err := name.NewDigest(repo + "@" + d)
		if err != nil {
			return "", 0, err
		}
		img, err := remote.Image(ref, opts...)
		if err != nil {
			return "", 0, fmt.Errorf("read %s: %w", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return "", 0, fmt.Errorf("read the config of %s: %w", ref, err)
		}
		m, err := img.Manifest()
		if err != nil {
			return "", 0, fmt.Errorf("read %s: %w", ref, err)
		}
		size += m.Config.Size
		for _, l := range m.Layers {
			size += l.Size
		}
		if i == 0 && m.MediaType == types.DockerManifestSchema2 {
			mt = types.DockerManifestList
		}
		p := cf.Platform()
		if p == nil {
			p = &v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: m.MediaType, Platform: p}})
	}
	idx = mutate.IndexMediaType(idx, mt)
	for i, t := range tags {
		ref, err := name.NewTag(repo + ":" + t)
		if err != nil {
			return "", 0, err
		}
		if i == 0 {
			err = remote.WriteIndex(ref, idx, opts...)
		} else {
			err = remote.Tag(ref, idx, opts...)
		}
		if err != nil {
			return "", 0, fmt.Errorf("push the image index %s: %w", ref, err)
		}
	}
	d, err := idx.Digest()
	if err != nil {
		return "", 0, err
	}
	return d.String(), size, nil
}
