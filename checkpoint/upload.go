package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// Upload copies local/<step> into store/step-<step>/rank-<rank>/,
// throttled to WithRate, computing SHA-256 as it copies; it syncs every
// file and directory, then writes the manifest last, atomically. The
// caller picks the step from Committed: Upload does not look for the
// Marker.
//
// Regular files and directories only: a symbolic link, device, named pipe
// or socket in the step is an error that names it. The rank's directory
// of that step, if there is one (an earlier upload, torn or not), is
// replaced. A failed or cancelled upload removes what it wrote. Upload
// checks ctx between chunks of every file.
func Upload(ctx context.Context, local, store string, step int64, rank int, opts ...Option) (Manifest, error) {
	m, err := upload(ctx, local, store, step, rank, newOptions(opts))
	if err != nil {
		return Manifest{}, fmt.Errorf("checkpoint step %d rank %d: upload: %w", step, rank, err)
	}
	return m, nil
}

func upload(ctx context.Context, local, store string, step int64, rank int, o options) (Manifest, error) {
	if step < 0 || rank < 0 || o.attempt < 0 {
		return Manifest{}, errors.New("neither the step, the rank nor the attempt may be negative")
	}
	from, err := openStep(filepath.Join(local, strconv.FormatInt(step, 10)))
	if err != nil {
		return Manifest{}, err
	}
	defer from.Close()
	paths, err := listFiles(from)
	if err != nil {
		return Manifest{}, err
	}
	if err := checkStore(store); err != nil {
		return Manifest{}, err
	}
	dir := rankDir(store, step, rank)
	if err := removeRank(dir); err != nil {
		return Manifest{}, fmt.Errorf("removing the earlier upload: %w", err)
	}
	m := Manifest{Version: ManifestVersion, Step: step, Rank: rank, Attempt: o.attempt}
	m.Files, err = copyRank(ctx, from, dir, paths, newThrottle(o))
	if err == nil {
		m.Created = o.now().UTC()
		err = writeManifest(dir, m)
	}
	if err != nil {
		os.RemoveAll(dir)
		return Manifest{}, err
	}
	return m, nil
}

// openStep opens a task's step directory, which must be a directory
// itself, not a link to one.
func openStep(dir string) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return os.OpenRoot(dir)
}

// checkStore fails unless store is an existing directory.
func checkStore(store string) error {
	fi, err := os.Stat(store)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checkpoint store %s does not exist: create it on shared storage, or mount it on this node", store)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("checkpoint store %s is not a directory", store)
	}
	return nil
}

// listFiles returns the slash-separated paths of the regular files under
// root, sorted, leaving out phalanx's own. Anything else that is not a
// directory is an error naming it.
func listFiles(root *os.Root) ([]string, error) {
	var paths []string
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == ".":
			return nil
		case strings.HasPrefix(d.Name(), reservedPrefix) && d.IsDir():
			return fs.SkipDir
		case strings.HasPrefix(d.Name(), reservedPrefix) || d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s %s", p, irregular(d.Type()))
		case p == ManifestFile || p == manifestTmp:
			return fmt.Errorf("%s: the name is the checkpoint manifest's; give the file another name", p)
		}
		paths = append(paths, p)
		return nil
	})
	slices.Sort(paths) // WalkDir sorts by name in each directory: "a/b" comes before "a-b" there
	return paths, err
}

// removeRank removes a rank's directory of a step, manifest first, so
// that no crash along the way leaves a manifest over missing files.
func removeRank(dir string) error {
	err := os.Remove(filepath.Join(dir, ManifestFile))
	switch {
	case err == nil:
		if err := durable.SyncDir(dir); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return os.RemoveAll(dir)
}

// copyRank creates dir and copies the files at paths under from into it,
// syncing every file and directory, and the two directories above dir.
func copyRank(ctx context.Context, from *os.Root, dir string, paths []string, t *throttle) ([]File, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, err
	}
	to, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer to.Close()
	files := make([]File, 0, len(paths))
	dirs := map[string]bool{".": true}
	for _, p := range paths {
		f, err := copyFile(ctx, from, to, p, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		files = append(files, f)
		for d := path.Dir(p); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if err := syncDir(to, filepath.FromSlash(d)); err != nil {
			return nil, err
		}
	}
	step := filepath.Dir(dir)
	if err := durable.SyncDir(step); err != nil {
		return nil, err
	}
	return files, durable.SyncDir(filepath.Dir(step))
}

// copyFile copies one file, p, from one root to the other and syncs it.
func copyFile(ctx context.Context, from, to *os.Root, p string, t *throttle) (File, error) {
	name := filepath.FromSlash(p)
	in, fi, err := openRegular(from, name)
	if err != nil {
		return File{}, err
	}
	defer in.Close()
	mode := fi.Mode().Perm()
	out, err := createFile(to, name, mode)
	if err != nil {
		return File{}, err
	}
	n, sum, err := copyData(ctx, out, in, t)
	if err == nil {
		err = out.Chmod(mode) // the umask took bits from the mode it was created with
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return File{Path: p, Size: n, SHA256: sum, Mode: mode}, err
}

// Uploaded reports whether rank's copy of step is in store, whole, and was
// written by attempt: an agent that takes over a running task after a
// restart need not copy it again.
func Uploaded(store string, step int64, rank, attempt int) bool {
	m, err := checkRank(store, step, rank)
	return err == nil && m.Attempt == attempt
}
