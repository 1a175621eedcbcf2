package iceberg

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/weirflow/weir/arrowflow"
)

const (
	// OwnerPropertyPrefix + job is a table property naming, as JSON, the
	// checkpoint folder that owns the job's output in the table (see
	// arrowflow.Owner): another folder's job is refused at recovery, and
	// a job whose output was taken over fails at its next commit.
	OwnerPropertyPrefix = "weir.owner."
	// SummaryOwner is the owner ID of the job that committed a snapshot.
	SummaryOwner = "weir.owner"
)

var _ arrowflow.OwnedSink = (*Sink)(nil)

// ownerOf reads job's owner property of tbl (zero when none).
func ownerOf(tbl *table.Table, job string) (arrowflow.Owner, error) {
	var o arrowflow.Owner
	raw, ok := tbl.Properties()[OwnerPropertyPrefix+job]
	if !ok {
		return o, nil
	}
	if err := json.Unmarshal([]byte(raw), &o); err != nil || o.ID == "" {
		return arrowflow.Owner{}, fmt.Errorf("table property %s%s is damaged (%q): it names the checkpoint folder that owns the output; set it back, or take the output over with --take-over-output", OwnerPropertyPrefix, job, raw)
	}
	return o, nil
}

// Owner implements arrowflow.OwnedSink: the owner in the table property
// weir.owner.<job>.
func (s *Sink) Owner(ctx context.Context, job string) (arrowflow.Owner, error) {
	tbl, err := s.cat.LoadTable(ctx, s.ident)
	if err != nil {
		return arrowflow.Owner{}, s.errorf("load table: %w", err)
	}
	s.setTable(tbl)
	o, err := ownerOf(tbl, job)
	if err != nil {
		return o, s.errorf("%w", err)
	}
	return o, nil
}

// Claim implements arrowflow.OwnedSink: it sets the table property
// weir.owner.<job> in a commit of its own (retried on conflicts).
func (s *Sink) Claim(ctx context.Context, job string, owner arrowflow.Owner) error {
	data, err := json.Marshal(owner)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tbl, err := s.cat.LoadTable(ctx, s.ident)
		if err != nil {
			return s.errorf("claim the output: load table: %w", err)
		}
		tx := tbl.NewTransaction()
		err = tx.SetProperties(iceberg.Properties{OwnerPropertyPrefix + job: string(data)})
		var committed *table.Table
		if err == nil {
			committed, err = tx.Commit(ctx)
		}
		if err == nil {
			s.setTable(committed)
			break
		}
		if !isConflict(err) || attempt+1 >= s.opts.CommitRetries {
			return s.errorf("claim the output for job %q: %w", job, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff(attempt)):
		}
	}
	s.mu.Lock()
	if s.claimed == nil {
		s.claimed = map[string]string{}
	}
	s.claimed[job] = owner.ID
	s.mu.Unlock()
	return nil
}

// checkOwner fails with arrowflow.ErrFenced unless tbl names the owner
// this sink claimed job's output as (or nobody, when it claimed nothing),
// and returns that owner's ID.
func (s *Sink) checkOwner(tbl *table.Table, job string) (string, error) {
	s.mu.Lock()
	mine := s.claimed[job]
	s.mu.Unlock()
	o, err := ownerOf(tbl, job)
	if err != nil {
		return "", err
	}
	if err := arrowflow.CheckOwner(fmt.Sprintf("job %q's output in the table", job), o, mine); err != nil {
		return "", err
	}
	return mine, nil
}
