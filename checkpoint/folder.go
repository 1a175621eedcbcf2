// Package checkpoint keeps a job's checkpoints durable in a folder:
// epoch manifests written atomically and never overwritten (the commit
// point of each epoch, and the fence against a second instance of the
// job), operator state snapshots, retention of old checkpoints, savepoints
// in portable folders, and recovery at start (see Folder.Resume).
//
// Layout of a checkpoint folder:
//
//	LOCK                          held by the running job (flock)
//	folder-id                     the folder's identity, the owner of its outputs
//	manifests/<epoch>.json        one per recorded epoch, 20-digit epoch
//	state/<job>/<epoch>/...       operator snapshots (state.FileStore)
//	savepoints/<name>/            manifest.json + state/, self-contained
//	requests/                     savepoint requests from `weir savepoint`
package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/internal/failpoint"
	"github.com/weirflow/weir/state"
)

// ErrFolderInUse is returned by Open when another running job holds the
// checkpoint folder.
var ErrFolderInUse = errors.New("checkpoint folder in use")

// ErrCorruptManifest marks a manifest whose checksum or encoding is wrong.
var ErrCorruptManifest = errors.New("corrupt checkpoint manifest")

// DefaultRetain is the number of checkpoints kept by default.
const DefaultRetain = 3

// Options configure a Folder.
type Options struct {
	// Retain is how many of the newest checkpoints to keep (default
	// DefaultRetain, at least 2: recovery may need the one before the
	// newest to recompute an epoch whose sink commit was lost).
	Retain int
	// Logger receives warnings (corrupt manifests, failed cleanups).
	Logger *slog.Logger
	// AllowChangedJob lets Resume restore the folder's latest checkpoint
	// into a job graph of another shape (arrowflow.Graph.Shape): state is
	// matched by node name, nodes new to the job start empty, and the state
	// of nodes it no longer has is dropped. Without it Resume refuses, so
	// that an edited job or another job of the same name does not silently
	// carry on from this folder's positions. Savepoints, the way to upgrade
	// a job, are restored into any shape.
	AllowChangedJob bool
	// AllowOutputRewind lets Resume restore a checkpoint older than an
	// epoch a sink has already committed (the newer manifests are corrupt
	// or deleted), or start fresh over output the job has committed. The
	// epochs in between are then written again: duplicates. Without it
	// Resume refuses and names the sink and the epochs.
	AllowOutputRewind bool
	// TakeOverOutputs lets Resume claim outputs that another checkpoint
	// folder owns (a job this one replaces): that job is fenced, its
	// later commits fail. Without it Resume refuses such an output. A job
	// started from a savepoint of the owner's lineage takes its outputs
	// over without it.
	TakeOverOutputs bool
}

// Folder is an open checkpoint folder, locked for one running job.
type Folder struct {
	dir          string
	meta         *LocalStorage
	store        *state.FileStore
	retain       int
	logger       *slog.Logger
	allowChanged bool
	allowRewind  bool
	takeOver     bool
	// id is the folder's identity (folder-id); lineage is the ID of the
	// folder it descends from through savepoints, set by Resume.
	id, lineage string
	release     func()
	// ids caches the state file IDs each manifest refers to, by epoch, so
	// that retention does not read every kept manifest at every epoch.
	ids map[uint64][]string
}

// Open locks dir for this process (failing with ErrFolderInUse, naming the
// holder, when another job runs on it) and prepares its layout.
func Open(dir string, opts Options) (*Folder, error) {
	if dir == "" {
		return nil, errors.New("checkpoint folder: no path given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint folder: %w", err)
	}
	release, err := lockFolder(dir)
	if err != nil {
		return nil, err
	}
	f := &Folder{dir: dir, retain: opts.Retain, logger: opts.Logger, allowChanged: opts.AllowChangedJob,
		allowRewind: opts.AllowOutputRewind, takeOver: opts.TakeOverOutputs, release: release, ids: map[uint64][]string{}}
	if f.retain == 0 {
		f.retain = DefaultRetain
	}
	if f.retain < 2 {
		release()
		return nil, fmt.Errorf("checkpoint folder: retain %d: at least 2 checkpoints must be kept", opts.Retain)
	}
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	if f.meta, err = NewLocalStorage(dir); err != nil {
		release()
		return nil, err
	}
	f.meta.removeTemps("manifests/")
	if f.id, err = f.identity(); err != nil {
		release()
		return nil, err
	}
	f.lineage = f.id
	if f.store, err = state.NewFileStore(filepath.Join(dir, "state")); err != nil {
		release()
		return nil, err
	}
	return f, nil
}

// Close releases the folder's lock.
func (f *Folder) Close() error {
	if f.release != nil {
		f.release()
		f.release = nil
	}
	return nil
}

// folderIDFile holds a folder's identity.
const folderIDFile = "folder-id"

// identity returns the folder's ID, made (random) and stored at first use.
func (f *Folder) identity() (string, error) {
	data, err := f.meta.Get(context.Background(), folderIDFile)
	if errors.Is(err, ErrNotFound) {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		if err := f.meta.Put(context.Background(), folderIDFile, []byte(hex.EncodeToString(b[:])+"\n")); err != nil && !errors.Is(err, ErrExists) {
			return "", fmt.Errorf("checkpoint folder %s: write its identity: %w", f.dir, err)
		}
		data, err = f.meta.Get(context.Background(), folderIDFile)
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint folder %s: read its identity: %w", f.dir, err)
	}
	id := strings.TrimSpace(string(data))
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", fmt.Errorf("checkpoint folder %s: %s is damaged (%q): it names the owner of the job's outputs; restore it from a backup, or remove it and start with --take-over-output", f.dir, filepath.Join(f.dir, folderIDFile), truncate(id, 40))
	}
	return id, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// ID is the folder's identity: the owner its job records in its outputs.
func (f *Folder) ID() string { return f.id }

// owner is the Owner the folder's job claims its outputs as.
func (f *Folder) owner() arrowflow.Owner {
	host, _ := os.Hostname()
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		abs = f.dir
	}
	return arrowflow.Owner{ID: f.id, Lineage: f.lineage, Folder: abs, Host: host, Since: time.Now().UTC().Truncate(time.Second)}
}

// Dir is the folder's path.
func (f *Folder) Dir() string { return f.dir }

// StateStore is where the job's operators write their snapshots.
func (f *Folder) StateStore() state.Store { return f.store }

// envelope is a manifest file: the checkpoint and its checksum.
type envelope struct {
	Format     string          `json:"format"`
	CRC32C     string          `json:"crc32c"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

const manifestFormat = "weir-checkpoint/1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeManifest(cp *arrowflow.Checkpoint) ([]byte, error) {
	body, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Format: manifestFormat, CRC32C: fmt.Sprintf("%08x", crc32.Checksum(body, castagnoli)), Checkpoint: body})
}

func decodeManifest(name string, data []byte) (*arrowflow.Checkpoint, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptManifest, name, err)
	}
	if env.Format != manifestFormat {
		return nil, fmt.Errorf("%w: %s: format %q, want %q", ErrCorruptManifest, name, env.Format, manifestFormat)
	}
	if got := fmt.Sprintf("%08x", crc32.Checksum(env.Checkpoint, castagnoli)); got != env.CRC32C {
		return nil, fmt.Errorf("%w: %s: checksum %s, recorded %s", ErrCorruptManifest, name, got, env.CRC32C)
	}
	cp := &arrowflow.Checkpoint{}
	if err := json.Unmarshal(env.Checkpoint, cp); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptManifest, name, err)
	}
	return cp, nil
}

func manifestName(epoch uint64) string { return fmt.Sprintf("manifests/%020d.json", epoch) }

// manifestEpochs lists the epochs that have a manifest file, oldest first,
// whether or not the file is intact.
func (f *Folder) manifestEpochs(ctx context.Context) ([]uint64, error) {
	names, err := f.meta.List(ctx, "manifests/")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "manifests/"), ".json")
		e, err := strconv.ParseUint(base, 10, 64)
		if err != nil || len(base) != 20 {
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// RecordEpoch writes the epoch's manifest: the epoch's commit point. The
// write never replaces an existing manifest, so a second instance of the
// job that got past the lock (a folder shared over a network file system)
// fails here before it commits anything. Older checkpoints beyond the
// retention count are then removed.
func (f *Folder) RecordEpoch(ctx context.Context, cp *arrowflow.Checkpoint) error {
	cp.Owner, cp.Lineage = f.id, f.lineage
	data, err := encodeManifest(cp)
	if err != nil {
		return err
	}
	if err := f.meta.Put(ctx, manifestName(cp.Epoch), data); err != nil {
		if errors.Is(err, ErrExists) {
			return fmt.Errorf("manifest of epoch %d already exists in %s: another instance of job %q writes to this checkpoint folder; this one stops (fenced): %w", cp.Epoch, f.dir, cp.Job, err)
		}
		return fmt.Errorf("write manifest of epoch %d: %w", cp.Epoch, err)
	}
	failpoint.Inject(failpoint.AfterManifest)
	if hasSinkOutput(cp) {
		failpoint.Inject(failpoint.AfterOutputManifest)
	}
	f.ids[cp.Epoch] = stateIDs(cp)
	if err := f.applyRetention(ctx); err != nil {
		f.logger.Warn("checkpoint retention failed", "dir", f.dir, "err", err)
	}
	return nil
}

// Latest returns the newest intact checkpoint (nil when there is none).
// Corrupt newer manifests are skipped and returned as errors in skipped,
// so that the caller can report them.
func (f *Folder) Latest(ctx context.Context) (cp *arrowflow.Checkpoint, skipped []error, err error) {
	return f.latestBelow(ctx, math.MaxUint64)
}

// latestBelow returns the newest intact checkpoint of an epoch below
// limit.
func (f *Folder) latestBelow(ctx context.Context, limit uint64) (cp *arrowflow.Checkpoint, skipped []error, err error) {
	epochs, err := f.manifestEpochs(ctx)
	if err != nil {
		return nil, nil, err
	}
	for i := len(epochs) - 1; i >= 0; i-- {
		if epochs[i] >= limit {
			continue
		}
		name := manifestName(epochs[i])
		data, err := f.meta.Get(ctx, name)
		if err != nil {
			return nil, skipped, err
		}
		cp, err := decodeManifest(filepath.Join(f.dir, name), data)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		return cp, skipped, nil
	}
	return nil, skipped, nil
}

// referenced returns the state file IDs that the intact manifests among
// epochs refer to.
func (f *Folder) referenced(ctx context.Context, epochs []uint64) (map[string]bool, error) {
	refs := map[string]bool{}
	for _, e := range epochs {
		ids, ok := f.ids[e]
		if !ok {
			data, err := f.meta.Get(ctx, manifestName(e))
			if err != nil {
				return nil, err
			}
			cp, err := decodeManifest(manifestName(e), data)
			if err != nil {
				continue // a corrupt manifest cannot be restored from anyway
			}
			ids = stateIDs(cp)
			f.ids[e] = ids
		}
		for _, id := range ids {
			refs[id] = true
		}
	}
	return refs, nil
}

func stateIDs(cp *arrowflow.Checkpoint) []string {
	var ids []string
	for _, oc := range cp.Operators {
		for _, sc := range oc.Subtasks {
			if !sc.State.IsZero() {
				ids = append(ids, sc.State.ID)
			}
		}
	}
	return ids
}

// applyRetention deletes manifests beyond the newest Retain, then the
// state files of epochs older than the oldest kept manifest that no kept
// manifest refers to (a subtask that finished early keeps pointing at an
// old epoch's snapshot). Newer state files may belong to epochs in flight
// and are left alone.
func (f *Folder) applyRetention(ctx context.Context) error {
	epochs, err := f.manifestEpochs(ctx)
	if err != nil || len(epochs) <= f.retain {
		return err
	}
	drop, keep := epochs[:len(epochs)-f.retain], epochs[len(epochs)-f.retain:]
	for _, e := range drop {
		if err := f.meta.Delete(ctx, manifestName(e)); err != nil {
			return err
		}
		delete(f.ids, e)
	}
	refs, err := f.referenced(ctx, keep)
	if err != nil {
		return err
	}
	return f.removeState(refs, func(epoch uint64) bool { return epoch < keep[0] })
}

// removeState deletes the state files of the epochs chosen by which that
// refs does not name, and folders left empty.
func (f *Folder) removeState(refs map[string]bool, which func(epoch uint64) bool) error {
	root := filepath.Join(f.dir, "state")
	jobs, err := os.ReadDir(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, job := range jobs {
		if !job.IsDir() {
			continue
		}
		epochDirs, err := os.ReadDir(filepath.Join(root, job.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ed := range epochDirs {
			epoch, err := strconv.ParseUint(ed.Name(), 10, 64)
			if !ed.IsDir() || err != nil || !which(epoch) {
				continue
			}
			dir := filepath.Join(root, job.Name(), ed.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			left := 0
			for _, file := range files {
				id := job.Name() + "/" + ed.Name() + "/" + file.Name()
				if refs[id] {
					left++
					continue
				}
				if err := os.RemoveAll(filepath.Join(dir, file.Name())); err != nil {
					errs = append(errs, err)
				}
			}
			if left == 0 {
				_ = os.Remove(dir)
			}
		}
	}
	return errors.Join(errs...)
}

// hasSinkOutput reports whether some sink subtask pre-committed output in
// cp's epoch.
func hasSinkOutput(cp *arrowflow.Checkpoint) bool {
	for _, sc := range cp.Sinks {
		for _, p := range sc.Payloads {
			if p != nil {
				return true
			}
		}
	}
	return false
}
