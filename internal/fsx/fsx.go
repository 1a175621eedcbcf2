// Package fsx holds the few file-system steps that weir's durable
// writers (state snapshots, checkpoint manifests, sink commit logs) share:
// syncing a folder and creating a file atomically, once.
package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// SyncDir makes a folder's entries (files created, renamed or removed in
// it) durable.
func SyncDir(path string) error {
	if runtime.GOOS == "windows" {
		return nil // folders cannot be synced there; renames are durable
	}
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// CreateOnce writes data to path atomically and durably, unless path
// already exists: it writes a temporary file in the same folder, syncs
// it, links it to path (which fails if path exists) and syncs the folder.
// It reports whether it created path. Where the file system has no hard
// links it renames after checking the name is free; only two instances
// of one job could race there, and the checkpoint manifest fences the
// second.
func CreateOnce(path string, data []byte) (created bool, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return false, err
	}
	tmp := f.Name()
	defer func() {
		_ = os.Remove(tmp) // after a link, only the temporary name goes
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	switch err := os.Link(tmp, path); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		if _, serr := os.Lstat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return false, err
		}
	}
	return true, SyncDir(dir)
}
