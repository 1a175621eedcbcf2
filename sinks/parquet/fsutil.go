package parquet

import (
	"errors"
	"github.com/weirflow/weir/internal/fsx"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// dirCache remembers folders known to exist durably, so that each is
// created and its parent synced once per process rather than once per
// file. Writers and Commit share it.
type dirCache struct {
	mu      sync.Mutex
	durable map[string]bool
}

// mkdirAll creates path and its missing parents below root (which must
// exist), syncing each parent so that the folder survives a crash. root
// itself is not synced.
func (c *dirCache) mkdirAll(root, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.durable[path] {
		return nil
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	cur := root
	for _, part := range splitPath(rel) {
		parent := cur
		cur = filepath.Join(cur, part)
		if c.durable[cur] {
			continue
		}
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Sync also when the folder existed: whoever created it may not
		// have synced it yet.
		if err := fsx.SyncDir(parent); err != nil {
			return err
		}
		if c.durable == nil || len(c.durable) > 1<<14 {
			c.durable = make(map[string]bool) // forget now and then: syncing again is harmless
		}
		c.durable[cur] = true
	}
	return nil
}

// forget drops path and everything below it from the cache (after they
// were removed).
func (c *dirCache) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix := path + string(filepath.Separator)
	for p := range c.durable {
		if p == path || strings.HasPrefix(p, prefix) {
			delete(c.durable, p)
		}
	}
}

// splitPath splits a relative path into its elements.
func splitPath(rel string) []string {
	var parts []string
	for rel != "" && rel != "." {
		dir, file := filepath.Split(rel)
		parts = append(parts, file)
		rel = filepath.Clean(dir)
		if dir == "" {
			break
		}
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return parts
}
