package checkpoint

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-hpc/phalanx/internal/durable"
)

const (
	// Marker is the file whose presence in LOCAL/<N> says that the task
	// has finished writing step N.
	Marker = ".phx-complete"
	// ManifestFile is the name of a rank's manifest in its directory of
	// the store.
	ManifestFile = "MANIFEST.json"
	// ManifestVersion is the version of the manifest format that this
	// package writes, and the only one it reads.
	ManifestVersion = 1
)

const (
	// reservedPrefix begins the names of phalanx's own files in a step.
	reservedPrefix = ".phx-"
	// manifestTmp is where durable.WriteFile writes the manifest before
	// renaming it.
	manifestTmp = ManifestFile + ".tmp"
	// maxManifestSize bounds what is read of a manifest: millions of files.
	maxManifestSize = 64 << 20
)

// File is one file of a rank's checkpoint.
type File struct {
	// Path is slash-separated, relative to the rank's directory.
	Path string `json:"path"`
	Size int64  `json:"size"`
	// SHA256 is the lower-case hex SHA-256 of the contents.
	SHA256 string `json:"sha256"`
	// Mode holds permission bits only.
	Mode os.FileMode `json:"mode"`
}

// Manifest lists a rank's files of a step. Its presence says that they
// were all written and synced before it.
type Manifest struct {
	Version int   `json:"version"`
	Step    int64 `json:"step"`
	Rank    int   `json:"rank"`
	// Attempt is the job's attempt that wrote the step (WithAttempt); 0
	// in manifests written before attempts were recorded. A step whose
	// ranks name different attempts is torn: a later attempt rewrote some
	// of its ranks and not yet the others.
	Attempt int `json:"attempt,omitempty"`
	// Files is sorted by Path.
	Files   []File    `json:"files"`
	Created time.Time `json:"created"`
}

// parseManifest decodes b and checks it, trusting nothing in it.
func parseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("not a manifest: %w", err)
	}
	if err := m.validate(); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

func (m Manifest) validate() error {
	switch {
	case m.Version != ManifestVersion:
		return fmt.Errorf("manifest version %d, this phalanx reads version %d", m.Version, ManifestVersion)
	case m.Step < 0 || m.Rank < 0 || m.Attempt < 0:
		return fmt.Errorf("manifest for step %d rank %d attempt %d: none may be negative", m.Step, m.Rank, m.Attempt)
	}
	files := make(map[string]bool, len(m.Files))
	for i, f := range m.Files {
		if err := f.validate(); err != nil {
			return err
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return fmt.Errorf("file %q: the files are not sorted by path, or one is listed twice", f.Path)
		}
		files[f.Path] = true
	}
	for _, f := range m.Files {
		for d := path.Dir(f.Path); d != "." && d != "/"; d = path.Dir(d) {
			if files[d] {
				return fmt.Errorf("file %q: %q is listed as a file and is also its directory", f.Path, d)
			}
		}
	}
	return nil
}

func (f File) validate() error {
	switch {
	case !rankPath(f.Path):
		return fmt.Errorf("file %q: not a clean relative path inside the rank's directory", f.Path)
	case f.Size < 0:
		return fmt.Errorf("file %q: size %d", f.Path, f.Size)
	case !hexSum(f.SHA256):
		return fmt.Errorf("file %q: SHA-256 %q is not 64 lower-case hex digits", f.Path, f.SHA256)
	case f.Mode&^fs.ModePerm != 0:
		return fmt.Errorf("file %q: mode %v is more than permission bits", f.Path, f.Mode)
	}
	return nil
}

// rankPath reports whether p may name a file of a rank: slash-separated,
// relative and clean, with no "." or ".." element, no element of
// phalanx's own, and not the manifest.
func rankPath(p string) bool {
	if p == "." || !fs.ValidPath(p) || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	if p == ManifestFile || p == manifestTmp {
		return false
	}
	for elem := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(elem, reservedPrefix) {
			return false
		}
	}
	return true
}

func hexSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// readManifest reads and checks the manifest in dir, a rank's directory
// of step in the store.
func readManifest(dir string, step int64, rank int) (Manifest, error) {
	f, err := os.Open(filepath.Join(dir, ManifestFile))
	if err != nil {
		return Manifest{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return Manifest{}, err
	}
	if len(b) > maxManifestSize {
		return Manifest{}, fmt.Errorf("%s: larger than %d bytes", ManifestFile, maxManifestSize)
	}
	m, err := parseManifest(b)
	if err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	if m.Step != step || m.Rank != rank {
		return Manifest{}, fmt.Errorf("%s is step %d rank %d's, found in the directory of step %d rank %d",
			ManifestFile, m.Step, m.Rank, step, rank)
	}
	return m, nil
}

// writeManifest writes m into dir, durably and atomically.
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	return durable.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), 0o644)
}

// parseStep reads a step number as it is written in a directory name:
// decimal, not negative, no sign, no leading zeros.
func parseStep(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}
