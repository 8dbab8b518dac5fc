package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	stepPrefix = "step-"
	rankPrefix = "rank-"
)

func stepDir(store string, step int64) string {
	return filepath.Join(store, stepPrefix+strconv.FormatInt(step, 10))
}

func rankDir(store string, step int64, rank int) string {
	return filepath.Join(stepDir(store, step), rankPrefix+strconv.Itoa(rank))
}

// Steps lists the steps present in store (directories step-<N>),
// ascending, complete or not. A store that does not exist is an error
// (errors.Is fs.ErrNotExist): it may be a file system not mounted here.
func Steps(store string) ([]int64, error) {
	entries, err := os.ReadDir(store)
	if err != nil {
		return nil, fmt.Errorf("checkpoint store: %w", err)
	}
	var steps []int64
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), stepPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if step, ok := parseStep(rest); ok {
			steps = append(steps, step)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// Complete reports whether step is complete in store for every rank
// 0..ranks-1; when it is not, why says which rank and what is wrong, in
// one line. It reads the manifests and stats the files, no more.
func Complete(store string, step int64, ranks int) (ok bool, why string) {
	if ranks < 1 {
		return false, fmt.Sprintf("%d ranks: a job has at least one", ranks)
	}
	attempt := 0
	for r := range ranks {
		m, err := checkRank(store, step, r)
		if err != nil {
			return false, fmt.Sprintf("rank %d: %v", r, err)
		}
		if r > 0 && m.Attempt != attempt {
			return false, fmt.Sprintf("rank %d was written by attempt %d, rank 0 by attempt %d: a later attempt has rewritten only some ranks", r, m.Attempt, attempt)
		}
		attempt = m.Attempt
	}
	return true, ""
}

// checkRank returns rank's manifest of step, or why its copy is not
// complete.
func checkRank(store string, step int64, rank int) (Manifest, error) {
	m, err := rankManifest(store, step, rank)
	if err != nil {
		return Manifest{}, err
	}
	return m, checkFiles(rankDir(store, step, rank), m)
}

// rankManifest reads rank's manifest of step, or says why there is no
// usable one.
func rankManifest(store string, step int64, rank int) (Manifest, error) {
	dir := rankDir(store, step, rank)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, errors.New("not uploaded")
	}
	if b, err := os.ReadFile(filepath.Join(dir, CorruptMarker)); err == nil {
		return Manifest{}, fmt.Errorf("found corrupt (%s)", strings.TrimSpace(string(b)))
	}
	m, err := readManifest(dir, step, rank)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, errors.New("no " + ManifestFile + ": its upload did not finish")
	}
	return m, err
}

// checkFiles says which file the manifest lists is missing from dir, or
// is not of the listed size.
func checkFiles(dir string, m Manifest) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, f := range m.Files {
		fi, err := root.Stat(filepath.FromSlash(f.Path))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("file %s is missing", f.Path)
		case err != nil:
			return fmt.Errorf("file %s: %w", f.Path, err)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("file %s is not a regular file", f.Path)
		case fi.Size() != f.Size:
			return fmt.Errorf("file %s has %d bytes, the manifest says %d", f.Path, fi.Size(), f.Size)
		}
	}
	return nil
}

// Skip is a step passed over, and why.
type Skip struct {
	Step int64
	Why  string
}

// Latest returns the newest step in store that is complete for ranks
// ranks and is at most upTo (upTo < 0: no bound). The steps it passed over
// on the way, the torn ones newer than step and at most upTo, are in
// skipped, newest first. ok is false when no step is complete.
func Latest(store string, ranks int, upTo int64) (step int64, ok bool, skipped []Skip, err error) {
	if ranks < 1 {
		return 0, false, nil, fmt.Errorf("checkpoint: latest step: %d ranks: a job has at least one", ranks)
	}
	steps, err := Steps(store)
	if err != nil {
		return 0, false, nil, err
	}
	for _, s := range slices.Backward(steps) {
		if upTo >= 0 && s > upTo {
			continue
		}
		complete, why := Complete(store, s, ranks)
		if complete {
			return s, true, skipped, nil
		}
		skipped = append(skipped, Skip{Step: s, Why: why})
	}
	return 0, false, skipped, nil
}

// Prune removes every step directory of store older than the keep newest
// complete steps (complete for ranks ranks), torn ones included. It never
// removes a complete step among the keep newest, nor any step newer than
// the newest complete one (it may be an upload in progress); with no
// complete step it removes nothing. keep < 1 is taken as 1. removed is
// ascending; a step it could not remove is in err, and the others are
// still removed.
func Prune(store string, ranks int, keep int) (removed []int64, err error) {
	if ranks < 1 {
		return nil, fmt.Errorf("checkpoint: prune: %d ranks: a job has at least one", ranks)
	}
	steps, err := Steps(store)
	if err != nil {
		return nil, err
	}
	oldest, ok := oldestKept(store, steps, ranks, max(keep, 1))
	if !ok {
		return nil, nil
	}
	var errs []error
	for _, s := range steps {
		if s >= oldest {
			break
		}
		// Whatever a crash leaves of a step is torn: a rank or a file
		// is missing. No order of removal is needed.
		if err := os.RemoveAll(stepDir(store, s)); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: prune step %d: %w", s, err))
			continue
		}
		removed = append(removed, s)
	}
	return removed, errors.Join(errs...)
}

// oldestKept returns the oldest of the keep newest complete steps; ok is
// false when no step is complete.
func oldestKept(store string, steps []int64, ranks, keep int) (oldest int64, ok bool) {
	for _, s := range slices.Backward(steps) {
		if keep == 0 {
			break
		}
		if complete, _ := Complete(store, s, ranks); complete {
			oldest, ok = s, true
			keep--
		}
	}
	return oldest, ok
}
