//go:build unix

package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// lockFolder takes an exclusive lock on dir/LOCK, held until release. The
// kernel drops it when the process dies, also on SIGKILL, so a crashed
// job never leaves the folder locked.
func lockFolder(dir string) (release func(), err error) {
	path := dir + "/LOCK"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by another running job (%s)", ErrFolderInUse, dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// folderLocked reports whether a running job holds dir's lock.
func folderLocked(dir string) bool {
	f, err := os.OpenFile(dir+"/LOCK", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
