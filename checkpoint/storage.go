package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"github.com/weirflow/weir/internal/fsx"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrExists is returned by Storage.Put when the object already exists.
var ErrExists = errors.New("already exists")

// ErrNotFound is returned by Storage.Get for a missing object.
var ErrNotFound = errors.New("not found")

// Storage holds a job's checkpoint metadata (manifests, requests) as small
// named objects that are created once and never overwritten. Names use
// forward slashes. A local folder implements it here; object storage
// (conditional writes: If-None-Match) fits behind the same interface.
type Storage interface {
	// Put creates the object atomically and durably: readers see all of
	// data or nothing. It fails with ErrExists if the object exists, which
	// is what fences a second writer.
	Put(ctx context.Context, name string, data []byte) error
	// Get reads an object, or fails with ErrNotFound.
	Get(ctx context.Context, name string) ([]byte, error)
	// List returns the names under prefix (a folder, ending in "/"), sorted;
	// names starting with "." are not listed.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes an object; a missing one is not an error.
	Delete(ctx context.Context, name string) error
}

// LocalStorage is Storage on a local folder. Put writes a temporary file,
// syncs it, links it to its name (which fails if the name exists: no
// overwrite, ever) and syncs the folder.
type LocalStorage struct {
	dir string
}

// NewLocalStorage returns storage over dir, creating it if needed.
func NewLocalStorage(dir string) (*LocalStorage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint storage: %w", err)
	}
	return &LocalStorage{dir: dir}, nil
}

func (s *LocalStorage) path(name string) (string, error) {
	if name == "" || strings.Contains(name, "..") || filepath.IsAbs(name) {
		return "", fmt.Errorf("checkpoint storage: bad object name %q", name)
	}
	return filepath.Join(s.dir, filepath.FromSlash(name)), nil
}

// Put implements Storage.
func (s *LocalStorage) Put(_ context.Context, name string, data []byte) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	created, err := fsx.CreateOnce(p, data)
	if err != nil {
		return err
	}
	if !created {
		return fmt.Errorf("%s: %w", p, ErrExists)
	}
	return nil
}

// Get implements Storage.
func (s *LocalStorage) Get(_ context.Context, name string) ([]byte, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, ErrNotFound)
	}
	return b, err
}

// List implements Storage. Temporary files of unfinished Puts are not
// listed.
func (s *LocalStorage) List(_ context.Context, prefix string) ([]string, error) {
	p, err := s.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		out = append(out, strings.TrimSuffix(prefix, "/")+"/"+e.Name())
	}
	slices.Sort(out)
	return out, nil
}

// Delete implements Storage.
func (s *LocalStorage) Delete(_ context.Context, name string) error {
	p, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeTemps deletes temporary files that Puts interrupted by a crash left
// in folder.
func (s *LocalStorage) removeTemps(prefix string) {
	p, err := s.path(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return
	}
	entries, _ := os.ReadDir(p)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".tmp-") {
			_ = os.Remove(filepath.Join(p, e.Name()))
		}
	}
}
