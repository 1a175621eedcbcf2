package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirflow/weir/arrowflow"
	"github.com/weirflow/weir/state"
)

// Resumed is what Folder.Resume found and did: the checkpoint to restore
// (nil on a fresh start), where its state is, and the first epoch of the
// new run.
type Resumed struct {
	// Restore is the checkpoint the job resumes from; nil for a fresh
	// start.
	Restore *arrowflow.Checkpoint
	// RestoreStore holds Restore's state: the folder's own store, or a
	// savepoint's.
	RestoreStore state.Store
	// FromSavepoint is the savepoint folder restored from, if any.
	FromSavepoint string
	// FirstEpoch is above every epoch this job ever recorded in the
	// folder or committed to a sink: epoch numbers never go backwards.
	FirstEpoch uint64
	// Skipped lists corrupt manifests passed over (newest first).
	Skipped []error
	// Recomputed lists epochs whose pre-committed output a sink found
	// aborted outside the job (a Kafka transaction that timed out while
	// the job was down): the job restores from the checkpoint before each
	// and produces that output again in new epochs.
	Recomputed []uint64
}

// restoredEpoch is the epoch of the restore point, 0 on a fresh start.
func (r *Resumed) restoredEpoch() uint64 {
	if r.Restore == nil {
		return 0
	}
	return r.Restore.Epoch
}

// Options returns base with the checkpoint settings of the resumed run:
// state store, recorder, savepoint writer, restore point and first epoch.
func (r *Resumed) Options(f *Folder, base arrowflow.Options) arrowflow.Options {
	base.StateStore = f.store
	base.Recorder = f
	base.Savepoints = f
	base.Restore = r.Restore
	base.RestoreStore = r.RestoreStore
	base.FirstEpoch = r.FirstEpoch
	return base
}

// Resume prepares graph g to start on this folder, as DESIGN.md's
// recovery step describes:
//
//   - the restore point is the savepoint folder fromSavepoint when given,
//     else the newest intact manifest (corrupt newer ones are reported in
//     Skipped and logged);
//   - every arrowflow.OwnedSink's output must belong to this folder (or
//     to nobody yet), else Resume refuses, unless the job starts from a
//     savepoint of the owner's lineage or Options.TakeOverOutputs; then
//     the folder claims it, fencing any previous owner;
//   - the restore point's epoch is committed again on every sink (commits
//     are idempotent: it may have been recorded but not committed when
//     the previous run stopped), sinks whose pre-commits can expire first.
//     A savepoint's epoch was committed before the savepoint was stored,
//     so it is not;
//   - when a sink finds the restore point's output aborted outside the
//     job (arrowflow.ErrEpochAborted) before any sink made that epoch
//     visible, the job restores from the checkpoint before it instead and
//     recomputes the epoch (DESIGN.md, step 8);
//   - a restore point below an epoch a sink has committed (newer
//     manifests corrupt or deleted, or none left) is refused, naming the
//     sink and the epochs, unless Options.AllowOutputRewind; a savepoint
//     may rewind;
//   - every RecoverableSink discards what earlier runs pre-committed and
//     never committed, and reports its last committed epoch;
//   - state files no intact manifest refers to are deleted (snapshots of
//     epochs that never completed);
//   - the first epoch of the new run is above every epoch recorded here or
//     committed by a sink.
//
// It must run before the job starts, while this process holds the folder.
func (f *Folder) Resume(ctx context.Context, g *arrowflow.Graph, fromSavepoint string) (*Resumed, error) {
	r := &Resumed{RestoreStore: f.store}
	var err error
	if fromSavepoint != "" {
		r.Restore, r.RestoreStore, err = ReadSavepoint(fromSavepoint)
		if err != nil {
			return nil, err
		}
		r.FromSavepoint = fromSavepoint
	} else {
		r.Restore, r.Skipped, err = f.Latest(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range r.Skipped {
			f.logger.Warn("skipping a corrupt checkpoint manifest; restoring an older one", "err", e)
		}
	}
	job := g.Name()
	if cp := r.Restore; cp != nil && cp.Job != job {
		return nil, fmt.Errorf("checkpoint of epoch %d belongs to job %q, not %q", cp.Epoch, cp.Job, job)
	}
	if err := f.checkShape(g, r); err != nil {
		return nil, err
	}
	if err := f.setLineage(ctx, r); err != nil {
		return nil, err
	}
	restored := r.restoredEpoch()
	epochs, err := f.manifestEpochs(ctx)
	if err != nil {
		return nil, err
	}
	high := restored
	if len(epochs) > 0 {
		high = max(high, epochs[len(epochs)-1])
	}
	// Before anything touches an output: whose is it?
	others, err := f.claimOutputs(ctx, g, r)
	if err != nil {
		return nil, err
	}
	if r.Restore != nil && fromSavepoint == "" {
		if err := f.commitRestored(ctx, g, r); err != nil {
			return nil, err
		}
		// An aborted epoch moved the restore point back (nil: the start).
		restored = r.restoredEpoch()
	}
	var rewound []string
	for _, n := range arrowflow.CommitOrder(g) {
		rs, ok := n.Sink().(arrowflow.RecoverableSink)
		if !ok {
			continue
		}
		last, err := rs.LastCommittedEpoch(ctx, job)
		if err != nil {
			return nil, fmt.Errorf("sink %q: last committed epoch: %w", n.Name(), err)
		}
		high = max(high, last)
		// A savepoint rewinds on purpose; an output taken over from
		// another folder holds that folder's epochs, not this one's.
		if last > restored && fromSavepoint == "" && !others[n.Name()] {
			rewound = append(rewound, fmt.Sprintf("sink %q has committed epoch %d", n.Name(), last))
		}
	}
	if len(rewound) > 0 {
		if err := f.rewindRefused(r, restored, rewound); err != nil {
			return nil, err
		}
	}
	for _, n := range arrowflow.CommitOrder(g) {
		if rs, ok := n.Sink().(arrowflow.RecoverableSink); ok {
			if err := rs.Recover(ctx, job, restored); err != nil {
				return nil, fmt.Errorf("sink %q: discard uncommitted output of earlier runs: %w", n.Name(), err)
			}
		}
	}
	r.FirstEpoch = high + 1
	refs, err := f.referenced(ctx, epochs)
	if err != nil {
		return nil, err
	}
	if err := f.removeState(refs, func(uint64) bool { return true }); err != nil {
		f.logger.Warn("removing state of unfinished epochs failed", "err", err)
	}
	return r, nil
}

// rewindRefused is the answer to a restore point below what sinks have
// committed (what lists them): an error naming them, or with
// AllowOutputRewind a warning and nil.
func (f *Folder) rewindRefused(r *Resumed, restored uint64, what []string) error {
	point := fmt.Sprintf("the newest intact checkpoint in it is of epoch %d", restored)
	if r.Restore == nil {
		point = "it holds no intact checkpoint (a fresh start would read all input again)"
	}
	damaged := ""
	if len(r.Skipped) > 0 {
		var names []string
		for _, e := range r.Skipped {
			names = append(names, e.Error())
		}
		damaged = "; manifests passed over: " + strings.Join(names, "; ")
	}
	if f.allowRewind {
		f.logger.Warn("resuming below epochs the outputs have committed (--allow-output-rewind): their output is written again",
			"dir", f.dir, "restore", restored, "outputs", strings.Join(what, ", "))
		return nil
	}
	return fmt.Errorf("checkpoint folder %s: %s, but %s%s.\n"+
		"Resuming from it would write the output of the epochs after %d again (duplicates), so the job does not start. "+
		"Put the damaged or missing manifest back from a backup, start from a savepoint (--from-savepoint), "+
		"or resume anyway with --allow-output-rewind, accepting the duplicates",
		f.dir, point, strings.Join(what, " and "), damaged, restored)
}

// setLineage sets the folder's lineage: that of its newest checkpoint, else
// (a folder's first start from a savepoint) the savepoint's, else its own
// ID.
func (f *Folder) setLineage(ctx context.Context, r *Resumed) error {
	own := r.Restore
	if r.FromSavepoint != "" {
		var err error
		if own, _, err = f.Latest(ctx); err != nil {
			return err
		}
		if own == nil {
			own = r.Restore
		}
	}
	if l := lineageOf(own); l != "" {
		f.lineage = l
	}
	return nil
}

// lineageOf is the lineage a checkpoint was recorded in ("" before weir
// recorded owners).
func lineageOf(cp *arrowflow.Checkpoint) string {
	if cp == nil {
		return ""
	}
	if cp.Lineage != "" {
		return cp.Lineage
	}
	return cp.Owner
}

// claimOutputs checks that every OwnedSink's output belongs to this folder
// (or to nobody yet) and claims it. An output of another folder is
// refused, unless the job starts from a savepoint of that folder's lineage
// or the folder takes outputs over; it returns the names of the sinks taken
// over from another folder.
func (f *Folder) claimOutputs(ctx context.Context, g *arrowflow.Graph, r *Resumed) (map[string]bool, error) {
	job := g.Name()
	me := f.owner()
	type claim struct {
		name string
		sink arrowflow.OwnedSink
	}
	var claims []claim
	var conflicts []string
	others := map[string]bool{}
	spLineage := ""
	if r.FromSavepoint != "" {
		spLineage = lineageOf(r.Restore)
	}
	for _, n := range arrowflow.CommitOrder(g) {
		owned, ok := n.Sink().(arrowflow.OwnedSink)
		if !ok {
			continue
		}
		prev, err := owned.Owner(ctx, job)
		if err != nil {
			return nil, fmt.Errorf("sink %q: read the output's owner: %w", n.Name(), err)
		}
		switch {
		case prev.ID == "" || prev.ID == me.ID:
		case spLineage != "" && (prev.Lineage == spLineage || prev.ID == spLineage):
			f.logger.Info("taking the output over from the folder the savepoint descends from", "sink", n.Name(), "previous owner", prev.String())
			others[n.Name()] = true
		case f.takeOver:
			f.logger.Warn("taking the output over from another checkpoint folder (--take-over-output): that job is fenced", "sink", n.Name(), "previous owner", prev.String())
			others[n.Name()] = true
		default:
			since := ""
			if !prev.Since.IsZero() {
				since = " since " + prev.Since.Format(time.RFC3339)
			}
			conflicts = append(conflicts, fmt.Sprintf("sink %q: owned by %s%s", n.Name(), prev, since))
		}
		claims = append(claims, claim{n.Name(), owned})
	}
	if len(conflicts) > 0 {
		return nil, fmt.Errorf("job %q: its outputs belong to another job instance:\n  %s\n"+
			"this is %s. Two checkpoint folders writing one output would recover and delete each other's epochs, so the job does not start. "+
			"Give this job an output of its own, run it with the owner's --checkpoint-dir, start it from a savepoint of the owner (--from-savepoint), "+
			"or take the outputs over deliberately with --take-over-output (the owner is fenced: its later commits fail; "+
			"this job continues from its own checkpoint, or from its sources' start positions)",
			job, strings.Join(conflicts, "\n  "), me)
	}
	for _, c := range claims {
		if err := c.sink.Claim(ctx, job, me); err != nil {
			return nil, fmt.Errorf("sink %q: claim the output: %w", c.name, err)
		}
	}
	return others, nil
}

// WriteSavepoint stores cp as a self-contained savepoint folder under
// savepoints/ (its manifest and a copy of every state file it refers to,
// hard-linked when possible) and returns the folder's path. Retention never
// touches it; it can be moved, and a job can start from it with another
// parallelism.
func (f *Folder) WriteSavepoint(ctx context.Context, cp *arrowflow.Checkpoint) (string, error) {
	dir, err := filepath.Abs(filepath.Join(f.dir, "savepoints", fmt.Sprintf("savepoint-%020d-%s", cp.Epoch, time.Now().UTC().Format("20060102T150405"))))
	if err != nil {
		return "", err
	}
	for _, id := range stateIDs(cp) {
		src := filepath.Join(f.dir, "state", filepath.FromSlash(id))
		dst := filepath.Join(dir, "state", filepath.FromSlash(id))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.Link(src, dst); err != nil {
			if err := copyFile(src, dst); err != nil {
				return "", fmt.Errorf("savepoint: copy state %s: %w", id, err)
			}
		}
	}
	cp.Owner, cp.Lineage = f.id, f.lineage
	data, err := encodeManifest(cp)
	if err != nil {
		return "", err
	}
	st, err := NewLocalStorage(dir)
	if err != nil {
		return "", err
	}
	// The manifest goes last: a savepoint folder without one is incomplete.
	if err := st.Put(ctx, "manifest.json", data); err != nil {
		return "", err
	}
	return dir, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadSavepoint opens a savepoint folder: its checkpoint and a store over
// its state files.
func ReadSavepoint(dir string) (*arrowflow.Checkpoint, state.Store, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("savepoint %s: %w (a savepoint folder holds manifest.json and state/)", dir, err)
	}
	cp, err := decodeManifest(filepath.Join(dir, "manifest.json"), data)
	if err != nil {
		return nil, nil, err
	}
	store, err := state.NewFileStore(filepath.Join(dir, "state"))
	if err != nil {
		return nil, nil, err
	}
	return cp, store, nil
}

// savepointRequest is a request file written by RequestSavepoint.
type savepointRequest struct {
	Stop bool `json:"stop"`
}

// SavepointResult is the answer to a savepoint request.
type SavepointResult struct {
	Location string `json:"location,omitempty"`
	Epoch    uint64 `json:"epoch,omitempty"`
	Error    string `json:"error,omitempty"`
}

// RequestSavepoint asks the job running on the checkpoint folder dir for a
// savepoint (and to stop after it, with stop), and waits for the answer.
// It fails at once when no job holds the folder.
func RequestSavepoint(ctx context.Context, dir string, stop bool) (SavepointResult, error) {
	if !folderLocked(dir) {
		return SavepointResult{}, fmt.Errorf("no running job holds the checkpoint folder %s", dir)
	}
	st, err := NewLocalStorage(dir)
	if err != nil {
		return SavepointResult{}, err
	}
	id := fmt.Sprintf("%d-%d", time.Now().UnixNano(), os.Getpid())
	req, _ := json.Marshal(savepointRequest{Stop: stop})
	if err := st.Put(ctx, "requests/"+id+".request", req); err != nil {
		return SavepointResult{}, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		data, err := st.Get(ctx, "requests/"+id+".result")
		if err == nil {
			var res SavepointResult
			if err := json.Unmarshal(data, &res); err != nil {
				return res, err
			}
			_ = st.Delete(ctx, "requests/"+id+".result")
			if res.Error != "" {
				return res, errors.New(res.Error)
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return SavepointResult{}, fmt.Errorf("waiting for the savepoint: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// ServeSavepointRequests answers RequestSavepoint calls for job until ctx
// ends: it polls the folder's requests/ every 100 ms. Run it next to
// job.Run.
func (f *Folder) ServeSavepointRequests(ctx context.Context, job *arrowflow.Job) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		names, err := f.meta.List(ctx, "requests/")
		if err != nil {
			continue
		}
		for _, name := range names {
			if !strings.HasSuffix(name, ".request") {
				continue
			}
			data, err := f.meta.Get(ctx, name)
			_ = f.meta.Delete(ctx, name)
			var req savepointRequest
			if err == nil {
				err = json.Unmarshal(data, &req)
			}
			var res SavepointResult
			if err == nil {
				var sp arrowflow.Savepoint
				sp, err = job.TriggerSavepoint(ctx, req.Stop)
				if err == nil {
					res.Location, res.Epoch = sp.Location, sp.Checkpoint.Epoch
				}
			}
			if err != nil {
				res.Error = err.Error()
			}
			out, _ := json.Marshal(res)
			_ = f.meta.Put(context.WithoutCancel(ctx), strings.TrimSuffix(name, ".request")+".result", out)
		}
	}
}

// commitRestored commits r.Restore's epoch again on every sink. When a
// sink reports that epoch aborted outside the job, and no sink has made it
// visible, it moves r.Restore back to the checkpoint before (nil: the
// job's start) and tries again from there.
func (f *Folder) commitRestored(ctx context.Context, g *arrowflow.Graph, r *Resumed) error {
	job := g.Name()
	for r.Restore != nil {
		cp := r.Restore
		committed, err := commitEpoch(ctx, g, cp)
		if err == nil {
			return nil
		}
		var ae *arrowflow.AbortedEpochError
		if !errors.As(err, &ae) {
			return err
		}
		if err := recomputable(ctx, g, cp, committed, err); err != nil {
			return err
		}
		prev, skipped, lerr := f.latestBelow(ctx, cp.Epoch)
		if lerr != nil {
			return lerr
		}
		for _, e := range skipped {
			f.logger.Warn("skipping a corrupt checkpoint manifest; restoring an older one", "err", e)
		}
		if prev == nil {
			f.logger.Warn("the first epoch's output was aborted outside the job; the job starts again from its sources' configured start positions",
				"job", job, "epoch", cp.Epoch, "err", err)
		} else {
			f.logger.Warn("an epoch's output was aborted outside the job; restoring the checkpoint before it to compute the epoch again",
				"job", job, "epoch", cp.Epoch, "restore", prev.Epoch, "err", err)
		}
		r.Recomputed = append(r.Recomputed, cp.Epoch)
		r.Restore = prev
	}
	return nil
}

// commitEpoch commits cp's epoch on every sink, in commit order, and
// returns the sinks it committed (with output) before an error.
func commitEpoch(ctx context.Context, g *arrowflow.Graph, cp *arrowflow.Checkpoint) (committed []string, err error) {
	for _, n := range arrowflow.CommitOrder(g) {
		sc := cp.Sinks[n.Name()]
		if sc == nil {
			continue
		}
		if err := arrowflow.CommitSink(ctx, n, cp, sc.Payloads); err != nil {
			return committed, fmt.Errorf("sink %q: commit epoch %d again on recovery: %w", n.Name(), cp.Epoch, err)
		}
		for _, p := range sc.Payloads {
			if p != nil {
				committed = append(committed, n.Name())
				break
			}
		}
	}
	return committed, nil
}

// recomputable checks that cp's epoch, found aborted by a sink (abortErr),
// can be computed again from the checkpoint before it without duplicating
// output: no part of it is visible in any sink. committed names the sinks
// that just committed it (with output) before the aborted one.
func recomputable(ctx context.Context, g *arrowflow.Graph, cp *arrowflow.Checkpoint, committed []string, abortErr error) error {
	var ae *arrowflow.AbortedEpochError
	errors.As(abortErr, &ae)
	fail := func(why string) error {
		return fmt.Errorf("%w; the epoch cannot be computed again without duplicating output because %s: "+
			"raise the sink's transaction timeout above the longest expected downtime", abortErr, why)
	}
	if len(ae.Committed) > 0 {
		return fail(fmt.Sprintf("subtasks %v of that sink had committed it", ae.Committed))
	}
	if len(committed) > 0 {
		return fail(fmt.Sprintf("sinks %q had committed it", committed))
	}
	for _, n := range arrowflow.CommitOrder(g) {
		rs, ok := n.Sink().(arrowflow.RecoverableSink)
		if !ok || cp.Sinks[n.Name()] == nil {
			continue
		}
		last, err := rs.LastCommittedEpoch(ctx, g.Name())
		if err != nil {
			return fmt.Errorf("sink %q: last committed epoch: %w", n.Name(), err)
		}
		if last >= cp.Epoch {
			return fail(fmt.Sprintf("sink %q committed epoch %d already", n.Name(), last))
		}
	}
	return nil
}

// checkShape compares the shape of the checkpoint to restore with the
// job's: a checkpoint of the folder must have the job's shape (unless the
// folder allows changes); a savepoint may have another, and what it drops
// is logged.
func (f *Folder) checkShape(g *arrowflow.Graph, r *Resumed) error {
	cp := r.Restore
	if cp == nil || cp.Fingerprint == "" {
		return nil // nothing to restore, or written before shapes were recorded
	}
	shape := g.Shape()
	if arrowflow.ShapeFingerprint(shape) == cp.Fingerprint {
		return nil
	}
	diff := arrowflow.ShapeDiff(cp.Shape, shape)
	if r.FromSavepoint != "" || f.allowChanged {
		f.logger.Warn("restoring a checkpoint of a changed job graph: state is matched by node name",
			"epoch", cp.Epoch, "changes", strings.Join(diff, "; "))
		return nil
	}
	const most = 12
	more := ""
	if len(diff) > most {
		more = fmt.Sprintf("\n  ... and %d more", len(diff)-most)
		diff = diff[:most]
	}
	return fmt.Errorf("checkpoint folder %s holds epoch %d of job %q with another graph (fingerprint %s; this job's is %s), "+
		"nodes only in the checkpoint marked -, only in this job +:\n  %s%s\n"+
		"it is another job of the same name, or this job edited: give it a checkpoint folder of its own, "+
		"or resume deliberately with --allow-changed-job (state is matched by node name) or from a savepoint",
		f.dir, cp.Epoch, cp.Job, cp.Fingerprint, arrowflow.ShapeFingerprint(shape), strings.Join(diff, "\n  "), more)
}
