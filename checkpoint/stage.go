package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/phalanx-hpc/phalanx/internal/durable"
)

// Stage copies rank's files of step from store into dst, which it creates
// and which must be empty or absent, verifying each file's size and
// SHA-256 against the manifest. Files keep their mode. On any error (a
// mismatch, a bad manifest, ctx ending) it removes what it wrote, and dst
// too if it created it, and returns an error naming the step, the rank and
// the file; a file whose data does not match its manifest gives one
// wrapping ErrCorrupt.
func Stage(ctx context.Context, store string, step int64, rank int, dst string) (Manifest, error) {
	m, err := stage(ctx, store, step, rank, dst)
	if err != nil {
		return Manifest{}, fmt.Errorf("checkpoint step %d rank %d: stage into %s: %w", step, rank, dst, err)
	}
	return m, nil
}

func stage(ctx context.Context, store string, step int64, rank int, dst string) (Manifest, error) {
	src := rankDir(store, step, rank)
	m, err := readManifest(src, step, rank)
	if err != nil {
		return Manifest{}, err
	}
	created, err := prepareDst(dst)
	if err != nil {
		return Manifest{}, err
	}
	if err := stageFiles(ctx, src, dst, m.Files); err != nil {
		if cerr := cleanDst(dst, created); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", cerr))
		}
		return Manifest{}, err
	}
	return m, nil
}

// prepareDst makes sure dst is an empty directory; created says whether
// it made it.
func prepareDst(dst string) (created bool, err error) {
	entries, err := os.ReadDir(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, os.MkdirAll(dst, dirPerm)
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, errors.New("the directory is not empty: staging writes only into a new or empty one")
	}
	return false, nil
}

// cleanDst removes what staging wrote into dst, which was empty.
func cleanDst(dst string, created bool) error {
	if created {
		return os.RemoveAll(dst)
	}
	entries, err := os.ReadDir(dst)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dst, e.Name())))
	}
	return errors.Join(errs...)
}

func stageFiles(ctx context.Context, src, dst string, files []File) error {
	from, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	for _, f := range files {
		if err := stageFile(ctx, from, to, f); err != nil {
			return fmt.Errorf("file %s: %w", f.Path, err)
		}
	}
	return nil
}

// stageFile copies f from one root to the other and checks it against
// the manifest. It reads no more than one byte past f.Size.
func stageFile(ctx context.Context, from, to *os.Root, f File) error {
	name := filepath.FromSlash(f.Path)
	in, _, err := openRegular(from, name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := createFile(to, name, f.Mode)
	if err != nil {
		return err
	}
	n, sum, err := copyData(ctx, out, io.LimitReader(in, f.Size+1), nil)
	if err == nil {
		err = out.Chmod(f.Mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return err
	case n != f.Size:
		return fmt.Errorf("the store holds %s bytes, the manifest says %d: %w", sizeSeen(n, f.Size), f.Size, ErrCorrupt)
	case sum != f.SHA256:
		return fmt.Errorf("SHA-256 %s, the manifest says %s: %w", sum, f.SHA256, ErrCorrupt)
	}
	return nil
}

// sizeSeen prints a size read with a limit of want+1 bytes.
func sizeSeen(n, want int64) string {
	if n > want {
		return fmt.Sprintf("more than %d", want)
	}
	return fmt.Sprint(n)
}

// ErrCorrupt is what Stage's error wraps when a stored file's data does
// not match its manifest: the step cannot be resumed from, though it looks
// complete. MarkCorrupt records that in the store.
var ErrCorrupt = errors.New("the stored copy is corrupt")

// CorruptMarker is the file, in a rank's directory of a step in the store,
// that says the rank's copy was found corrupt: the step is torn from then
// on (Complete says why), until the rank uploads that step again.
const CorruptMarker = ".phx-corrupt"

// MarkCorrupt records in store that rank's copy of step is corrupt, for
// the reason why (one line), so that every rank's Latest passes over the
// step from now on.
func MarkCorrupt(store string, step int64, rank int, why string) error {
	dir := rankDir(store, step, rank)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("checkpoint step %d rank %d: mark corrupt: %w", step, rank, err)
	}
	if err := durable.WriteFile(filepath.Join(dir, CorruptMarker), []byte(strings.TrimSpace(why)+"\n"), 0o644); err != nil {
		return fmt.Errorf("checkpoint step %d rank %d: mark corrupt: %w", step, rank, err)
	}
	return nil
}
