package containerdtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// BusyboxPath is the static busybox the image is built from.
const BusyboxPath = "/bin/busybox"

// Applets are linked to busybox in the image's /bin.
var Applets = []string{"sh", "echo", "cat", "env", "sleep", "ls", "id", "hostname", "pwd", "test"}

// ImportBusybox builds the busybox image, imports it into d as ref (in
// d.Namespace) and unpacks it for Snapshotter.
func ImportBusybox(t testing.TB, d *Daemon, ref string) {
	t.Helper()
	ImportBusyboxIn(t, d, d.Namespace, ref)
}

// ImportBusyboxIn imports the busybox image as ImportBusybox does, into
// namespace ns of d, which must begin with d.Namespace (so that the
// daemon's cleanup finds it): a node of a test cluster keeps its
// containers in a namespace of its own, as if it had its own daemon.
func ImportBusyboxIn(t testing.TB, d *Daemon, ns, ref string) {
	t.Helper()
	if !strings.HasPrefix(ns, d.Namespace) {
		t.Fatalf("namespace %q does not begin with the daemon's, %q", ns, d.Namespace)
	}
	archive, err := BusyboxArchive(ref)
	if err != nil {
		t.Fatalf("build busybox image: %v", err)
	}
	client := d.Client(t)
	ctx := namespaces.WithNamespace(context.Background(), ns)
	imgs, err := client.Import(ctx, bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("import busybox image: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Name != ref {
		t.Fatalf("imported %+v, want one image named %s", imgs, ref)
	}
	if err := containerd.NewImage(client, imgs[0]).Unpack(ctx, Snapshotter); err != nil {
		t.Fatalf("unpack busybox image: %v", err)
	}
}

// BusyboxArchive returns an OCI image layout, as a tar stream, holding one
// image named ref whose only layer is the host's busybox and its applets.
func BusyboxArchive(ref string) ([]byte, error) {
	layer, diffID, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	platform := ocispec.Platform{OS: "linux", Architecture: goruntime.GOARCH}
	config, err := json.Marshal(ocispec.Image{
		Platform: platform,
		Config:   ocispec.ImageConfig{Env: []string{"PATH=/bin"}},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
	})
	if err != nil {
		return nil, err
	}
	b := newLayout()
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    b.blob(ocispec.MediaTypeImageConfig, config),
		Layers:    []ocispec.Descriptor{b.blob(ocispec.MediaTypeImageLayerGzip, layer)},
	})
	if err != nil {
		return nil, err
	}
	mdesc := b.blob(ocispec.MediaTypeImageManifest, manifest)
	mdesc.Platform = &platform
	mdesc.Annotations = map[string]string{images.AnnotationImageName: ref}
	return b.finish(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{mdesc},
	})
}

// busyboxLayer returns the gzipped layer and the digest of its tar.
func busyboxLayer() (gz []byte, diffID digest.Digest, err error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, "", err
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, dir := range []string{"bin", "dev", "etc", "proc", "sys", "tmp"} {
		mode := int64(0o755)
		if dir == "tmp" {
			mode = 0o1777
		}
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: mode})
	}
	writeFile(tw, "etc/passwd", 0o644, []byte("root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n"))
	writeFile(tw, "etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	writeFile(tw, "bin/busybox", 0o755, bin)
	for _, a := range Applets {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777})
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return zipped.Bytes(), digest.FromBytes(raw.Bytes()), nil
}

func writeFile(tw *tar.Writer, name string, mode int64, body []byte) {
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body))})
	tw.Write(body)
}

// layout accumulates the files of an OCI image layout tar.
type layout struct {
	buf bytes.Buffer
	tw  *tar.Writer
}

func newLayout() *layout {
	l := &layout{}
	l.tw = tar.NewWriter(&l.buf)
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		l.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755})
	}
	return l
}

// blob stores body under blobs/sha256 and returns its descriptor.
func (l *layout) blob(mediaType string, body []byte) ocispec.Descriptor {
	d := digest.FromBytes(body)
	writeFile(l.tw, "blobs/sha256/"+d.Encoded(), 0o644, body)
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(body))}
}

func (l *layout) finish(index ocispec.Index) ([]byte, error) {
	idx, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	writeFile(l.tw, ocispec.ImageIndexFile, 0o644, idx)
	writeFile(l.tw, ocispec.ImageLayoutFile, 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`))
	if err := l.tw.Close(); err != nil {
		return nil, err
	}
	return l.buf.Bytes(), nil
}
